"""The flash-attn-4 backend: FlashAttention-4 (the ``flash-attn-4`` wheel,
module ``flash_attn.cute``), a third-party library the user installs as an
extra (``make setup EXTRAS=fa4``). On an H100 it runs FlashAttention-3-class
kernels (CuTe DSL, JIT-compiled at a case's first call).

Where to start: ``Backend.prepare`` (attention forward) and
``prepare_op`` (attention's backward modes, decode, varlen). Each builds
one Kernel whose run() is exactly one library call:

- attention: ``flash_attn_func(q, k, v, softmax_scale=, causal=)`` on q, k
  and v copied in Prepare to FlashAttention's [B, S, H, D] layout (the
  host's are [B, H, S, D]); the output is returned as a [B, H, S, D] view.
  Grouped-query heads are native (K and V keep their KVH heads). Its
  causal mask and windows are bottom-right aligned: the op's masks
  (causal_align = "bottom-right", window_left, window_right, softcap) map
  onto causal, window_size and softcap, and a top-left causal or windowed
  case with seq_q != seq_k is refused.
- attention bwd and fwd+bwd: the same call through autograd
  (flashcore_worker.autograd_run).
- decode: ``flash_attn_varlen_func(q, k_cache, v_cache, seqused_k=,
  page_table=, softmax_scale=, causal=, window_size=, softcap=,
  num_splits=)`` on the host's tensors as they are (the layouts are
  flash_attn_with_kvcache's); num_splits is 0, FlashAttention's own
  split heuristic, on sm100 and later, and 1 on sm90, where it has no
  split-KV (decode_splits).
- varlen: ``flash_attn_varlen_func(q, k, v, cu_seqlens_q=, cu_seqlens_k=,
  max_seqlen_q=, max_seqlen_k=, ...)`` on the packed tensors as they are.

The first call of each case (JIT compilation) runs in Prepare and is
reported on its own (the fact "first_call"); the library's refusals of a
case (its asserts) are Unsupported rows in its own words.

``Backend(device, library=module)`` takes the module to call: the tests
hand it a fake that records its calls.
"""

import functools
import platform

import torch

import flashcore_extras as extras
import flashcore_worker as core
from flashcore_serving import Decode, Varlen

NAME = "flash-attn-4"
PACKAGE = "flash-attn-4"
MODULE = "flash_attn.cute"
EXTRA = "fa4"
DECODE = "decode"
VARLEN = "varlen"
_HALF = ("fp16", "bf16")


def head_dims_for(capability):
    """The head dims FlashAttention-4 takes on a device of this compute
    capability (its _validate_head_dims): multiples of 8 up to 256 on sm90,
    up to 128 and 256 on sm100/sm110; () (any: the library decides) on
    others."""
    major = capability[0]
    if major == 9:
        return tuple(range(8, 257, 8))
    if major in (10, 11):
        return tuple(range(8, 129, 8)) + (256,)
    return ()


def decode_splits(capability):
    """num_splits for decode: 0 (FlashAttention-4's own split heuristic)
    where it splits the keys, sm100 and later; 1 on sm90 and earlier, where
    FlashAttention-4 4.0.0b36 asserts "SplitKV not supported on SM 9.0"
    whenever its heuristic picks more than one split (seen on an H100)."""
    return 0 if capability[0] >= 10 else 1


SPLITS_FACT = {
    0: "0: FlashAttention-4's own split-KV heuristic (num_splits_heuristic)",
    1: "1: no split along the keys (FlashAttention-4 has no split-KV on sm90 and earlier)",
}


class Backend:
    def __init__(self, device, library=None):
        self.device = device
        self.fa = library if library is not None else extras.load_library(MODULE, PACKAGE, EXTRA)
        self.version = extras.package_version(PACKAGE, self.fa)
        self.build = (f"python {platform.python_version()}, torch {torch.__version__}, {PACKAGE} {self.version}, "
                      f"nvidia-cutlass-dsl {extras.package_version('nvidia-cutlass-dsl')}")
        self.capability = torch.cuda.get_device_capability(device) if device.type == "cuda" else (0, 0)

    def variants(self):
        head_dims = head_dims_for(self.capability)
        attention = core.capabilities(_HALF, head_dims=head_dims, needs_gpu=True, modes=core.MODES,
                                      masks=["bottom-right", "window", "softcap"])
        serving = core.op_capabilities(_HALF, head_dims=head_dims, needs_gpu=True, grouped_query_heads=True,
                                       causal=True, non_causal=True, masks=["window", "softcap"])
        return [{
            "name": NAME,
            "description": (f"FlashAttention-4 {self.version} ({MODULE}, CuTe DSL, JIT-compiled; "
                            f"FlashAttention-3-class kernels on sm90): flash_attn_func forward and backward, "
                            f"flash_attn_varlen_func for varlen and paged-KV decode (page_table, num_splits=0)"),
            "ops": [core.ATTENTION, DECODE, VARLEN],
            "capabilities": attention,
            "op_capabilities": {DECODE: serving, VARLEN: serving},
        }]

    # ------------------------------------------------------------ attention

    def prepare(self, case):
        s = case.shape
        refuse_top_left(s)
        q, k, v = (to_bshd(t) for t in (case.q, case.k, case.v))
        window = fa_window((s.window_left, s.window_right))
        call = functools.partial(self.fa.flash_attn_func, softmax_scale=s.scale, causal=s.causal, window_size=window,
                                 softcap=s.softcap)

        def run():
            out, _ = call(q, k, v)
            return out.transpose(1, 2)

        facts = self._facts(f"flash_attn.cute.flash_attn_func(q, k, v, softmax_scale={s.scale:.6g}, "
                            f"causal={s.causal}, window_size={window}, softcap={s.softcap:g})",
                            "the forward, one call")
        facts["layout"] = LAYOUT_FACT
        facts["first_call"] = extras.first_call_fact(self._probe(run, str(s)))
        return core.Kernel(run, facts=facts)

    def prepare_op(self, case):
        if case.op == core.ATTENTION:
            return self._prepare_backward(case)
        if case.op == DECODE:
            return self._prepare_decode(case)
        if case.op == VARLEN:
            return self._prepare_varlen(case)
        raise ValueError(f"{NAME} runs attention, decode and varlen, not {case.op}")

    def _prepare_backward(self, case):
        s = case.shape
        refuse_top_left(s)
        leaves = tuple(to_bshd(case.inputs[name]).requires_grad_() for name in ("q", "k", "v"))
        do = to_bshd(case.inputs["do"])
        call = functools.partial(self.fa.flash_attn_func, softmax_scale=s.scale, causal=s.causal)

        def forward(q, k, v):
            out, _ = call(q, k, v)
            return out

        with extras.refusals(NAME, "flash_attn", str(s)):
            autograd, timed = core.autograd_run(forward, leaves, do, s.mode)

        def run():
            # [B, S, H, D] grads (and output) returned as [B, H, S, D] views.
            return tuple(t.transpose(1, 2) for t in autograd())

        facts = self._facts(f"torch.autograd.grad of flash_attn.cute.flash_attn_func(q, k, v, softmax_scale="
                            f"{s.scale:.6g}, causal={s.causal})", timed)
        facts["layout"] = LAYOUT_FACT
        facts["backward_inputs"] = ("autograd of FlashAttention-4's own forward; the host's o and lse are not read"
                                    if s.mode == core.BWD else "q, k, v and do")
        facts["first_call"] = extras.first_call_fact(self._probe(run, str(s)))
        return core.Kernel(run, facts=facts)

    # ------------------------------------------------------------ serving

    def _prepare_decode(self, case):
        d = Decode.of(case)
        seqlens = d.cache_seqlens.to(torch.int32).contiguous()
        table = d.block_table.to(torch.int32).contiguous()
        window = fa_window(d.window_size)
        splits = decode_splits(self.capability)
        call = functools.partial(self.fa.flash_attn_varlen_func, d.q, d.k_cache, d.v_cache, seqused_k=seqlens,
                                 page_table=table, softmax_scale=d.scale, causal=d.causal, window_size=window,
                                 softcap=d.softcap, num_splits=splits)

        def run():
            out, _ = call()
            return out

        facts = self._facts(f"flash_attn.cute.flash_attn_varlen_func(q, k_cache, v_cache, seqused_k=cache_seqlens, "
                            f"page_table=block_table, softmax_scale={d.scale:.6g}, causal={d.causal}, "
                            f"window_size={window}, softcap={d.softcap:g}, num_splits={splits})",
                            "the call alone, on the pages as the host wrote them (no gather)")
        facts["num_splits"] = SPLITS_FACT[splits]
        facts["first_call"] = extras.first_call_fact(self._probe(run, str(d)))
        return core.Kernel(run, facts=facts)

    def _prepare_varlen(self, case):
        d = Varlen.of(case)
        window = fa_window(d.window_size)
        call = functools.partial(self.fa.flash_attn_varlen_func, d.q, d.k, d.v, cu_seqlens_q=d.cu_seqlens_q,
                                 cu_seqlens_k=d.cu_seqlens_k, max_seqlen_q=d.max_seqlen_q,
                                 max_seqlen_k=d.max_seqlen_k, softmax_scale=d.scale, causal=d.causal,
                                 window_size=window, softcap=d.softcap)

        def run():
            out, _ = call()
            return out

        facts = self._facts(f"flash_attn.cute.flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, "
                            f"max_seqlen_q={d.max_seqlen_q}, max_seqlen_k={d.max_seqlen_k}, softmax_scale="
                            f"{d.scale:.6g}, causal={d.causal}, window_size={window}, softcap={d.softcap:g})",
                            "the call alone, on the packed tensors as the host wrote them")
        facts["first_call"] = extras.first_call_fact(self._probe(run, str(d)))
        return core.Kernel(run, facts=facts)

    # ------------------------------------------------------------ shared

    def _probe(self, run, what):
        return extras.probe(run, self.device, NAME, "flash_attn", what)

    def _facts(self, function, timed):
        return {
            PACKAGE: self.version,
            "function": function,
            "timed": timed,
            "output_poison": "not applied: FlashAttention-4 allocates its output; the returned tensor is written",
        }


LAYOUT_FACT = ("q, k, v (and do) copied to FlashAttention's [B, S, H, D] layout in Prepare, outside the time; "
               "the outputs are returned as [B, H, S, D] views")


def to_bshd(t):
    """[B, H, S, D] to a contiguous [B, S, H, D] copy."""
    return t.transpose(1, 2).contiguous()


def fa_window(window_size):
    """A (left, right) window with -1 for unbounded as FlashAttention-4
    takes it: None for unbounded."""
    return tuple(None if w < 0 else w for w in window_size)


def refuse_top_left(shape, library="FlashAttention-4", name=NAME):
    """FlashAttention (and FlashInfer) align causal masks and windows
    bottom-right (query i sits at key position i + seq_k - seq_q); the
    attention op's default alignment is top-left (PyTorch's is_causal). The
    two are one mask when seq_q == seq_k or nothing is measured from the
    diagonal (no causal cut, no window); a case with causal_align =
    "bottom-right" is what the library computes."""
    if shape.bottom_right or shape.seq_q == shape.seq_k or not (shape.causal or shape.windowed):
        return
    what = "causal" if shape.causal else "a window"
    raise core.Unsupported(
        f"{name}: {what} with seq_q {shape.seq_q} != seq_k {shape.seq_k}, top-left",
        f"{library} aligns causal masks and windows bottom-right; this case's mask is top-left (PyTorch's "
        f"is_causal); causal_align = \"bottom-right\" is the case it runs")
