"""The flashinfer backend: FlashInfer (the ``flashinfer-python`` wheel), the
attention library serving stacks (vLLM, SGLang) call, a third-party
library the user installs as an extra (``make setup EXTRAS=flashinfer``).
Its kernels are JIT-compiled with nvcc at a configuration's first use and
cached (under the plugin's cache directory, FLASHINFER_WORKSPACE_BASE).

Where to start: ``prepare_op`` (decode, varlen) and ``prepare`` (dense
attention forward). Each plans a FlashInfer wrapper in Prepare (``plan``,
on the host, as a serving step does once for all its layers) and times
``run`` alone, writing into an output buffer of its own (poisoned before
the checked call):

- decode, q_len 1: ``BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD",
  use_tensor_cores=H/KVH >= 4)``, planned with the pages as FlashInfer's
  CSR (indptr, indices, last_page_len), converted in Prepare from the
  host's block_table and cache_seqlens; ``run(q [B, H, D], (k_cache,
  v_cache), out=)``.
- decode, q_len > 1 (speculative decoding): ``BatchPrefillWithPagedKVCacheWrapper``
  with qo_indptr = q_len per sequence and causal (bottom-right aligned).
- varlen: ``BatchPrefillWithRaggedKVCacheWrapper`` planned with the
  host's cu_seqlens; ``run(q, k, v, out=)`` on the packed tensors.
- attention forward: the same ragged wrapper over B equal sequences, on q,
  k and v copied to [B·S, H, D] in Prepare. FlashInfer's causal mask and
  window are bottom-right aligned: a top-left causal or windowed case
  with seq_q != seq_k is refused.

Masks: window_left (FlashInfer's, inclusive) and logits_soft_cap (cap ·
tanh(scale · q·k / cap), the ops' softcap); FlashInfer has no right
window. ``Backend(device, library=module)`` takes the module to call: the
tests hand it a fake that records its calls.
"""

import functools
import os
import platform

import torch

import flashcore_extras as extras
import flashcore_worker as core
from flashcore_serving import Decode, Varlen

NAME = "flashinfer"
PACKAGE = "flashinfer-python"
MODULE = "flashinfer"
EXTRA = "flashinfer"
DECODE = "decode"
VARLEN = "varlen"
_HALF = ("fp16", "bf16")
# The head dims FlashInfer's prefill and decode kernels are instantiated
# for (its documented set).
HEAD_DIMS = (64, 128, 256)
# FlashInfer's recommended float workspace (its wrappers' docstrings).
WORKSPACE_BYTES = 128 << 20
# From this many query heads per K/V head, the decode wrapper uses tensor
# cores (FlashInfer's advice for grouped-query attention, as serving
# stacks set use_tensor_cores).
TENSOR_CORE_GROUP = 4


def use_plugin_cache():
    """FlashInfer writes its JIT-compiled kernels under
    $FLASHINFER_WORKSPACE_BASE/.cache/flashinfer (default: the home
    directory, which a confined plugin may not write): point it at the
    plugin's own cache directory, which the host gives it and keeps between
    runs, unless the user chose one. The ninja that its JIT runs comes with
    the ninja wheel; its folder goes on PATH when it is not there."""
    cache = os.environ.get("FLASHCORE_CACHE_DIR")
    if cache:
        os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", cache)
    try:
        import ninja
    except ImportError:
        return
    folder = getattr(ninja, "BIN_DIR", "")
    if folder and folder not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")


class Backend:
    def __init__(self, device, library=None):
        self.device = device
        if library is None:
            use_plugin_cache()
            library = extras.load_library(MODULE, PACKAGE, EXTRA)
        self.fi = library
        self.version = extras.package_version(PACKAGE, library)
        self.build = f"python {platform.python_version()}, torch {torch.__version__}, {PACKAGE} {self.version}"
        self._workspace = None

    def variants(self):
        attention = core.capabilities(_HALF, head_dims=HEAD_DIMS, needs_gpu=True,
                                      masks=["bottom-right", "window", "softcap"])
        serving = core.op_capabilities(_HALF, head_dims=HEAD_DIMS, needs_gpu=True, grouped_query_heads=True,
                                       causal=True, non_causal=True, masks=["window", "softcap"])
        return [{
            "name": NAME,
            "description": (f"FlashInfer {self.version}: BatchDecodeWithPagedKVCacheWrapper (paged decode), "
                            f"BatchPrefillWithPagedKVCacheWrapper (decode with q_len > 1), "
                            f"BatchPrefillWithRaggedKVCacheWrapper (varlen, and dense attention as B equal "
                            f"sequences); planned in Prepare, run() timed; JIT-compiled with nvcc at first use"),
            "ops": [core.ATTENTION, DECODE, VARLEN],
            "capabilities": attention,
            "op_capabilities": {DECODE: serving, VARLEN: serving},
        }]

    @property
    def workspace(self):
        """The float workspace every wrapper shares (zeroed, as FlashInfer
        asks for its first use)."""
        if self._workspace is None:
            self._workspace = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=self.device)
        return self._workspace

    # ------------------------------------------------------------ attention

    def prepare(self, case):
        s = case.shape
        if not s.bottom_right and s.seq_q != s.seq_k and (s.causal or s.windowed):
            what = "causal" if s.causal else "a window"
            raise core.Unsupported(
                f"{NAME}: {what} with seq_q {s.seq_q} != seq_k {s.seq_k}, top-left",
                "FlashInfer aligns causal masks and windows bottom-right; this case's mask is top-left (PyTorch's "
                "is_causal); causal_align = \"bottom-right\" is the case it runs")
        if s.window_right >= 0 and not s.causal:
            raise core.Unsupported(f"{NAME}: window_right {s.window_right} ({s})",
                                   "FlashInfer's prefill takes a left window (window_left) alone")
        q, k, v = (t.transpose(1, 2).contiguous().view(-1, t.shape[1], t.shape[3]) for t in (case.q, case.k, case.v))
        qo_indptr = torch.arange(s.batch + 1, dtype=torch.int32, device=self.device) * s.seq_q
        kv_indptr = torch.arange(s.batch + 1, dtype=torch.int32, device=self.device) * s.seq_k
        wrapper = self.fi.BatchPrefillWithRaggedKVCacheWrapper(self.workspace, "NHD")
        plan = functools.partial(wrapper.plan, qo_indptr, kv_indptr, s.heads, s.kv_heads, s.head_dim,
                                 causal=s.causal, window_left=s.window_left, logits_soft_cap=s.softcap or None,
                                 sm_scale=s.scale, q_data_type=q.dtype, kv_data_type=k.dtype)
        out = torch.empty_like(q)

        def call():
            return wrapper.run(q, k, v, out=out)

        def run():
            call()
            return out.view(s.batch, s.seq_q, s.heads, s.head_dim).transpose(1, 2)

        facts = self._facts(
            f"BatchPrefillWithRaggedKVCacheWrapper(workspace, \"NHD\").run(q, k, v, out=) after plan(qo_indptr, "
            f"kv_indptr, {s.heads}, {s.kv_heads}, {s.head_dim}, causal={s.causal}, window_left={s.window_left}, "
            f"logits_soft_cap={s.softcap or None}, sm_scale={s.scale:.6g})",
            "run() alone, planned in Prepare")
        facts["layout"] = ("q, k, v copied to [B·S, H, D] in Prepare, outside the time; B sequences of equal "
                           "length (qo_indptr, kv_indptr); the output is returned as a [B, H, S, D] view")
        self._plan_and_probe(plan, call, str(s), facts, wrapper)
        return core.Kernel(run, facts=facts, output=out)

    # ------------------------------------------------------------ serving

    def prepare_op(self, case):
        if case.op == DECODE:
            return self._prepare_decode(case)
        if case.op == VARLEN:
            return self._prepare_varlen(case)
        if case.op == core.ATTENTION:
            raise ValueError(f"{NAME} runs attention's forward alone, not mode {case.mode}")
        raise ValueError(f"{NAME} runs attention, decode and varlen, not {case.op}")

    def _prepare_decode(self, case):
        d = Decode.of(case)
        indptr, indices, last_page_len = paged_csr(d.block_table, d.cache_seqlens, d.page_size)
        kv = (d.k_cache, d.v_cache)
        common = dict(window_left=d.window_left, logits_soft_cap=d.softcap or None, sm_scale=d.scale,
                      q_data_type=d.q.dtype, kv_data_type=d.k_cache.dtype)
        group = d.heads // d.kv_heads
        if d.q_len == 1:
            tensor_cores = group >= TENSOR_CORE_GROUP
            wrapper = self.fi.BatchDecodeWithPagedKVCacheWrapper(self.workspace, "NHD",
                                                                 use_tensor_cores=tensor_cores)
            plan = functools.partial(wrapper.plan, indptr, indices, last_page_len, d.heads, d.kv_heads,
                                     d.head_dim, d.page_size, **common)
            q = d.q.view(d.batch, d.heads, d.head_dim)
            function = (f"BatchDecodeWithPagedKVCacheWrapper(workspace, \"NHD\", use_tensor_cores={tensor_cores})"
                        f".run(q [B, H, D], (k_cache, v_cache), out=)")
        else:
            wrapper = self.fi.BatchPrefillWithPagedKVCacheWrapper(self.workspace, "NHD")
            qo_indptr = torch.arange(d.batch + 1, dtype=torch.int32, device=self.device) * d.q_len
            plan = functools.partial(wrapper.plan, qo_indptr, indptr, indices, last_page_len, d.heads,
                                     d.kv_heads, d.head_dim, d.page_size, causal=d.causal, **common)
            q = d.q.view(d.batch * d.q_len, d.heads, d.head_dim)
            function = (f"BatchPrefillWithPagedKVCacheWrapper(workspace, \"NHD\").run(q [B·q_len, H, D], "
                        f"(k_cache, v_cache), out=) with causal={d.causal} (bottom-right)")
        out = torch.empty_like(q)

        def run():
            wrapper.run(q, kv, out=out)
            return out.view(d.q.shape)

        facts = self._facts(f"{function} after plan(indptr, indices, last_page_len, {d.heads}, {d.kv_heads}, "
                            f"{d.head_dim}, {d.page_size}, window_left={d.window_left}, "
                            f"logits_soft_cap={d.softcap or None}, sm_scale={d.scale:.6g})",
                            "run() alone, on the pages as the host wrote them (no gather), planned in Prepare")
        facts["pages"] = ("block_table and cache_seqlens converted in Prepare to FlashInfer's CSR: indptr [B+1], "
                          "indices (each sequence's pages in order, from its table row), last_page_len [B]")
        self._plan_and_probe(plan, run, str(d), facts, wrapper)
        return core.Kernel(run, facts=facts, output=out)

    def _prepare_varlen(self, case):
        d = Varlen.of(case)
        if d.window_right >= 0 and not d.causal:
            raise core.Unsupported(f"{NAME}: window_right {d.window_right} ({d})",
                                   "FlashInfer's prefill takes a left window (window_left) alone")
        wrapper = self.fi.BatchPrefillWithRaggedKVCacheWrapper(self.workspace, "NHD")
        plan = functools.partial(wrapper.plan, d.cu_seqlens_q, d.cu_seqlens_k, d.heads, d.kv_heads, d.head_dim,
                                 causal=d.causal, window_left=d.window_left, logits_soft_cap=d.softcap or None,
                                 sm_scale=d.scale, q_data_type=d.q.dtype, kv_data_type=d.k.dtype)
        out = torch.empty_like(d.q)

        def run():
            wrapper.run(d.q, d.k, d.v, out=out)
            return out

        facts = self._facts(f"BatchPrefillWithRaggedKVCacheWrapper(workspace, \"NHD\").run(q, k, v, out=) after "
                            f"plan(cu_seqlens_q, cu_seqlens_k, {d.heads}, {d.kv_heads}, {d.head_dim}, "
                            f"causal={d.causal}, window_left={d.window_left}, logits_soft_cap={d.softcap or None}, "
                            f"sm_scale={d.scale:.6g})",
                            "run() alone, on the packed tensors as the host wrote them, planned in Prepare")
        self._plan_and_probe(plan, run, str(d), facts, wrapper)
        return core.Kernel(run, facts=facts, output=out)

    # ------------------------------------------------------------ shared

    def _plan_and_probe(self, plan, run, what, facts, wrapper):
        """Plans the wrapper and runs its first call (JIT compilation), each
        with FlashInfer's refusals as Unsupported; their times go into the
        facts, outside the samples."""
        with extras.refusals(NAME, "flashinfer", what):
            _, planned = extras.first_call(plan, self.device)
        facts["plan"] = f"plan() in Prepare took {planned * 1e3:.1f} ms, outside the time"
        facts["first_call"] = extras.first_call_fact(extras.probe(run, self.device, NAME, "flashinfer", what))
        backend = getattr(wrapper, "_backend", None)
        if backend:
            facts["flashinfer_backend"] = str(backend)

    def _facts(self, function, timed):
        return {
            PACKAGE: self.version,
            "function": f"flashinfer.{function}",
            "timed": timed,
            "output_poison": "applied: run() writes into an output buffer of the backend's (out=)",
        }


def paged_csr(block_table, cache_seqlens, page_size):
    """FlashInfer's paged layout from FlashAttention's: indptr [B+1] (int32)
    where sequence b's pages are indices[indptr[b]:indptr[b+1]], the pages
    its length needs from its block_table row in order, and last_page_len
    [B], the slots used of its last page."""
    lengths = cache_seqlens.to(torch.int64)
    pages = (lengths + page_size - 1) // page_size
    indptr = torch.zeros(lengths.numel() + 1, dtype=torch.int32, device=block_table.device)
    indptr[1:] = torch.cumsum(pages, 0).to(torch.int32)
    used = torch.arange(block_table.shape[1], device=block_table.device)[None, :] < pages[:, None]
    indices = block_table[used].to(torch.int32).contiguous()
    last = torch.where(pages > 0, lengths - (pages - 1) * page_size, torch.zeros_like(lengths)).to(torch.int32)
    return indptr, indices, last
