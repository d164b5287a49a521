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

Variants ``sdpa-paged`` and ``flex-attention`` run the decode op (a paged
KV cache, FlashAttention's flash_attn_with_kvcache layout), built by
``prepare_decode``. Neither reads pages in its kernel: Prepare gathers each
sequence's pages into dense K and V (outside the timed region, and the
facts say so with the gather's own time), then the timed call is SDPA with
an explicit additive mask (sdpa-paged) or FlexAttention with a block mask
and, for softcap, a score_mod (flex-attention), compiled on a GPU.

The dense attention op's masks beyond top-left causal (its forward alone):
``sdpa`` and ``sdpa-math`` (and ``sdpa-flash`` on the CPU) take the
bottom-right alignment and sliding windows through an attn_mask built in
Prepare (sdpa_mask: torch.nn.attention.bias.causal_lower_right for
bottom-right causal alone, which PyTorch dispatches to its fused kernels,
else a boolean [Sq, Sk] mask); SDPA has no softcap. ``flex-attention``
runs dense attention under every mask: a block mask built in Prepare from
the case's mask_mod, and softcap as a score_mod. A row that sees no key
must be zeros: a variant that writes anything else there (NaN) is
Unsupported, found on the case's first call.

Variants ``sdpa-varlen`` and ``flex-attention`` run the varlen op (sequences
of different lengths packed end to end, FlashAttention's
flash_attn_varlen_func layout), built by ``prepare_varlen``: sdpa-varlen
calls torch.nn.attention.varlen.varlen_attn (FlashAttention-2 on CUDA; it
has no CPU kernel), flex-attention runs the pack as one sequence under a
document mask built from the cu_seqlens in Prepare.
"""

import contextlib
import functools
import hashlib
import json
import math
import os
import platform
import time
import warnings

# The worker computes Triton's cache key while torch imports (worker_main,
# warm_compiler_key), on a GPU: flex-attention's first compile needs it,
# and Inductor keys its caches with it.
COMPILER = "triton"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

import flashcore_worker as core  # noqa: E402
from flashcore_serving import DECODE_INPUTS, VARLEN_INPUTS, Decode, Varlen, gather_pages  # noqa: E402, F401

# variant name -> (SDPBackend or None for PyTorch's choice, description)
VARIANTS = {
    "sdpa": (None, "PyTorch's own dispatch (on an H100 with torch 2.11: cuDNN)"),
    "sdpa-flash": (SDPBackend.FLASH_ATTENTION, "SDPBackend.FLASH_ATTENTION (FlashAttention-2 on CUDA)"),
    "sdpa-efficient": (SDPBackend.EFFICIENT_ATTENTION, "SDPBackend.EFFICIENT_ATTENTION (memory-efficient, xFormers)"),
    "sdpa-cudnn": (SDPBackend.CUDNN_ATTENTION, "SDPBackend.CUDNN_ATTENTION (cuDNN fused attention)"),
    "sdpa-math": (SDPBackend.MATH, "SDPBackend.MATH (the unfused reference composition)"),
}

# The decode op: paged KV cache decode (ops/decode in Go).
DECODE = "decode"
# The varlen op: packed variable-length prefill (ops/varlen in Go).
VARLEN = "varlen"

# Variants of ops other than attention: name -> (their ops, description).
# The first op's capabilities are the variant's "capabilities"; a variant
# of several ops lists each op's in "op_capabilities" too.
# Each op's baseline row is its first variant here that runs the case, so
# the library call a serving stack makes (sdpa-paged, sdpa-varlen) comes
# before flex-attention.
OP_VARIANTS = {
    "torch-rmsnorm": (("rmsnorm",), "torch.nn.functional.rms_norm(x, (cols,), weight, eps=1e-6)"),
    "sdpa-paged": ((DECODE,), "scaled_dot_product_attention over K/V gathered from the pages, with an explicit "
                              "length/causal/window mask; the gather runs in Prepare, excluded from the time"),
    "sdpa-varlen": ((VARLEN,), "torch.nn.attention.varlen.varlen_attn(q, k, v, cu_seq_q, cu_seq_k, max_q, max_k, "
                               "scale=, window_size=(left, right)): FlashAttention-2's varlen forward on CUDA "
                               "(no CPU kernel); no softcap, fp16 and bf16 only"),
    "flex-attention": ((DECODE, VARLEN, core.ATTENTION),
                       "torch.compile(flex_attention) (eager on the CPU): decode over K/V gathered from the pages, "
                       "block mask for length/causal/window, score_mod for softcap, the gather and the block mask "
                       "built in Prepare, excluded from the time; varlen as one packed sequence under a document "
                       "mask (cu_seqlens, bottom-right causal, windows) built in Prepare, score_mod for softcap; "
                       "dense attention's forward under a block mask (causal either corner, windows) built in "
                       "Prepare, score_mod for softcap"),
}
# The masks of dense attention an SDPA variant applies through its
# attn_mask (sdpa_mask): no softcap.
_SDPA_MASKS = ("bottom-right", "window")
# Every mask of dense attention: flex-attention's.
_FLEX_MASKS = ("bottom-right", "window", "softcap")
# The longest sequence flex-attention's dense attention takes on a CPU,
# where it runs eagerly and materialises the B·H·Sq·Sk scores.
CPU_FLEX_MAX_SEQ_LEN = 2048

# Messages with which PyTorch refuses a pinned backend (CUDA, then CPU).
_REFUSALS = ("No available kernel", "No viable backend")

_ALL_DTYPES = ("fp16", "bf16", "fp32")
# The largest decode page pool (elements per cache), and varlen tensor, a
# variant takes on a CPU.
CPU_DECODE_MAX_ELEMENTS = 1 << 24
CPU_VARLEN_MAX_ELEMENTS = 1 << 22
_HALF_DTYPES = ("fp16", "bf16")
# The head dims flex-attention declares on a GPU.
_FLEX_GPU_HEAD_DIMS = (16, 32, 64, 128, 256)
# FlashAttention-2 and cuDNN take head dims that are multiples of 8 up to 256.
_FUSED_HEAD_DIMS = tuple(range(8, 257, 8))
# Every SDPA variant runs the forward, the backward, and the two in one call.
_MODES = core.MODES


class Backend:
    def __init__(self, device):
        self.device = device
        self._compile_flex = None
        # The compiler's settings as the worker started: a first compile
        # sets variables of its own (CompileRefusals).
        self._compiler_env = compiler_environment()
        self.version = torch.__version__
        self.build = f"python {platform.python_version()}, torch {torch.__version__}"
        if device.type == "cuda":
            self.build += f", CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}"

    def variants(self):
        # A variant of ops that are not attention: its capabilities are its
        # first op's, the fields every op reads; one of several ops lists
        # each op's in op_capabilities.
        ops = []
        for name, (names, description) in OP_VARIANTS.items():
            variant = {"name": name, "description": description, "ops": list(names),
                       "capabilities": self._op_capabilities(name, names[0])}
            if len(names) > 1:
                variant["op_capabilities"] = {op: self._op_capabilities(name, op) for op in names}
            ops.append(variant)
        return [self._variant(name) for name in VARIANTS] + ops

    def _op_capabilities(self, name, op):
        """What a variant runs of an op other than attention. torch-rmsnorm
        takes every dtype anywhere; the decode and varlen variants take
        grouped-query heads, causal (bottom-right) and not, and the masks
        their call can express: SDPA and varlen_attn have no softcap, and
        varlen_attn (FlashAttention-2) runs fp16 and bf16 on CUDA alone."""
        if op == core.ATTENTION:
            return self._flex_attention_capabilities()
        if op not in (DECODE, VARLEN):
            return core.op_capabilities(_ALL_DTYPES)
        if name == "sdpa-varlen":
            return core.op_capabilities(_HALF_DTYPES, head_dims=_FUSED_HEAD_DIMS, grouped_query_heads=True,
                                        causal=True, non_causal=True, masks=["window"], needs_gpu=True)
        # A CPU runs a decode step over a pool of 2^24 elements, or a varlen
        # batch of 2^22 elements a tensor, in about a second; larger cases
        # are GPU work, skipped there with the reason.
        limit = CPU_DECODE_MAX_ELEMENTS if op == DECODE else CPU_VARLEN_MAX_ELEMENTS
        if self.device.type == "cuda":
            limit = 0
        if name == "sdpa-paged":
            return core.op_capabilities(_ALL_DTYPES, grouped_query_heads=True, causal=True, non_causal=True,
                                        masks=["window"], max_elements=limit)
        # FlexAttention's GPU kernels round the head dim up to a power of
        # two; the powers of two are what its documentation names. The
        # CPU runs it eagerly, any head dim.
        head_dims = _FLEX_GPU_HEAD_DIMS if self.device.type == "cuda" else ()
        return core.op_capabilities(_ALL_DTYPES, head_dims=head_dims, grouped_query_heads=True, causal=True,
                                    non_causal=True, masks=["window", "softcap"], max_elements=limit)

    def _flex_attention_capabilities(self):
        """flex-attention's dense attention: the forward, every dtype, GQA,
        any lengths, causal (either corner), windows and softcap. The GPU
        takes the head dims its kernels do; the CPU runs it eagerly, which
        materialises the scores, up to CPU_FLEX_MAX_SEQ_LEN."""
        on_gpu = self.device.type == "cuda"
        return core.capabilities(_ALL_DTYPES, head_dims=_FLEX_GPU_HEAD_DIMS if on_gpu else (),
                                 max_seq_len=0 if on_gpu else CPU_FLEX_MAX_SEQ_LEN, needs_gpu=False,
                                 masks=_FLEX_MASKS)

    def _variant(self, name):
        _, description = VARIANTS[name]
        return {"name": name, "description": description, "capabilities": self._capabilities(name)}

    def _capabilities(self, name):
        """What each variant runs on the device present. On the CPU, PyTorch
        has math and a flash kernel for every dtype, and no efficient or
        cuDNN kernel at all."""
        on_gpu = self.device.type == "cuda"
        if name in ("sdpa", "sdpa-math") or (name == "sdpa-flash" and not on_gpu):
            # Masks through an attn_mask (sdpa_mask), in the forward.
            return core.capabilities(_ALL_DTYPES, modes=_MODES, masks=_SDPA_MASKS)
        if name == "sdpa-efficient":
            # torch 2.11 refuses grouped-query heads for it ("both fused
            # kernels require query, key and value to have the same num_heads").
            return core.capabilities(_ALL_DTYPES, grouped_query_heads=False, needs_gpu=True, modes=_MODES)
        # FA2 and cuDNN on CUDA: half precision, head dims up to 256. FA2
        # refuses causal masking with seq_q != seq_k at run time (the skip
        # carries PyTorch's reason); cuDNN runs it, top-left aligned.
        return core.capabilities(_HALF_DTYPES, head_dims=_FUSED_HEAD_DIMS, needs_gpu=True, modes=_MODES)

    def prepare(self, case):
        """Dense attention's forward: SDPA under the variant's pinned
        backend, with the case's mask (sdpa_mask) built here, or
        flex-attention (prepare_flex_attention)."""
        if case.variant == "flex-attention":
            return self.prepare_flex_attention(case)
        pinned, _ = VARIANTS[case.variant]
        facts = self._facts(pinned)
        sdpa = sdpa_of(case.shape)
        if case.shape.masked:
            mask, facts["mask"] = sdpa_mask(case.shape, case.variant, self.device)
            sdpa = functools.partial(F.scaled_dot_product_attention, attn_mask=mask, scale=case.shape.scale,
                                     enable_gqa=case.shape.grouped)
        run = functools.partial(sdpa, case.q, case.k, case.v)
        kernel = core.Kernel(run, facts=facts, session=self._session(pinned))
        if pinned == SDPBackend.MATH and self.device.type == "cuda":
            refuse_unfitting_math(case)
        probe(kernel, case)
        if case.shape.masked:
            with kernel.session():
                refuse_unseeing_rows(kernel.run(), case.shape, case.variant)
        return kernel

    def prepare_flex_attention(self, case):
        """flex-attention on a dense attention case: flex_attention(q, k, v)
        with the case's mask as a block mask (create_block_mask of its
        mask_mod, built here; none when it has no causal cut and no window)
        and softcap as a score_mod; compiled on a GPU, eager on the CPU."""
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        s = case.shape
        compiled = self.compile_flex
        block_mask, mask_fact = None, "none: every query row sees every key"
        if s.causal or s.windowed:
            block_mask = create_block_mask(s.mask_mod(), None, None, s.seq_q, s.seq_k, device=self.device)
            mask_fact = (f"create_block_mask in Prepare, {block_mask.BLOCK_SIZE[0]}x{block_mask.BLOCK_SIZE[1]} "
                         f"blocks: {mask_text(s)}")
        score_mod = softcap_score_mod(s.softcap) if s.softcap else None
        flex = compiled_flex_attention() if compiled else flex_attention
        call = functools.partial(flex, block_mask=block_mask, score_mod=score_mod, scale=s.scale,
                                 enable_gqa=s.grouped)
        run = functools.partial(call, case.q, case.k, case.v)
        compiled_fact = self._first_flex_call(run, compiled, {"variant": case.variant, "shape": repr(s)})
        refuse_unseeing_rows(run(), s, case.variant)
        return core.Kernel(run, facts={
            "torch": torch.__version__,
            "function": "torch.nn.attention.flex_attention",
            "timed": "flex_attention alone, with the block mask built in Prepare",
            "compiled": compiled_fact,
            "block_mask": mask_fact,
            "score_mod": f"softcap: {s.softcap:g} * tanh(s / {s.softcap:g})" if s.softcap else "none",
            "gqa": "enable_gqa=True" if s.grouped else "none (H = KVH)",
            "output_poison": "not applied: flex_attention allocates its output; the returned tensor is written",
        })

    def prepare_op(self, case):
        """Attention's backward modes (prepare_backward), torch-rmsnorm, or
        the decode variants (prepare_decode)."""
        if case.op == core.ATTENTION:
            return self.prepare_backward(case)
        if case.op == DECODE:
            return self.prepare_decode(case)
        if case.op == VARLEN:
            return self.prepare_varlen(case)
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
            ops, _ = OP_VARIANTS[case.variant]
            raise ValueError(f"{case.variant} runs {' and '.join(ops)} alone, not attention")
        pinned, _ = VARIANTS[case.variant]
        s = case.shape
        if s.masked:
            # The suite refuses masks in the backward modes; a request
            # that bypassed it is refused here.
            raise core.Unsupported(f"{case.variant}: masks beyond top-left causal in mode {s.mode} ({s})",
                                   "the backward modes take causal (top-left) and no other mask")
        q, k, v = (case.inputs[name].detach().requires_grad_() for name in ("q", "k", "v"))
        do = case.inputs["do"]
        sdpa = sdpa_of(s)
        session = self._session(pinned)
        facts = self._facts(pinned)
        facts["output_poison"] = ("not applied: SDPA and autograd allocate their outputs; "
                                  "the returned tensors are written")
        if pinned == SDPBackend.MATH and self.device.type == "cuda":
            refuse_unfitting_math(case, MATH_BACKWARD_BYTES_PER_PAIR, "an H200")
        if s.mode not in (core.BWD, core.FWD_BWD):
            raise ValueError(f"attention mode {s.mode} is prepare's, not prepare_op's")
        # Mode bwd runs the forward here, under the pinned backend, so that
        # PyTorch's refusal of it is an Unsupported row.
        with refused_as_unsupported(case.variant, s), (session or contextlib.nullcontext)():
            run, facts["timed"] = core.autograd_run(sdpa, (q, k, v), do, s.mode)
        if s.mode == core.BWD:
            facts["function"] = "torch.autograd.grad of torch.nn.functional.scaled_dot_product_attention"
            facts["backward_inputs"] = "autograd of SDPA's own forward; the host's o and lse are not read"
        else:
            facts["function"] = ("torch.nn.functional.scaled_dot_product_attention, then torch.autograd.grad "
                                 "of its output")
        kernel = core.Kernel(run, facts=facts, session=session)
        probe(kernel, case)
        return kernel

    def prepare_rmsnorm(self, case):
        """torch-rmsnorm: rms_norm over the last dimension of x, run once
        here so that a first call's costs (and errors) fall in Prepare."""
        if case.variant not in OP_VARIANTS:
            raise ValueError(f"{case.variant} runs attention, not {case.op}")
        ops, _ = OP_VARIANTS[case.variant]
        if case.op not in ops:
            raise ValueError(f"{case.variant} runs {' and '.join(ops)}, not {case.op}")
        x, weight = case.inputs["x"], case.inputs["weight"]
        run = functools.partial(F.rms_norm, x, (x.shape[-1],), weight, eps=core.RMSNORM_EPS)
        kernel = core.Kernel(run, facts={
            "torch": torch.__version__,
            "function": "torch.nn.functional.rms_norm",
            "output_poison": "not applied: rms_norm allocates its output; the returned tensor is written",
        })
        kernel.run()
        return kernel

    def prepare_decode(self, case):
        """sdpa-paged or flex-attention on a decode case. Both gather each
        sequence's pages into dense K and V here (gather_pages), timed once
        and excluded from the time, and build their mask here too; the
        timed call is the attention over the gathered tensors alone. The
        case runs once here, so that a first call's costs (FlexAttention's
        compilation) and refusals fall in Prepare."""
        ops, _ = OP_VARIANTS.get(case.variant, ((core.ATTENTION,), ""))
        if DECODE not in ops:
            raise ValueError(f"{case.variant} runs {' and '.join(ops)}, not {DECODE}")
        d = Decode.of(case)
        if case.variant == "sdpa-paged":
            return self._prepare_sdpa_paged(case, d)
        return self._prepare_flex(case, d)

    def _prepare_sdpa_paged(self, case, d):
        if d.softcap:
            raise core.Unsupported(f"sdpa-paged: scaled_dot_product_attention has no softcap ({d})",
                                   "it applies a mask, not a function of the scores")
        k, v, gathered = self._gather(case.variant, d)
        allowed = dense_mask(decode_mask_mod(d), d.batch, d.q_len, k.shape[1], self.device)
        if bool(allowed.all()):
            mask, mask_fact = None, "none: every gathered key is seen (equal lengths, whole pages, no causal cut)"
        else:
            mask = torch.zeros(allowed.shape, dtype=d.q.dtype, device=self.device).masked_fill_(~allowed, -math.inf)
            mask_fact = (f"additive [B, 1, q_len, L] = {list(mask.shape)} in {d.q.dtype} (0 or -inf): lengths, "
                         f"{'bottom-right causal' if d.causal else 'no causal cut'}"
                         f"{f', window_left {d.window_left}' if d.window_left >= 0 else ''}; built in Prepare")
        q = d.q.transpose(1, 2)  # [B, H, q_len, D], a view
        grouped = d.heads != d.kv_heads
        choice = sdp_choice(q, k.transpose(1, 2), v.transpose(1, 2), mask, grouped, d.scale)
        gqa = "enable_gqa=True" if grouped else "none (H = KVH)"
        if grouped and choice == SDPBackend.MATH:
            # No fused kernel takes grouped heads with this mask (CUDA's
            # memory-efficient kernel takes no enable_gqa): expand K and V
            # to H heads here, as a serving stack's repeat_kv does, when
            # that lets a fused kernel run.
            group = d.heads // d.kv_heads
            ke, ve = (t.repeat_interleave(group, dim=2) for t in (k, v))
            expanded = sdp_choice(q, ke.transpose(1, 2), ve.transpose(1, 2), mask, False, d.scale)
            if expanded not in (None, SDPBackend.MATH):
                k, v, grouped, choice = ke, ve, False, expanded
                gqa = (f"K/V heads expanded {group}x in Prepare (repeat_interleave): with enable_gqa=True "
                       f"PyTorch would run MATH")
        k, v = k.transpose(1, 2), v.transpose(1, 2)  # [B, KVH or H, L, D], views of [B, L, heads, D]
        sdpa = functools.partial(F.scaled_dot_product_attention, attn_mask=mask, scale=d.scale, enable_gqa=grouped)

        def run():
            return sdpa(q, k, v).transpose(1, 2)

        kernel = core.Kernel(run, facts={
            "torch": torch.__version__,
            "function": "torch.nn.functional.scaled_dot_product_attention over K/V gathered from the pages",
            "timed": "SDPA alone, over the dense K/V gathered in Prepare",
            "gather": gathered,
            "mask": mask_fact,
            "sdp_backend": describe_choice(choice, self.device),
            "gqa": gqa,
            "output_poison": "not applied: SDPA allocates its output; the returned tensor is written",
        })
        with refused_as_unsupported(case.variant, d):
            kernel.run()
        return kernel

    def _prepare_flex(self, case, d):
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        compiled = self.compile_flex
        grouped = d.heads != d.kv_heads
        group = d.heads // d.kv_heads
        if compiled and self.device.type == "cuda" and group & (group - 1):
            # Its decoding kernel (q_len < 128) shares K/V loads among a
            # power of two of query heads and raises otherwise.
            raise core.Unsupported(f"flex-attention: {d.heads} query heads over {d.kv_heads} K/V heads",
                                   "FlexAttention's decoding kernel needs H / KVH to be a power of 2")
        k, v, gathered = self._gather(case.variant, d)
        kv_len = k.shape[1]
        block_mask = create_block_mask(decode_mask_mod(d), d.batch, None, d.q_len, kv_len, device=self.device)
        score_mod = softcap_score_mod(d.softcap) if d.softcap else None
        flex = compiled_flex_attention() if compiled else flex_attention
        call = functools.partial(flex, block_mask=block_mask, score_mod=score_mod, scale=d.scale, enable_gqa=grouped)
        q, k, v = (t.transpose(1, 2) for t in (d.q, k, v))  # [B, heads, S, D], views

        def run():
            return call(q, k, v).transpose(1, 2)

        compiled_fact = self._first_flex_call(run, compiled)
        return core.Kernel(run, facts={
            "torch": torch.__version__,
            "function": "torch.nn.attention.flex_attention over K/V gathered from the pages",
            "timed": "flex_attention alone, over the dense K/V gathered and the block mask built in Prepare",
            "compiled": compiled_fact,
            "gather": gathered,
            "block_mask": (f"create_block_mask in Prepare, {block_mask.BLOCK_SIZE[0]}x{block_mask.BLOCK_SIZE[1]} "
                           f"blocks: lengths, {'bottom-right causal' if d.causal else 'no causal cut'}"
                           f"{f', window_left {d.window_left}' if d.window_left >= 0 else ''}"),
            "score_mod": f"softcap: {d.softcap:g} * tanh(s / {d.softcap:g})" if d.softcap else "none",
            "gqa": "enable_gqa=True" if grouped else "none (H = KVH)",
            "output_poison": "not applied: flex_attention allocates its output; the returned tensor is written",
        })

    @functools.cached_property
    def kept_refusals(self):
        """This worker's CompileRefusals (None without a cache): their key's
        environment (this file's hash, the GPU) is the worker's, made at the
        first compile that may keep one, not at every case."""
        return CompileRefusals.here(self.device, self._compiler_env)

    def _first_flex_call(self, run, compiled, refusal_key=None):
        """Runs a flex-attention case's first call (its compilation, where
        compiled) and returns the fact "compiled" that says how it runs and
        what the first call took. A case torch.compile refuses is an
        Unsupported row; with refusal_key (what makes the case, beside the
        call's code), the refusal is kept (CompileRefusals), and a later
        worker refuses the case again without compiling it."""
        refusals = self.kept_refusals if compiled and refusal_key is not None else None
        if refusals is not None:
            kept = refusals.find(refusal_key)
            if kept is not None:
                raise core.Unsupported(kept["summary"], f"{kept['detail']} ({refusals.provenance})")
        start = time.perf_counter()
        with warnings.catch_warnings():
            # Eager flex_attention warns once that it is not compiled; the
            # fact "compiled" says so.
            warnings.simplefilter("ignore")
            try:
                run()
            except Exception as exc:
                if not compile_refusal(exc):
                    raise
                summary, detail = "flex-attention: torch.compile found no kernel for this case", first_line(exc)
                if refusals is not None:
                    refusals.keep(refusal_key, summary, detail)
                raise core.Unsupported(summary, detail) from exc
        if self.device.type == "cuda":
            torch.cuda.synchronize()
        first = time.perf_counter() - start
        if compiled:
            return (f"yes: torch.compile(flex_attention, dynamic=False, fullgraph=True), Inductor's "
                    f"compile threads {inductor_compile_threads()}; first call {first:.1f} s (compilation "
                    f"included), in Prepare and kept out of the time")
        return (f"no: eager on the {self.device.type.upper()}, FlexAttention's unfused path (it "
                f"materialises the scores); first call {first * 1e3:.1f} ms. torch.compile of "
                f"flex_attention on the CPU takes 10-30 s a new case (torch 2.11)")

    def prepare_varlen(self, case):
        """sdpa-varlen or flex-attention on a varlen case (Varlen.of). The
        case runs once here, so that a first call's costs (FlexAttention's
        compilation) and refusals fall in Prepare."""
        ops, _ = OP_VARIANTS.get(case.variant, ((core.ATTENTION,), ""))
        if VARLEN not in ops:
            raise ValueError(f"{case.variant} runs {' and '.join(ops)}, not {VARLEN}")
        d = Varlen.of(case)
        if case.variant == "sdpa-varlen":
            return self._prepare_varlen_attn(case, d)
        return self._prepare_flex_varlen(case, d)

    def _prepare_varlen_attn(self, case, d):
        """sdpa-varlen: torch.nn.attention.varlen.varlen_attn on the packed
        tensors as they are. Its masking is window_size = (left, right):
        (-1, 0) is causal (FlashAttention's, bottom-right aligned), (W, 0)
        causal with a window of W, (left, right) a window without causal,
        -1 unbounded."""
        if self.device.type not in VARLEN_ATTN_DEVICES:
            raise core.Unsupported(f"sdpa-varlen: varlen_attn runs on CUDA only, not on the "
                                   f"{self.device.type.upper()}",
                                   f"it calls aten::_flash_attention_forward, which has no "
                                   f"{self.device.type.upper()} kernel in torch {torch.__version__}")
        if d.softcap:
            raise core.Unsupported(f"sdpa-varlen: varlen_attn has no softcap ({d})",
                                   "it takes window_size and scale, no function of the scores")
        if d.q.dtype not in (torch.float16, torch.bfloat16):
            raise core.Unsupported(f"sdpa-varlen: varlen_attn runs fp16 and bf16 only, not {d.q.dtype} ({d})",
                                   "FlashAttention-2 has no fp32 kernel")
        window = d.window_size
        varlen_attn = varlen_attn_function()
        call = functools.partial(varlen_attn, d.q, d.k, d.v, d.cu_seqlens_q, d.cu_seqlens_k, d.max_seqlen_q,
                                 d.max_seqlen_k, scale=d.scale, window_size=window)
        facts = {
            "torch": torch.__version__,
            "function": (f"torch.nn.attention.varlen.varlen_attn(q, k, v, cu_seq_q, cu_seq_k, {d.max_seqlen_q}, "
                         f"{d.max_seqlen_k}, scale={d.scale:.6g}, window_size={window})"),
            "timed": "varlen_attn alone, on the packed tensors as the host wrote them",
            "window_size": (f"{window}: {'causal (bottom-right aligned)' if d.causal else 'no causal cut'}"
                            f"{f', window_left {d.window_left}' if d.window_left >= 0 else ''}"
                            f"{f', window_right {d.window_right}' if d.window_right >= 0 and not d.causal else ''}"),
            "varlen_backend": varlen_backend(self.device),
            "gqa": (f"native: {d.heads} query heads over {d.kv_heads} K/V heads (FlashAttention-2 takes KVH "
                    f"dividing H)" if d.heads != d.kv_heads else "none (H = KVH)"),
            "output_poison": "not applied: varlen_attn allocates its output; the returned tensor is written",
        }
        kernel = core.Kernel(call, facts=facts)
        try:
            kernel.run()
        except RuntimeError as exc:
            text = str(exc).strip()
            if "FlashAttention" not in text and "only supports" not in text:
                raise
            raise core.Unsupported(f"PyTorch refused sdpa-varlen for {d}", text.splitlines()[0]) from exc
        return kernel

    def _prepare_flex_varlen(self, case, d):
        """flex-attention on a varlen case: the pack as one sequence, q [1,
        H, total_q, D] against k and v [1, KVH, total_k, D] (views), under a
        document mask (varlen_mask_mod) whose block mask is built here, and
        softcap as a score_mod."""
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        compiled = self.compile_flex
        grouped = d.heads != d.kv_heads
        block_mask = create_block_mask(varlen_mask_mod(d), 1, None, d.total_q, d.total_k, device=self.device)
        score_mod = softcap_score_mod(d.softcap) if d.softcap else None
        flex = compiled_flex_attention() if compiled else flex_attention
        call = functools.partial(flex, block_mask=block_mask, score_mod=score_mod, scale=d.scale, enable_gqa=grouped)
        q, k, v = (t.transpose(0, 1).unsqueeze(0) for t in (d.q, d.k, d.v))  # [1, heads, total, D], views

        def run():
            return call(q, k, v)[0].transpose(0, 1)  # [total_q, H, D], a view

        compiled_fact = self._first_flex_call(run, compiled)
        window = "".join([f", window_left {d.window_left}" if d.window_left >= 0 else "",
                          f", window_right {d.window_right}" if d.window_right >= 0 else ""])
        return core.Kernel(run, facts={
            "torch": torch.__version__,
            "function": "torch.nn.attention.flex_attention over the pack as one sequence, under a document mask",
            "timed": "flex_attention alone, with the block mask built in Prepare",
            "compiled": compiled_fact,
            "block_mask": (f"create_block_mask in Prepare over [{d.total_q}, {d.total_k}], "
                           f"{block_mask.BLOCK_SIZE[0]}x{block_mask.BLOCK_SIZE[1]} blocks: same document (from "
                           f"the cu_seqlens), "
                           f"{'bottom-right causal' if d.causal else 'no causal cut'}{window}"),
            "score_mod": f"softcap: {d.softcap:g} * tanh(s / {d.softcap:g})" if d.softcap else "none",
            "gqa": "enable_gqa=True" if grouped else "none (H = KVH)",
            "output_poison": "not applied: flex_attention allocates its output; the returned tensor is written",
        })

    @property
    def compile_flex(self):
        """Whether flex-attention runs compiled: on a GPU. On the CPU it
        runs eagerly (compiling there takes 10-30 s a case and a C++
        toolchain); tests set it to check the compiled path on the CPU."""
        return self._compile_flex if self._compile_flex is not None else self.device.type == "cuda"

    @compile_flex.setter
    def compile_flex(self, value):
        self._compile_flex = value

    def _gather(self, variant, d):
        """The dense K and V of d (gather_pages) and the fact that says the
        gather is excluded from the time and what it took: a second gather,
        discarded, is timed where it fits (the first pays for first-call
        costs), else the first. Unsupported when the dense K and V cannot
        fit in the device memory free now, rather than an out-of-memory
        error mid-row."""
        need = 2 * d.batch * d.gathered_len * d.kv_heads * d.head_dim * d.q.element_size()
        if not self._fits(need):
            raise core.Unsupported(f"{variant}: the gathered K/V take {need / 2**30:.1f} GiB; "
                                   f"{torch.cuda.mem_get_info()[0] / 2**30:.1f} GiB of device memory is free")
        gather = functools.partial(gather_pages, d)
        (k, v), took = timed_once(gather, self.device)
        which = "the first gather, allocations included"
        if self._fits(need):
            _, took = timed_once(gather, self.device)
            which = "a second gather, discarded"
        clock = "CUDA events" if self.device.type == "cuda" else "perf_counter"
        return k, v, (f"gather excluded from the time; gather took {took:.1f} µs ({clock}, {which}, in "
                      f"Prepare): {d.pages} pages of {d.page_size} slots per sequence into K and V "
                      f"[B, {d.kv_heads}, {k.shape[1]}, {d.head_dim}]")

    def _fits(self, nbytes):
        """Whether nbytes more fit in the device memory free now (always on
        the CPU)."""
        return self.device.type != "cuda" or nbytes <= torch.cuda.mem_get_info()[0]

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


# The errors by which torch.compile says it has no kernel for a case: Inductor
# finds no valid template choice (measured on an H100 with torch 2.11 for
# flex_attention at B1 H4/2 S96x160 D64 fp16 causal: "LoweringException:
# NoValidChoicesError: No choices to select"). They are the compiler's
# refusal of the case, a skip, not an error of the row.
COMPILE_REFUSALS = ("NoValidChoicesError",)


class CompileRefusals:
    """The cases torch.compile refused flex-attention, kept between runs in
    the plugin's cache (FLASHCORE_CACHE_DIR, which the host gives each
    plugin) as torch.compile keeps what it compiled. A refusal is a fact of
    the compiler, not of the run: torch 2.11's flex decoding kernel (a query
    shorter than 128) takes no block for a case whose query rows times its
    grouped heads exceed 128, and refusing it took the default suite 1 s of
    every run (docs/measurement.md). A refusal is kept only under the same
    torch (its git revision), triton, GPU, this file's source and the
    compiler's environment variables; anything else compiles again, as does
    every case after the file is deleted."""

    FILE = "flex-compile-refusals.json"

    def __init__(self, path, environment):
        self.path = path
        self.environment = environment
        self.provenance = (f"refused by torch.compile in an earlier run with torch {environment['torch']}, triton "
                           f"{environment['triton']} on this device and this plugin; kept in {path}: delete it to "
                           f"compile again")

    @classmethod
    def here(cls, device, compiler_env):
        """The refusals of this worker's plugin on device under the
        compiler's settings compiler_env (compiler_environment), or None
        without a cache."""
        cache = os.environ.get("FLASHCORE_CACHE_DIR", "")
        if not cache:
            return None
        try:
            import triton

            triton_version = triton.__version__
        except ImportError:
            triton_version = "none"
        where = device.type
        if device.type == "cuda":
            props = torch.cuda.get_device_properties(device)
            where = f"{props.name} sm_{props.major}{props.minor}"
        with open(__file__, "rb") as f:
            source = hashlib.sha256(f.read()).hexdigest()
        environment = {
            "torch": torch.__version__, "torch_git": torch.version.git_version, "triton": triton_version,
            "device": where, "plugin_source": source, "env": compiler_env,
        }
        return cls(os.path.join(cache, cls.FILE), environment)

    def _key(self, case):
        text = json.dumps({"environment": self.environment, "case": case}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def _load(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                kept = json.load(f)
        except (OSError, ValueError):
            return {}
        return kept if isinstance(kept, dict) else {}

    def find(self, case):
        """The refusal kept for case ({"summary", "detail"}), or None."""
        kept = self._load().get(self._key(case))
        if isinstance(kept, dict) and isinstance(kept.get("summary"), str) and isinstance(kept.get("detail"), str):
            return kept
        return None

    def keep(self, case, summary, detail):
        """Keeps a refusal; a cache that cannot be written keeps nothing."""
        kept = self._load()
        kept[self._key(case)] = {"summary": summary, "detail": detail, "case": case,
                                 "environment": self.environment}
        temporary = f"{self.path}.{os.getpid()}"
        try:
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(kept, f, indent=1, sort_keys=True)
            os.replace(temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(temporary)


def compiler_environment():
    """The environment variables that set torch.compile and Triton, but for
    where their caches are: part of what a kept compile refusal is kept
    under (CompileRefusals). Read as the worker starts, since a first
    compile sets some of its own (seen on an H100: a first run's refusal was
    kept under other variables than a later run's)."""
    return {k: v for k, v in sorted(os.environ.items())
            if k.startswith(("TORCHINDUCTOR_", "TORCH_COMPILE", "TORCHDYNAMO_", "TRITON_"))
            and k not in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}


def compile_refusal(exc):
    """Whether exc (or what it wraps) is torch.compile's refusal of a case."""
    while exc is not None:
        if type(exc).__name__ in COMPILE_REFUSALS or any(r in str(exc) for r in COMPILE_REFUSALS):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def first_line(exc):
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:500]


def sdpa_of(shape):
    """scaled_dot_product_attention(q, k, v) with the case's causal flag
    (top-left), scale and grouped-query heads: every case without masks
    beyond it (Shape.masked)."""
    return functools.partial(F.scaled_dot_product_attention, is_causal=shape.causal, scale=shape.scale,
                             enable_gqa=shape.grouped)


def sdpa_mask(shape, variant, device):
    """The attn_mask that applies the case's mask through SDPA, and the
    fact that says what it is. Bottom-right causal alone (no window) is
    torch.nn.attention.bias.causal_lower_right, which PyTorch dispatches
    to fused kernels that place the causal cut themselves; any other mask
    is a boolean [Sq, Sk] (True: seen), broadcast over batch and heads,
    built here on the device. SDPA has no softcap."""
    if shape.softcap:
        raise core.Unsupported(f"{variant}: scaled_dot_product_attention has no softcap ({shape})",
                               "it applies a mask, not a function of the scores")
    if shape.causal and not shape.windowed:
        try:
            from torch.nn.attention.bias import causal_lower_right
        except ImportError:  # older torch: the boolean mask below
            causal_lower_right = None
        if causal_lower_right is not None:
            with warnings.catch_warnings():
                # It warns that rows above the first key (Sq > Sk) may be
                # NaN; refuse_unseeing_rows finds out.
                warnings.simplefilter("ignore")
                mask = causal_lower_right(shape.seq_q, shape.seq_k)
            return mask, (f"torch.nn.attention.bias.causal_lower_right({shape.seq_q}, {shape.seq_k}): "
                          f"{mask_text(shape)}")
    allowed = dense_mask(shape.mask_mod(), 1, shape.seq_q, shape.seq_k, device)[0, 0]
    return allowed, f"boolean [Sq, Sk] = [{shape.seq_q}, {shape.seq_k}], built in Prepare: {mask_text(shape)}"


def mask_text(shape):
    """The case's mask in words, for the facts."""
    parts = [f"{'causal' if shape.causal else 'no causal cut'}, {shape.causal_align}"]
    if shape.window_left >= 0:
        parts.append(f"window_left {shape.window_left}")
    if shape.window_right >= 0:
        parts.append(f"window_right {shape.window_right}")
    return ", ".join(parts)


def refuse_unseeing_rows(out, shape, variant):
    """Unsupported when a case has rows that see no key (bottom-right with
    Sq > Sk, or a window past the keys) and the variant's output there is
    not zeros, as the contract defines it (PyTorch's fused kernels may
    write NaN). out is the output of one call, [B, H, Sq, D]."""
    seen = dense_mask(shape.mask_mod(), 1, shape.seq_q, shape.seq_k, out.device)[0, 0].any(dim=-1)
    if bool(seen.all()):
        return
    rows = out[:, :, ~seen]
    if bool((rows == 0).all()):
        return
    what = "NaN" if bool(rows.isnan().any()) else "values other than zeros"
    raise core.Unsupported(f"{variant}: PyTorch writes {what} in the {int((~seen).sum())} query rows that see no "
                           f"key ({shape})", "the contract defines such rows as zeros")


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


# ---------------------------------------------------------------- decode


def decode_mask_mod(d):
    """The decode mask as a FlexAttention mask_mod: key j is seen by query i
    of sequence b (position p = L_b - q_len + i) when j < L_b, j <= p if
    causal (bottom-right aligned), and j >= p - window_left if there is a
    window. It also takes broadcast index tensors (dense_mask)."""
    lengths, q_len, causal, window = d.cache_seqlens, d.q_len, d.causal, d.window_left

    def mask_mod(b, h, q_idx, kv_idx):
        length = lengths[b]
        pos = length - q_len + q_idx
        seen = kv_idx < length
        if causal:
            seen = seen & (kv_idx <= pos)
        if window >= 0:
            seen = seen & (kv_idx >= pos - window)
        return seen

    return mask_mod


def dense_mask(mask_mod, batch, q_len, kv_len, device):
    """mask_mod over every (b, query, key): a bool [B, 1, q_len, kv_len]."""
    b = torch.arange(batch, device=device)[:, None, None, None]
    q_idx = torch.arange(q_len, device=device)[None, None, :, None]
    kv_idx = torch.arange(kv_len, device=device)[None, None, None, :]
    return mask_mod(b, None, q_idx, kv_idx).expand(batch, 1, q_len, kv_len)


def softcap_score_mod(cap):
    """Logit soft-capping as a FlexAttention score_mod: s -> cap * tanh(s / cap),
    s being the scaled score."""

    def score_mod(score, b, h, q_idx, kv_idx):
        return cap * torch.tanh(score / cap)

    return score_mod


@functools.cache
def compiled_flex_attention():
    """torch.compile(flex_attention), one for the worker. Each new case
    (shapes, mask constants) compiles anew: the limit on recompilations is
    raised so that a long suite does not fall back to eager silently, and
    hitting it is an error rather than a silent fallback.

    Inductor compiles in the worker itself (compile_threads 1), unless
    TORCHINDUCTOR_COMPILE_THREADS says otherwise. Its default, a pool of
    compile workers, starts at the first compile even when every kernel
    comes from the cache: a process that imports torch (450-600 MB on an
    H100 machine) and forks up to a worker a core when it has work. It
    would live in the plugin's own cgroup, beside the rows the plugin
    times, where the walls cannot tell its CPU from the rows'. A
    flex-attention case is one Triton kernel, which a pool cannot split."""
    import torch._dynamo
    import torch._inductor.config
    from torch.nn.attention.flex_attention import flex_attention

    config = torch._dynamo.config
    config.recompile_limit = max(config.recompile_limit, 1024)
    config.accumulated_recompile_limit = max(config.accumulated_recompile_limit, 8192)
    config.fail_on_recompile_limit_hit = True
    if COMPILE_THREADS_VARIABLE not in os.environ:
        torch._inductor.config.compile_threads = 1
    return torch.compile(flex_attention, dynamic=False, fullgraph=True)


# The variable by which a user sets how many threads Inductor compiles in;
# where it is set, the worker leaves Inductor's compile_threads alone.
COMPILE_THREADS_VARIABLE = "TORCHINDUCTOR_COMPILE_THREADS"


def inductor_compile_threads():
    """How many threads Inductor compiles in, for the fact "compiled"."""
    import torch._inductor.config

    threads = torch._inductor.config.compile_threads
    return f"{threads} (in the worker, no pool of compile workers)" if threads == 1 else f"{threads} (a pool)"


# ---------------------------------------------------------------- varlen

# Where torch.nn.attention.varlen.varlen_attn runs: its FlashAttention-2
# kernel (aten::_flash_attention_forward) is CUDA's alone in torch 2.11.
VARLEN_ATTN_DEVICES = ("cuda",)


def varlen_attn_function():
    """torch.nn.attention.varlen.varlen_attn (imported when first used:
    older torch has no such module)."""
    from torch.nn.attention.varlen import varlen_attn

    return varlen_attn


def varlen_backend(device):
    """Which kernel varlen_attn runs, as its own dispatch decides:
    FlashAttention-2, or cuDNN where torch's _should_use_cudnn says so."""
    try:
        from torch.nn.attention import varlen

        cudnn = device.type == "cuda" and varlen._should_use_cudnn(device.index or 0)
    except Exception:  # a private function: its absence leaves the choice unknown
        return "FlashAttention-2 unless torch's varlen._should_use_cudnn picks cuDNN (it did not say)"
    if cudnn:
        return "cuDNN (aten::_cudnn_attention_forward), as torch's varlen._should_use_cudnn decides"
    return "FlashAttention-2 (aten::_flash_attention_forward); torch's varlen._should_use_cudnn said no"


def varlen_mask_mod(d):
    """The varlen mask over the pack as one sequence, as a FlexAttention
    mask_mod: packed query row i (of document b, its local index i - cu_q[b])
    sees packed key row j when j belongs to the same document and, at the
    query's key position p = Lk - Lq + (i - cu_q[b]) and the key's local
    index j - cu_k[b], causal (bottom-right) and the windows admit it. The
    per-row tables are built here, once, on the device."""
    device = d.q.device
    cu_q, cu_k = d.cu_seqlens_q.to(device).long(), d.cu_seqlens_k.to(device).long()
    lens_q, lens_k = cu_q[1:] - cu_q[:-1], cu_k[1:] - cu_k[:-1]
    docs = torch.arange(d.batch, device=device)
    q_doc = torch.repeat_interleave(docs, lens_q, output_size=d.total_q)
    k_doc = torch.repeat_interleave(docs, lens_k, output_size=d.total_k)
    # Each query's key position, and each key's index in its document.
    q_pos = torch.arange(d.total_q, device=device) - cu_q[q_doc] + (lens_k - lens_q)[q_doc]
    k_idx = torch.arange(d.total_k, device=device) - cu_k[k_doc]
    causal, left, right = d.causal, d.window_left, d.window_right

    def mask_mod(b, h, q_idx, kv_idx):
        pos, key = q_pos[q_idx], k_idx[kv_idx]
        seen = q_doc[q_idx] == k_doc[kv_idx]
        if causal:
            seen = seen & (key <= pos)
        if left >= 0:
            seen = seen & (key >= pos - left)
        if right >= 0:
            seen = seen & (key <= pos + right)
        return seen

    return mask_mod


def sdp_choice(q, k, v, mask, enable_gqa, scale):
    """The SDPBackend PyTorch's dispatch picks for these tensors (None if it
    will not say)."""
    try:
        return SDPBackend(torch._fused_sdp_choice(q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=False,
                                                   scale=scale, enable_gqa=enable_gqa))
    except Exception:  # a private function: its absence or refusal leaves the choice unknown
        return None


def describe_choice(choice, device):
    if choice is None:
        return "PyTorch's choice (torch._fused_sdp_choice did not say; the fact kernels names what ran)"
    where = "PyTorch's CPU kernel" if device.type != "cuda" else "the fact kernels names the kernels that ran"
    return f"{choice.name}, PyTorch's own dispatch for these tensors and this mask ({where})"


def timed_once(fn, device):
    """fn() and the microseconds it took: CUDA events on a GPU, the host's
    clock on the CPU."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        end.record()
        end.synchronize()
        return out, start.elapsed_time(end) * 1e3
    begin = time.perf_counter()
    out = fn()
    return out, (time.perf_counter() - begin) * 1e6
