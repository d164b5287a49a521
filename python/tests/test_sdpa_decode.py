"""The pytorch-sdpa backend's decode variants (sdpa-paged, flex-attention)
on the CPU, against an fp64 reference that reads the paged cache itself
(helpers.decode_reference), on caches with poison past every length."""

import dataclasses

import pytest
import torch

import flashcore_worker as core
import sdpa_backend
from helpers import (
    DECODE_TOLERANCE,
    assert_decode_close,
    decode_error,
    decode_params,
    decode_reference,
    make_decode_case,
    make_decode_tensors,
    read_outputs,
    tensor_file,
)

CPU = torch.device("cpu")
QUICK = {"warmup_runs": 1, "warmup_time": 0, "min_samples": 3, "max_samples": 6, "target_noise": 0.5,
         "time_cap": 5_000_000_000, "l2": "hot", "call_samples": 2}
DECODE_VARIANTS = ("sdpa-paged", "flex-attention")


@dataclasses.dataclass(frozen=True)
class Spec:
    """One decode case: the cache's geometry and the masking."""

    q_len: int
    page_size: int
    lengths: tuple
    dtype: str
    causal: bool = True
    window_left: int = -1
    softcap: float = 0.0
    heads: int = 8
    kv_heads: int = 2  # grouped-query heads, 4:1
    head_dim: int = 64

    @property
    def masking(self):
        return {"causal": self.causal, "window_left": self.window_left, "softcap": self.softcap}

    def tensors(self, seed=0):
        return make_decode_tensors(seed, len(self.lengths), self.heads, self.kv_heads, self.q_len, self.head_dim,
                                   self.page_size, list(self.lengths), self.dtype)

    def __str__(self):
        text = f"q{self.q_len}-p{self.page_size}-L{'.'.join(map(str, self.lengths))}-{self.dtype}"
        text += "-causal" if self.causal else "-full"
        text += f"-w{self.window_left}" if self.window_left >= 0 else ""
        text += f"-cap{self.softcap:g}" if self.softcap else ""
        return text + f"-H{self.heads}x{self.kv_heads}-D{self.head_dim}"


SPECS = [
    Spec(1, 16, (37, 5, 64), "fp32"),
    Spec(4, 16, (37, 5, 64, 16), "fp16"),
    Spec(4, 64, (100, 4, 129), "fp32", causal=False),
    Spec(1, 64, (70, 200), "fp16", causal=False),
    Spec(4, 16, (50, 9, 33), "fp32", window_left=7),
    Spec(4, 64, (150, 6, 90), "fp16", causal=False, window_left=20),
    Spec(4, 16, (64, 64), "fp32", heads=4, kv_heads=4, head_dim=32),  # whole pages, equal lengths
    Spec(1, 16, (64, 64), "bf16", head_dim=128),                      # nothing to mask: sdpa-paged drops its mask
]
SOFTCAP_SPECS = [
    Spec(4, 16, (37, 5, 64), "fp32", softcap=0.5),
    Spec(1, 64, (70, 130), "fp16", window_left=3, softcap=2.0),
    Spec(4, 16, (40, 17), "fp32", causal=False, softcap=1.0),
]


@pytest.fixture(scope="module")
def worker():
    return core.Worker(sdpa_backend.Backend(CPU), CPU)


def served(worker, tmp_path, variant, spec, seed=0):
    """Prepares spec's case on the worker; returns the request, the inputs
    and what Prepare answered."""
    inputs = spec.tensors(seed)
    request, digest = make_decode_case(tmp_path, variant, inputs, spec.dtype, **spec.masking)
    prepared = worker.handle("prepare", request)
    assert prepared["loaded_sha256"] == digest
    return request, inputs, prepared


def fetched(worker, request):
    worker.handle("fetch", {"case_id": "case"})
    return read_outputs(request)["o"]


# ---------------------------------------------------------------- the reference and the poison


def test_the_reference_tells_wrong_decodes_apart():
    """The checks can fail: top-left causal alignment, a kernel that reads
    the pool's pages in order instead of through the table, one that reads
    the poison past a length, and a missing softcap each give outputs far
    outside the tolerance."""
    spec = Spec(4, 16, (37, 5, 64), "fp32")
    inputs = spec.tensors()
    want = decode_reference(inputs)
    tol = DECODE_TOLERANCE["fp16"]
    assert decode_error(decode_reference(inputs, align="top-left"), want) > 100 * tol
    assert decode_error(decode_reference(inputs, use_table=False), want) > 100 * tol
    # Causal masking hides the slots past a length by itself; without it
    # only the length does.
    full = decode_reference(inputs, causal=False)
    assert decode_error(decode_reference(inputs, causal=False, mask_lengths=False), full) > 100 * tol
    assert decode_error(decode_reference(inputs, softcap=0.5), want) > 10 * tol
    assert decode_error(decode_reference(inputs, window_left=7), want) > 10 * tol


def test_the_cache_is_scattered_and_poisoned_past_every_length():
    spec = Spec(4, 16, (37, 5, 64), "fp32")
    inputs = spec.tensors()
    table, v = inputs["block_table"], inputs["v_cache"]
    assert table.dtype == torch.int32 and inputs["cache_seqlens"].dtype == torch.int32
    assert table[0, :3].tolist() != sorted(table[0, :3].tolist()) or table[1, 0] < table[0, 0]
    assert len(set(table.flatten().tolist())) == table.numel()  # no page is shared
    for b, length in enumerate(spec.lengths):
        pages = table[b].tolist()
        last, used = pages[(length - 1) // 16], -(-length // 16)
        assert bool((v[last, length % 16 or 16:] == 100).all())
        assert all(bool((v[p] == 100).all()) for p in pages[used:])
        assert bool((inputs["k_cache"][pages[used:]].abs() == 8).all())


# ---------------------------------------------------------------- the variants against the reference


@pytest.mark.parametrize("variant", DECODE_VARIANTS)
@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_decode_variants_match_the_reference(worker, tmp_path, variant, spec):
    request, inputs, prepared = served(worker, tmp_path, variant, spec, seed=3)
    assert "diagnostics" not in prepared, prepared
    got = fetched(worker, request)
    assert got.shape == inputs["q"].shape
    want = decode_reference(inputs, **spec.masking)
    assert_decode_close(got, want, spec.dtype)
    if spec.causal and spec.q_len > 1:
        # Top-left alignment would not pass: the check can fail.
        assert decode_error(got, decode_reference(inputs, **spec.masking, align="top-left")) > 0.1
    worker.handle("release", {"case_id": "case"})


@pytest.mark.parametrize("spec", SOFTCAP_SPECS, ids=str)
def test_flex_attention_applies_softcap(worker, tmp_path, spec):
    request, inputs, prepared = served(worker, tmp_path, "flex-attention", spec, seed=4)
    assert "diagnostics" not in prepared, prepared
    assert prepared["facts"]["score_mod"].startswith(f"softcap: {spec.softcap:g} * tanh(s / ")
    got = fetched(worker, request)
    assert_decode_close(got, decode_reference(inputs, **spec.masking), spec.dtype)
    assert decode_error(got, decode_reference(inputs, **{**spec.masking, "softcap": 0.0})) > 0.05


def test_sdpa_paged_skips_softcap(worker, tmp_path):
    """Its capabilities leave softcap out, so the bridge skips such a case
    in Go; one that reaches the worker all the same is refused."""
    _, _, prepared = served(worker, tmp_path, "sdpa-paged", SOFTCAP_SPECS[0])
    (diag,) = prepared["diagnostics"]
    assert diag["severity"] == "unsupported"
    assert diag["summary"].startswith("sdpa-paged: scaled_dot_product_attention has no softcap")


def test_the_timed_output_is_checked_too(worker, tmp_path):
    spec = SPECS[4]
    for variant in DECODE_VARIANTS:
        request, inputs, _ = served(worker, tmp_path, variant, spec, seed=5)
        timed = tensor_file("o", tmp_path / f"timed-{variant}.bin", list(inputs["q"].shape), spec.dtype)
        samples = worker.handle("run", {"case_id": "case", "measurement": QUICK, "outputs": [timed]})
        assert samples["method"] == "wall-clock" and 3 <= len(samples["kernel_times"]) <= 6
        got = read_outputs({"outputs": [timed]})["o"]
        assert_decode_close(got, decode_reference(inputs, **spec.masking), spec.dtype)
        worker.handle("release", {"case_id": "case"})


# ---------------------------------------------------------------- what is timed, and the facts


def test_the_gather_and_the_mask_are_built_in_prepare_not_in_the_call(worker, tmp_path, monkeypatch):
    gathers = []
    gather = sdpa_backend.gather_pages
    monkeypatch.setattr(sdpa_backend, "gather_pages", lambda d: gathers.append(1) or gather(d))
    for variant in DECODE_VARIANTS:
        gathers.clear()
        _, _, prepared = served(worker, tmp_path, variant, SPECS[1])
        assert len(gathers) == 2  # the gather kept, and the one timed for the fact
        facts = prepared["facts"]
        assert facts["gather"].startswith("gather excluded from the time; gather took ")
        assert " µs (perf_counter, a second gather, discarded, in Prepare): 4 pages of 16 slots" in facts["gather"]
        worker.handle("run", {"case_id": "case", "measurement": QUICK})
        assert len(gathers) == 2
        worker.handle("release", {"case_id": "case"})


def test_sdpa_paged_facts_name_the_mask_and_the_backend(worker, tmp_path):
    _, _, prepared = served(worker, tmp_path, "sdpa-paged", SPECS[4])
    facts = prepared["facts"]
    assert facts["mask"].startswith("additive [B, 1, q_len, L] = [3, 1, 4, 64] in torch.float32 (0 or -inf)")
    assert "bottom-right causal, window_left 7" in facts["mask"]
    assert facts["sdp_backend"].startswith("FLASH_ATTENTION, PyTorch's own dispatch")  # the CPU's flash kernel
    assert facts["gqa"] == "enable_gqa=True"
    _, _, prepared = served(worker, tmp_path, "sdpa-paged", SPECS[7])
    assert prepared["facts"]["mask"].startswith("none: every gathered key is seen")


def test_sdpa_paged_expands_grouped_heads_where_only_math_takes_them(worker, tmp_path, monkeypatch):
    """On a GPU, the memory-efficient kernel takes a mask but no
    enable_gqa: where PyTorch would fall back to math, K and V are
    expanded to every query head in Prepare instead."""
    def choice(q, k, v, mask, enable_gqa, scale):
        return sdpa_backend.SDPBackend.MATH if enable_gqa else sdpa_backend.SDPBackend.EFFICIENT_ATTENTION

    monkeypatch.setattr(sdpa_backend, "sdp_choice", choice)
    request, inputs, prepared = served(worker, tmp_path, "sdpa-paged", SPECS[1])
    assert prepared["facts"]["gqa"].startswith("K/V heads expanded 4x in Prepare")
    assert prepared["facts"]["sdp_backend"].startswith("EFFICIENT_ATTENTION")
    assert_decode_close(fetched(worker, request), decode_reference(inputs), "fp16")


def test_flex_attention_says_it_runs_eagerly_on_the_cpu(worker, tmp_path):
    _, _, prepared = served(worker, tmp_path, "flex-attention", SPECS[0])
    facts = prepared["facts"]
    assert facts["compiled"].startswith("no: eager on the CPU")
    assert facts["block_mask"].startswith("create_block_mask in Prepare")
    assert facts["score_mod"] == "none" and facts["gqa"] == "enable_gqa=True"


def test_compiled_flex_attention_on_the_cpu_and_its_cache(tmp_path):
    """The compiled path (the GPU's) on the CPU: it matches the reference,
    and a case prepared again on copies of its inputs (a new placement)
    reuses the compiled code: the mask's lengths are a tensor it reads, not
    a constant it is specialised on."""
    from torch._dynamo.utils import counters

    backend = sdpa_backend.Backend(CPU)
    backend.compile_flex = True
    spec = Spec(4, 16, (37, 5, 64), "fp32", window_left=9, softcap=1.0)
    inputs = spec.tensors(seed=6)
    params = decode_params(inputs, spec.dtype, **spec.masking)
    case = core.OpCase("case", "flex-attention", "decode", params, {}, CPU, inputs, [])
    kernel = backend.prepare_op(case)
    assert kernel.facts["compiled"].startswith("yes: torch.compile(flex_attention, dynamic=False, fullgraph=True)")
    assert_decode_close(kernel.run(), decode_reference(inputs, **spec.masking), spec.dtype)
    graphs = counters["stats"]["unique_graphs"]
    moved = case.moved()
    moved.inputs["cache_seqlens"][1] = 9  # another length, same shapes
    again = backend.prepare_op(moved)
    assert counters["stats"]["unique_graphs"] == graphs
    assert_decode_close(again.run(), decode_reference(moved.inputs, **spec.masking), spec.dtype)


# ---------------------------------------------------------------- capabilities


def test_decode_variants_declare_their_capabilities(worker):
    variants = {v["name"]: v for v in worker.handle("describe", {})["variants"]}
    for name, masks in (("sdpa-paged", ["window"]), ("flex-attention", ["window", "softcap"])):
        v = variants[name]
        assert v["ops"][0] == "decode" and "excluded from the time" in v["description"]
        caps = v["capabilities"]  # its first op's: decode
        assert v.get("op_capabilities", {"decode": caps})["decode"] == caps
        assert caps["masks"] == masks
        assert caps["grouped_query_heads"] and caps["causal"] and caps["non_causal"]
        assert caps["dtypes"] == ["fp16", "bf16", "fp32"] and not caps["needs_gpu"]
        assert "modes" not in caps


def test_decode_variants_refuse_other_ops(tmp_path):
    backend = sdpa_backend.Backend(CPU)
    x = torch.zeros(2, 8)
    case = core.OpCase("case", "sdpa-paged", "rmsnorm", {}, {}, CPU, {"x": x, "weight": x[0]}, [])
    with pytest.raises(ValueError, match="sdpa-paged runs decode, not rmsnorm"):
        backend.prepare_op(case)
    inputs = SPECS[0].tensors()
    case = core.OpCase("case", "torch-rmsnorm", "decode", decode_params(inputs, "fp32"), {}, CPU, inputs, [])
    with pytest.raises(ValueError, match="torch-rmsnorm runs rmsnorm, not decode"):
        backend.prepare_op(case)
