"""The pytorch-sdpa backend's varlen variants on the CPU: flex-attention (the
pack as one sequence under a document mask) against the fp64 reference of
helpers.varlen_reference, and sdpa-varlen (torch's varlen_attn, CUDA only):
its skip on the CPU, and its translation of the case's masking into
window_size, through a stand-in that computes what FlashAttention's
window_size means."""

import dataclasses
import math

import pytest
import torch

import flashcore_worker as core
import sdpa_backend
from helpers import (
    VARLEN_TOLERANCE,
    assert_varlen_close,
    decode_error,
    make_varlen_case,
    make_varlen_tensors,
    read_outputs,
    tensor_file,
    varlen_lengths,
    varlen_params,
    varlen_reference,
)

CPU = torch.device("cpu")
QUICK = {"warmup_runs": 1, "warmup_time": 0, "min_samples": 3, "max_samples": 6, "target_noise": 0.5,
         "time_cap": 5_000_000_000, "l2": "hot", "call_samples": 2}
UNEVEN = (1, 37, 70, 5)  # a single-token sequence, and lengths that are no multiple of a block


@dataclasses.dataclass(frozen=True)
class Spec:
    """One varlen case: the lengths, the cached prefix and the masking."""

    q_lens: tuple
    dtype: str
    prefix: int = 0  # keys per sequence beyond its queries (seq_k - seq_q)
    causal: bool = True
    window_left: int = -1
    window_right: int = -1
    softcap: float = 0.0
    heads: int = 8
    kv_heads: int = 2  # grouped-query heads, 4:1
    head_dim: int = 64

    @property
    def masking(self):
        return {"causal": self.causal, "window_left": self.window_left, "window_right": self.window_right,
                "softcap": self.softcap}

    def tensors(self, seed=0):
        return make_varlen_tensors(seed, list(self.q_lens), self.heads, self.kv_heads, self.head_dim, self.dtype,
                                   prefix=self.prefix)

    def __str__(self):
        text = f"L{'.'.join(map(str, self.q_lens))}+{self.prefix}-{self.dtype}"
        text += "-causal" if self.causal else "-full"
        text += f"-wl{self.window_left}" if self.window_left >= 0 else ""
        text += f"-wr{self.window_right}" if self.window_right >= 0 else ""
        text += f"-cap{self.softcap:g}" if self.softcap else ""
        return text + f"-H{self.heads}x{self.kv_heads}-D{self.head_dim}"


SPECS = [
    Spec(UNEVEN, "fp32"),
    Spec(UNEVEN, "fp16", prefix=20),
    Spec(UNEVEN, "fp32", prefix=20, causal=False),
    Spec((33, 1, 64), "bf16", prefix=45, heads=4, kv_heads=4, head_dim=128),
    Spec(UNEVEN, "fp16", prefix=10, window_left=13),
    Spec(UNEVEN, "fp32", prefix=10, causal=False, window_left=9, window_right=4),
    Spec((50, 3, 70), "fp32", causal=False, window_right=6, heads=8, kv_heads=1),
]
SOFTCAP_SPECS = [
    Spec(UNEVEN, "fp32", prefix=20, softcap=1.0),
    Spec((50, 3, 70), "fp16", prefix=4, softcap=2.0, window_left=20, causal=False),
]


@pytest.fixture(scope="module")
def worker():
    return core.Worker(sdpa_backend.Backend(CPU), CPU)


def served(worker, tmp_path, variant, spec, seed=0):
    """Prepares spec's case on the worker; returns the request, the inputs
    and what Prepare answered."""
    inputs = spec.tensors(seed)
    request, digest = make_varlen_case(tmp_path, variant, inputs, spec.dtype, **spec.masking)
    prepared = worker.handle("prepare", request)
    assert prepared["loaded_sha256"] == digest
    return request, inputs, prepared


def fetched(worker, request):
    worker.handle("fetch", {"case_id": "case"})
    return read_outputs(request)["o"]


# ---------------------------------------------------------------- the reference has teeth


def test_the_reference_tells_wrong_varlens_apart():
    """The checks can fail: attending across the sequences (cu_seqlens
    ignored), top-left causal alignment with a cached prefix, and a dropped
    window or softcap each give outputs far outside the tolerance."""
    spec = Spec(UNEVEN, "fp32", prefix=20)
    inputs = spec.tensors()
    want = varlen_reference(inputs)
    tol = VARLEN_TOLERANCE["fp16"]
    assert decode_error(varlen_reference(inputs, use_cu_seqlens=False), want) > 10 * tol
    assert decode_error(varlen_reference(inputs, align="top-left"), want) > 10 * tol
    full = varlen_reference(inputs, causal=False)
    assert decode_error(varlen_reference(inputs, causal=False, use_cu_seqlens=False), full) > 10 * tol
    assert decode_error(varlen_reference(inputs, window_left=7), want) > 10 * tol
    assert decode_error(varlen_reference(inputs, causal=False, window_right=3), full) > 10 * tol
    assert decode_error(varlen_reference(inputs, softcap=0.5), want) > 10 * tol


def test_the_reference_matches_sdpa_per_sequence():
    """The reference against PyTorch's SDPA run sequence by sequence, with
    the bottom-right causal mask written out."""
    spec = Spec((5, 12), "fp32", prefix=6)
    inputs = spec.tensors(seed=1)
    want = varlen_reference(inputs)
    cu_q, cu_k = inputs["cu_seqlens_q"].tolist(), inputs["cu_seqlens_k"].tolist()
    for b, (lq, lk) in enumerate(varlen_lengths(inputs)):
        q = inputs["q"][cu_q[b]:cu_q[b + 1]].double().transpose(0, 1)  # [H, Lq, D]
        k, v = (inputs[n][cu_k[b]:cu_k[b + 1]].double().transpose(0, 1) for n in ("k", "v"))
        mask = torch.arange(lk)[None, :] <= torch.arange(lq)[:, None] + lk - lq
        got = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        torch.testing.assert_close(got.transpose(0, 1), want[cu_q[b]:cu_q[b + 1]], rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------- flex-attention


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_flex_attention_matches_the_reference(worker, tmp_path, spec):
    request, inputs, prepared = served(worker, tmp_path, "flex-attention", spec, seed=3)
    assert "diagnostics" not in prepared, prepared
    got = fetched(worker, request)
    assert got.shape == inputs["q"].shape
    assert_varlen_close(got, varlen_reference(inputs, **spec.masking), spec.dtype)
    # A kernel that attends across the sequences would not pass.
    assert decode_error(got, varlen_reference(inputs, **spec.masking, use_cu_seqlens=False)) > 0.1
    worker.handle("release", {"case_id": "case"})


@pytest.mark.parametrize("spec", SOFTCAP_SPECS, ids=str)
def test_flex_attention_applies_softcap(worker, tmp_path, spec):
    request, inputs, prepared = served(worker, tmp_path, "flex-attention", spec, seed=4)
    assert "diagnostics" not in prepared, prepared
    assert prepared["facts"]["score_mod"] == f"softcap: {spec.softcap:g} * tanh(s / {spec.softcap:g})"
    got = fetched(worker, request)
    assert_varlen_close(got, varlen_reference(inputs, **spec.masking), spec.dtype)
    assert decode_error(got, varlen_reference(inputs, **{**spec.masking, "softcap": 0.0})) > 0.05


def test_flex_attention_facts(worker, tmp_path):
    spec = SPECS[5]
    _, inputs, prepared = served(worker, tmp_path, "flex-attention", spec)
    facts = prepared["facts"]
    assert facts["compiled"].startswith("no: eager on the CPU")
    total_q, total_k = inputs["q"].shape[0], inputs["k"].shape[0]
    assert facts["block_mask"].startswith(f"create_block_mask in Prepare over [{total_q}, {total_k}], ")
    assert facts["block_mask"].endswith("same document (from the cu_seqlens), no causal cut, window_left 9, "
                                        "window_right 4")
    assert facts["function"].endswith("over the pack as one sequence, under a document mask")
    assert facts["score_mod"] == "none" and facts["gqa"] == "enable_gqa=True"


def test_the_timed_output_is_checked_too(worker, tmp_path):
    spec = SPECS[4]
    request, inputs, _ = served(worker, tmp_path, "flex-attention", spec, seed=5)
    timed = tensor_file("o", tmp_path / "timed.bin", list(inputs["q"].shape), spec.dtype)
    samples = worker.handle("run", {"case_id": "case", "measurement": QUICK, "outputs": [timed]})
    assert samples["method"] == "wall-clock" and 3 <= len(samples["kernel_times"]) <= 6
    got = read_outputs({"outputs": [timed]})["o"]
    assert_varlen_close(got, varlen_reference(inputs, **spec.masking), spec.dtype)
    worker.handle("release", {"case_id": "case"})


def test_the_block_mask_is_built_in_prepare_not_in_the_call(worker, tmp_path, monkeypatch):
    built = []
    mask_mod = sdpa_backend.varlen_mask_mod
    monkeypatch.setattr(sdpa_backend, "varlen_mask_mod", lambda d: built.append(1) or mask_mod(d))
    served(worker, tmp_path, "flex-attention", SPECS[1])
    assert len(built) == 1
    worker.handle("run", {"case_id": "case", "measurement": QUICK})
    assert len(built) == 1
    worker.handle("release", {"case_id": "case"})


def test_compiled_flex_attention_on_the_cpu(tmp_path):
    """The compiled path (the GPU's) on the CPU: the document mask's
    tables are tensors the compiled mask_mod reads, and it matches the
    reference."""
    backend = sdpa_backend.Backend(CPU)
    backend.compile_flex = True
    spec = Spec(UNEVEN, "fp32", prefix=6, window_left=9, softcap=1.0)
    inputs = spec.tensors(seed=6)
    case = core.OpCase("case", "flex-attention", "varlen", varlen_params(inputs, spec.dtype, **spec.masking), {},
                       CPU, inputs, [])
    kernel = backend.prepare_op(case)
    assert kernel.facts["compiled"].startswith("yes: torch.compile(flex_attention, dynamic=False, fullgraph=True)")
    assert_varlen_close(kernel.run(), varlen_reference(inputs, **spec.masking), spec.dtype)


# ---------------------------------------------------------------- sdpa-varlen


def test_sdpa_varlen_is_a_skip_on_the_cpu(worker, tmp_path):
    """varlen_attn's kernel is CUDA's alone: its capabilities say needs_gpu,
    so the bridge skips it in Go; a case that reaches the worker all the
    same is refused with the reason."""
    _, _, prepared = served(worker, tmp_path, "sdpa-varlen", SPECS[1])
    (diag,) = prepared["diagnostics"]
    assert diag["severity"] == "unsupported"
    assert diag["summary"] == "sdpa-varlen: varlen_attn runs on CUDA only, not on the CPU"
    assert "aten::_flash_attention_forward" in diag["detail"]


def test_varlen_attn_really_has_no_cpu_kernel():
    """What the skip says: torch's varlen_attn refuses CPU tensors (if a
    later torch runs them, the variant can drop needs_gpu)."""
    inputs = Spec((3, 5), "fp16", heads=2, kv_heads=2).tensors()
    with pytest.raises((NotImplementedError, RuntimeError)):
        sdpa_backend.varlen_attn_function()(inputs["q"], inputs["k"], inputs["v"], inputs["cu_seqlens_q"],
                                            inputs["cu_seqlens_k"], 5, 5)


def flash_varlen(calls):
    """A stand-in for varlen_attn on the CPU that computes what
    FlashAttention's varlen forward computes for a window_size, as torch's
    varlen_attn documents it: (-1, 0) is causal, bottom-right aligned;
    (left, right) bounds key j of a query at key position p = Lk - Lq + i by
    p - left <= j <= p + right, -1 unbounded. It records each call."""
    def varlen_attn(q, k, v, cu_q, cu_k, max_q, max_k, *, return_aux=None, scale=None, window_size=(-1, -1)):
        calls.append({"max": (max_q, max_k), "scale": scale, "window_size": window_size})
        left, right = window_size
        if tuple(window_size) == (-1, 0):
            right = 0  # is_causal
        group = q.shape[1] // k.shape[1]
        out = torch.empty_like(q)
        cu_q, cu_k = cu_q.tolist(), cu_k.tolist()
        for b in range(len(cu_q) - 1):
            lq, lk = cu_q[b + 1] - cu_q[b], cu_k[b + 1] - cu_k[b]
            qb = q[cu_q[b]:cu_q[b + 1]].float().transpose(0, 1)  # [H, Lq, D]
            kb, vb = (t[cu_k[b]:cu_k[b + 1]].float().repeat_interleave(group, 1).transpose(0, 1) for t in (k, v))
            pos = torch.arange(lq)[:, None] + lk - lq
            key = torch.arange(lk)[None, :]
            seen = torch.ones(lq, lk, dtype=torch.bool)
            if left >= 0:
                seen &= key >= pos - left
            if right >= 0:
                seen &= key <= pos + right
            scores = (qb @ kb.transpose(1, 2) * scale).masked_fill(~seen, -math.inf)
            out[cu_q[b]:cu_q[b + 1]] = (scores.softmax(-1) @ vb).transpose(0, 1).to(q.dtype)
        return out

    return varlen_attn


@pytest.fixture
def stand_in(monkeypatch):
    """sdpa-varlen on the CPU, varlen_attn replaced by flash_varlen."""
    calls = []
    monkeypatch.setattr(sdpa_backend, "VARLEN_ATTN_DEVICES", ("cuda", "cpu"))
    monkeypatch.setattr(sdpa_backend, "varlen_attn_function", lambda: flash_varlen(calls))
    return core.Worker(sdpa_backend.Backend(CPU), CPU), calls


@pytest.mark.parametrize("spec, window_size", [
    (Spec(UNEVEN, "fp16"), (-1, 0)),
    (Spec(UNEVEN, "bf16", prefix=20), (-1, 0)),
    (Spec(UNEVEN, "fp16", prefix=20, causal=False), (-1, -1)),
    (Spec(UNEVEN, "fp16", prefix=10, window_left=13), (13, 0)),
    (Spec(UNEVEN, "fp16", prefix=10, window_left=13, window_right=5), (13, 0)),  # causal bounds it tighter
    (Spec(UNEVEN, "fp16", prefix=10, causal=False, window_left=9, window_right=4), (9, 4)),
    (Spec((50, 3, 70), "fp16", causal=False, window_right=6, kv_heads=1), (-1, 6)),
], ids=str)
def test_sdpa_varlen_passes_the_masking_as_window_size(stand_in, tmp_path, spec, window_size):
    worker, calls = stand_in
    request, inputs, prepared = served(worker, tmp_path, "sdpa-varlen", spec, seed=7)
    assert "diagnostics" not in prepared, prepared
    lengths = varlen_lengths(inputs)
    assert calls[-1] == {"max": (max(lq for lq, _ in lengths), max(lk for _, lk in lengths)),
                         "scale": 1 / math.sqrt(spec.head_dim), "window_size": window_size}
    facts = prepared["facts"]
    assert facts["window_size"].startswith(f"{window_size}: ")
    assert facts["function"].startswith("torch.nn.attention.varlen.varlen_attn(q, k, v, cu_seq_q, cu_seq_k, ")
    if spec.kv_heads != spec.heads:
        assert facts["gqa"].startswith(f"native: {spec.heads} query heads over {spec.kv_heads} K/V heads")
    assert_varlen_close(fetched(worker, request), varlen_reference(inputs, **spec.masking), spec.dtype)
    worker.handle("release", {"case_id": "case"})


@pytest.mark.parametrize("spec, summary", [
    (SOFTCAP_SPECS[1], "sdpa-varlen: varlen_attn has no softcap"),
    (SPECS[0], "sdpa-varlen: varlen_attn runs fp16 and bf16 only, not torch.float32"),
], ids=str)
def test_sdpa_varlen_refuses_what_varlen_attn_cannot_do(stand_in, tmp_path, spec, summary):
    worker, calls = stand_in
    _, _, prepared = served(worker, tmp_path, "sdpa-varlen", spec)
    (diag,) = prepared["diagnostics"]
    assert diag["severity"] == "unsupported" and diag["summary"].startswith(summary), diag
    assert not calls


@pytest.mark.skipif(not torch.cuda.is_available(), reason="varlen_attn runs on CUDA only")
def test_sdpa_varlen_on_the_gpu_matches_the_reference(tmp_path):
    gpu = torch.device("cuda")
    worker = core.Worker(sdpa_backend.Backend(gpu), gpu)
    for spec in (Spec(UNEVEN, "fp16", prefix=20), Spec(UNEVEN, "bf16", causal=False, window_left=9, window_right=4)):
        request, inputs, prepared = served(worker, tmp_path, "sdpa-varlen", spec, seed=8)
        assert "diagnostics" not in prepared, prepared
        assert_varlen_close(fetched(worker, request), varlen_reference(inputs, **spec.masking), spec.dtype)
        worker.handle("release", {"case_id": "case"})


# ---------------------------------------------------------------- capabilities


def test_varlen_variants_declare_their_capabilities(worker):
    variants = {v["name"]: v for v in worker.handle("describe", {})["variants"]}
    flex = variants["flex-attention"]
    assert flex["ops"] == ["decode", "varlen", "attention"]
    caps = flex["op_capabilities"]["varlen"]
    assert caps["masks"] == ["window", "softcap"] and caps["dtypes"] == ["fp16", "bf16", "fp32"]
    assert caps["grouped_query_heads"] and caps["causal"] and caps["non_causal"] and not caps["needs_gpu"]
    assert flex["op_capabilities"]["decode"] == flex["capabilities"]
    sdpa = variants["sdpa-varlen"]
    assert sdpa["ops"] == ["varlen"] and "op_capabilities" not in sdpa
    caps = sdpa["capabilities"]
    assert caps["needs_gpu"] and caps["dtypes"] == ["fp16", "bf16"] and caps["masks"] == ["window"]
    assert caps["grouped_query_heads"] and caps["causal"] and caps["non_causal"]
    assert caps["head_dims"] == list(range(8, 257, 8))


def test_varlen_variants_refuse_other_ops():
    backend = sdpa_backend.Backend(CPU)
    inputs = SPECS[0].tensors()
    case = core.OpCase("case", "sdpa-paged", "varlen", varlen_params(inputs, "fp32"), {}, CPU, inputs, [])
    with pytest.raises(ValueError, match="sdpa-paged runs decode, not varlen"):
        backend.prepare_op(case)
    case = core.OpCase("case", "sdpa-varlen", "decode", {}, {}, CPU, {}, [])
    with pytest.raises(ValueError, match="sdpa-varlen runs varlen, not decode"):
        backend.prepare_op(case)
