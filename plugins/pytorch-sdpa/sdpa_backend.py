"""The pytorch-sdpa backend: torch.nn.functional.scaled_dot_product_attention.

Where to start: Backend.prepare builds one Kernel per case. Variant ``sdpa``
is PyTorch's own dispatch; the others pin one SDPBackend with
torch.nn.attention.sdpa_kernel. PyTorch decides at run time whether a pinned
backend can take a case, so prepare runs the case once: a refusal becomes an
Unsupported row carrying the warnings in which PyTorch explains why.

Every SDPA variant runs attention's three modes (core.MODES). The forward
is ``prepare``'s call. The backward modes are ``prepare_op``'s, through
autograd: in mode bwd the forward's graph is built once in prepare_op, on
the host's Q, K and V made leaves that require grad, and each call is
``torch.autograd.grad`` of that output with the host's dO (the graph
retained), so only the backward is timed; in mode fwd+bwd each call runs
the forward and then the grad. SDPA's backward reads what its own forward
saved (its output and log-sum-exp): the host's O and LSE inputs of mode
bwd are loaded and hashed but not read.

SDPA allocates its own output, so there is no buffer to poison before the
checked run: the tensor it returns is what the host checks (autograd's
dQ, dK and dV likewise). The kernels
PyTorch actually ran are named in the facts of every Run (from the CUPTI
cross-check), which is how the results record what ``sdpa`` dispatched to.

Variant ``torch-rmsnorm`` is the torch baseline of the rmsnorm op:
torch.nn.functional.rms_norm, built by ``prepare_op`` too. It is timed by the
same contract as the SDPA rows: on a GPU, each call's kernel time is the
sum of CUPTI's durations of every kernel the call launches.
"""

import contextlib
import functools
import platform
import warnings

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import flashcore_worker as core

# variant name -> (SDPBackend or None for PyTorch's choice, description)
VARIANTS = {
    "sdpa": (None, "PyTorch's own dispatch (on an H100 with torch 2.11: cuDNN)"),
    "sdpa-flash": (SDPBackend.FLASH_ATTENTION, "SDPBackend.FLASH_ATTENTION (FlashAttention-2 on CUDA)"),
    "sdpa-efficient": (SDPBackend.EFFICIENT_ATTENTION, "SDPBackend.EFFICIENT_ATTENTION (memory-efficient, xFormers)"),
    "sdpa-cudnn": (SDPBackend.CUDNN_ATTENTION, "SDPBackend.CUDNN_ATTENTION (cuDNN fused attention)"),
    "sdpa-math": (SDPBackend.MATH, "SDPBackend.MATH (the unfused reference composition)"),
}

# Variants of ops other than attention: name -> (op, description).
OP_VARIANTS = {
    "torch-rmsnorm": ("rmsnorm", "torch.nn.functional.rms_norm(x, (cols,), weight, eps=1e-6)"),
}

# Messages with which PyTorch refuses a pinned backend (CUDA, then CPU).
_REFUSALS = ("No available kernel", "No viable backend")

_ALL_DTYPES = ("fp16", "bf16", "fp32")
_HALF_DTYPES = ("fp16", "bf16")
# FlashAttention-2 and cuDNN take head dims that are multiples of 8 up to 256.
_FUSED_HEAD_DIMS = tuple(range(8, 257, 8))
# Every SDPA variant runs the forward, the backward, and the two in one call.
_MODES = core.MODES


class Backend:
    def __init__(self, device):
        self.device = device
        self.version = torch.__version__
        self.build = f"python {platform.python_version()}, torch {torch.__version__}"
        if device.type == "cuda":
            self.build += f", CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"

    def variants(self):
        # A variant of one op that is not attention: its capabilities are
        # that op's, the fields every op reads.
        ops = [{"name": name, "description": description, "ops": [op], "capabilities": core.op_capabilities(_ALL_DTYPES)}
               for name, (op, description) in OP_VARIANTS.items()]
        return [self._variant(name) for name in VARIANTS] + ops

    def _variant(self, name):
        _, description = VARIANTS[name]
        return {"name": name, "description": description, "capabilities": self._capabilities(name)}

    def _capabilities(self, name):
        """What each variant runs on the device present. On the CPU, PyTorch
        has math and a flash kernel for every dtype, and no efficient or
        cuDNN kernel at all."""
        on_gpu = self.device.type == "cuda"
        if name in ("sdpa", "sdpa-math") or (name == "sdpa-flash" and not on_gpu):
            return core.capabilities(_ALL_DTYPES, modes=_MODES)
        if name == "sdpa-efficient":
            # torch 2.11 refuses grouped-query heads for it ("both fused
            # kernels require query, key and value to have the same num_heads").
            return core.capabilities(_ALL_DTYPES, grouped_query_heads=False, needs_gpu=True, modes=_MODES)
        # FA2 and cuDNN on CUDA: half precision, head dims up to 256. FA2
        # refuses causal masking with seq_q != seq_k at run time (the skip
        # carries PyTorch's reason); cuDNN runs it, top-left aligned.
        return core.capabilities(_HALF_DTYPES, head_dims=_FUSED_HEAD_DIMS, needs_gpu=True, modes=_MODES)

    def prepare(self, case):
        pinned, _ = VARIANTS[case.variant]
        run = functools.partial(sdpa_of(case.shape), case.q, case.k, case.v)
        kernel = core.Kernel(run, facts=self._facts(pinned), session=self._session(pinned))
        if pinned == SDPBackend.MATH and self.device.type == "cuda":
            refuse_unfitting_math(case)
        probe(kernel, case)
        return kernel

    def prepare_op(self, case):
        """Attention's backward modes (prepare_backward), or torch-rmsnorm."""
        if case.op == core.ATTENTION:
            return self.prepare_backward(case)
        return self.prepare_rmsnorm(case)

    def prepare_backward(self, case):
        """Attention in mode bwd or fwd+bwd, through autograd. The host's
        Q, K and V become leaves that require grad (detached views: no
        copy, and no change to the case's tensors). Mode bwd builds the
        forward's graph here, under the pinned backend, and each call is
        the grad of its output alone; mode fwd+bwd calls both. The case
        runs once here, as a forward case does, so that PyTorch's refusal
        (of the forward or of the backward) is an Unsupported row."""
        if case.variant not in VARIANTS:
            op, _ = OP_VARIANTS[case.variant]
            raise ValueError(f"{case.variant} runs {op} alone, not attention")
        pinned, _ = VARIANTS[case.variant]
        s = case.shape
        q, k, v = (case.inputs[name].detach().requires_grad_() for name in ("q", "k", "v"))
        do = case.inputs["do"]
        sdpa = sdpa_of(s)
        session = self._session(pinned)
        facts = self._facts(pinned)
        facts["output_poison"] = ("not applied: SDPA and autograd allocate their outputs; "
                                  "the returned tensors are written")
        if pinned == SDPBackend.MATH and self.device.type == "cuda":
            refuse_unfitting_math(case, MATH_BACKWARD_BYTES_PER_PAIR, "an H200")
        if s.mode == core.BWD:
            with refused_as_unsupported(case.variant, s), (session or contextlib.nullcontext)():
                out = sdpa(q, k, v)

            def run():
                return torch.autograd.grad(out, (q, k, v), do, retain_graph=True)

            facts["function"] = "torch.autograd.grad of torch.nn.functional.scaled_dot_product_attention"
            facts["timed"] = "the backward alone: the forward's graph is built once in Prepare, and each call " \
                             "is torch.autograd.grad(out, (q, k, v), do, retain_graph=True)"
            facts["backward_inputs"] = "autograd of SDPA's own forward; the host's o and lse are not read"
        elif s.mode == core.FWD_BWD:
            def run():
                out = sdpa(q, k, v)
                dq, dk, dv = torch.autograd.grad(out, (q, k, v), do)
                return out.detach(), dq, dk, dv

            facts["function"] = ("torch.nn.functional.scaled_dot_product_attention, then torch.autograd.grad "
                                 "of its output")
            facts["timed"] = "the forward and the backward, in one call"
        else:
            raise ValueError(f"attention mode {s.mode} is prepare's, not prepare_op's")
        kernel = core.Kernel(run, facts=facts, session=session)
        probe(kernel, case)
        return kernel

    def prepare_rmsnorm(self, case):
        """torch-rmsnorm: rms_norm over the last dimension of x, run once
        here so that a first call's costs (and errors) fall in Prepare."""
        if case.variant not in OP_VARIANTS:
            raise ValueError(f"{case.variant} runs attention, not {case.op}")
        op, _ = OP_VARIANTS[case.variant]
        if case.op != op:
            raise ValueError(f"{case.variant} runs {op}, not {case.op}")
        x, weight = case.inputs["x"], case.inputs["weight"]
        run = functools.partial(F.rms_norm, x, (x.shape[-1],), weight, eps=core.RMSNORM_EPS)
        kernel = core.Kernel(run, facts={
            "torch": torch.__version__,
            "function": "torch.nn.functional.rms_norm",
            "output_poison": "not applied: rms_norm allocates its output; the returned tensor is written",
        })
        kernel.run()
        return kernel

    @staticmethod
    def _session(pinned):
        """The session that pins the variant's SDPBackend, or None."""
        return functools.partial(sdpa_kernel, [pinned]) if pinned is not None else None

    def _facts(self, pinned):
        return {
            "torch": torch.__version__,
            "sdp_backend": pinned.name if pinned is not None else "PyTorch's choice",
            "output_poison": "not applied: SDPA allocates its output; the returned tensor is written",
        }


# PyTorch's math path materialises the scores and their softmax: measured
# on an H100 at B1 H32 S16384, a call allocates about 9.6 bytes per (query,
# key) pair at its peak, fp16 and head dims 64 and 128 alike.
MATH_BYTES_PER_PAIR = 10
# Its backward (mode bwd or fwd+bwd) keeps the forward's softmax for the
# grad and materialises the grads of the probabilities and scores besides:
# measured on an H200 with torch 2.11, causal, at B1 H8 S4096 fp16 (D64
# and D128), B1 H4 S4096 D64 fp32 and B1 H16 S2048 D128 bf16: 16.3 to 17.1
# bytes per pair at the peak of the forward and two backward calls.
MATH_BACKWARD_BYTES_PER_PAIR = 18


def refuse_unfitting_math(case, bytes_per_pair=MATH_BYTES_PER_PAIR, measured_on="an H100"):
    """Unsupported when the math path's intermediates cannot fit in the
    device memory free now, rather than an out-of-memory error mid-row."""
    s = case.shape
    need = bytes_per_pair * s.batch * s.heads * s.seq_q * s.seq_k
    free, _ = torch.cuda.mem_get_info()
    if need > free:
        raise core.Unsupported(
            f"sdpa-math needs about {need / 2**30:.0f} GiB for its B·H·Sq·Sk intermediates; "
            f"{free / 2**30:.0f} GiB of device memory is free",
            f"{bytes_per_pair} bytes per (query, key) pair, measured on {measured_on}")


def sdpa_of(shape):
    """scaled_dot_product_attention(q, k, v) with the case's masking, scale
    and grouped-query heads."""
    return functools.partial(F.scaled_dot_product_attention, is_causal=shape.causal, scale=shape.scale,
                             enable_gqa=shape.grouped)


def probe(kernel, case):
    """Runs the case once (compiling and planning, as a first call does) and
    turns PyTorch's refusal into Unsupported with PyTorch's own reasons."""
    with refused_as_unsupported(case.variant, case.shape), kernel.session():
        kernel.run()


@contextlib.contextmanager
def refused_as_unsupported(variant, shape):
    """PyTorch's refusal of a pinned backend, raised inside, as Unsupported
    with the warnings in which PyTorch explains why."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        except RuntimeError as exc:
            if not any(refusal in str(exc) for refusal in _REFUSALS):
                raise
            reasons = [str(w.message).strip() for w in caught]
            raise core.Unsupported(f"PyTorch refused {variant} for {shape}", "; ".join(reasons) or str(exc)) from exc
