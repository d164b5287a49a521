"""The pytorch-sdpa backend: torch.nn.functional.scaled_dot_product_attention.

Where to start: Backend.prepare builds one Kernel per case. Variant ``sdpa``
is PyTorch's own dispatch; the others pin one SDPBackend with
torch.nn.attention.sdpa_kernel. PyTorch decides at run time whether a pinned
backend can take a case, so prepare runs the case once: a refusal becomes an
Unsupported row carrying the warnings in which PyTorch explains why.

SDPA allocates its own output, so there is no buffer to poison before the
checked run: the tensor it returns is what the host checks. The kernels
PyTorch actually ran are named in the facts of every Run (from the CUPTI
cross-check), which is how the results record what ``sdpa`` dispatched to.

Variant ``torch-rmsnorm`` is the torch baseline of the rmsnorm op:
torch.nn.functional.rms_norm, built by ``prepare_op``. It is timed by the
same contract as the SDPA rows: on a GPU, each call's kernel time is the
sum of CUPTI's durations of every kernel the call launches.
"""

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
            return core.capabilities(_ALL_DTYPES)
        if name == "sdpa-efficient":
            # torch 2.11 refuses grouped-query heads for it ("both fused
            # kernels require query, key and value to have the same num_heads").
            return core.capabilities(_ALL_DTYPES, grouped_query_heads=False, needs_gpu=True)
        # FA2 and cuDNN on CUDA: half precision, head dims up to 256. FA2
        # refuses causal masking with seq_q != seq_k at run time (the skip
        # carries PyTorch's reason); cuDNN runs it, top-left aligned.
        return core.capabilities(_HALF_DTYPES, head_dims=_FUSED_HEAD_DIMS, needs_gpu=True)

    def prepare(self, case):
        pinned, _ = VARIANTS[case.variant]
        session = functools.partial(sdpa_kernel, [pinned]) if pinned is not None else None
        run = functools.partial(
            F.scaled_dot_product_attention, case.q, case.k, case.v,
            is_causal=case.shape.causal, scale=case.shape.scale, enable_gqa=case.shape.grouped)
        kernel = core.Kernel(run, facts=self._facts(pinned), session=session)
        if pinned == SDPBackend.MATH and self.device.type == "cuda":
            refuse_unfitting_math(case)
        probe(kernel, case)
        return kernel

    def prepare_op(self, case):
        """torch-rmsnorm: rms_norm over the last dimension of x, run once
        here so that a first call's costs (and errors) fall in Prepare."""
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


def refuse_unfitting_math(case):
    """Unsupported when the math path's intermediates cannot fit in the
    device memory free now, rather than an out-of-memory error mid-row."""
    s = case.shape
    need = MATH_BYTES_PER_PAIR * s.batch * s.heads * s.seq_q * s.seq_k
    free, _ = torch.cuda.mem_get_info()
    if need > free:
        raise core.Unsupported(
            f"sdpa-math needs about {need / 2**30:.0f} GiB for its B·H·Sq·Sk intermediates; "
            f"{free / 2**30:.0f} GiB of device memory is free",
            f"{MATH_BYTES_PER_PAIR} bytes per (query, key) pair, measured on an H100")


def probe(kernel, case):
    """Runs the case once (compiling and planning, as a first call does) and
    turns PyTorch's refusal into Unsupported with PyTorch's own reasons."""
    with warnings.catch_warnings(record=True) as caught, kernel.session():
        warnings.simplefilter("always")
        try:
            kernel.run()
        except RuntimeError as exc:
            if not any(refusal in str(exc) for refusal in _REFUSALS):
                raise
            reasons = [str(w.message).strip() for w in caught]
            raise core.Unsupported(
                f"PyTorch refused {case.variant} for {case.shape}",
                "; ".join(reasons) or str(exc)) from exc
