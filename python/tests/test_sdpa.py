"""The pytorch-sdpa backend on the CPU against a float64 reference."""

import pytest
import torch

import flashcore_worker as core
import sdpa_backend
from helpers import assert_close, make_case, make_rmsnorm_case, read_output, read_tensor, reference, rmsnorm_reference, shape

CPU = torch.device("cpu")
SHAPES = [
    shape(1, 2, 2, 64, 64, 64, False, "fp32"),
    shape(2, 4, 2, 77, 77, 64, True, "fp16"),     # GQA, causal, odd length
    shape(1, 4, 1, 33, 95, 128, True, "bf16"),    # MQA, causal, seq_q < seq_k
    shape(1, 2, 2, 100, 40, 64, True, "fp32"),    # causal, seq_q > seq_k
]


@pytest.fixture(scope="module")
def worker():
    return core.Worker(sdpa_backend.Backend(CPU), CPU)


@pytest.mark.parametrize("variant", ["sdpa", "sdpa-flash", "sdpa-math"])
@pytest.mark.parametrize("s", SHAPES, ids=str)
def test_cpu_variants_match_reference(worker, tmp_path, variant, s):
    params, (q, k, v), digest = make_case(tmp_path, s, variant, seed=3)
    prepared = worker.handle("prepare", params)
    assert prepared["loaded_sha256"] == digest
    assert "diagnostics" not in prepared
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, s.causal), s.dtype)
    worker.handle("release", {"case_id": "case"})


@pytest.mark.parametrize("variant", ["sdpa-efficient", "sdpa-cudnn"])
def test_gpu_only_variants_are_refused_by_pytorch_on_cpu(worker, tmp_path, variant):
    """The bridge skips them on a CPU in Go (they declare needs_gpu); a
    request that reaches the worker all the same is PyTorch's to refuse."""
    params, _, _ = make_case(tmp_path, SHAPES[1], variant)
    (diag,) = worker.handle("prepare", params)["diagnostics"]
    assert diag["severity"] == "unsupported"
    assert diag["summary"] == f"PyTorch refused {variant} for {SHAPES[1]}"


def test_capabilities_are_those_of_the_cpu(worker):
    caps = {v["name"]: v["capabilities"] for v in worker.handle("describe", {})["variants"]}
    assert list(caps) == ["sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "torch-rmsnorm"]
    assert not caps["sdpa"]["needs_gpu"] and not caps["sdpa-flash"]["needs_gpu"]
    assert caps["sdpa-efficient"]["needs_gpu"] and caps["sdpa-cudnn"]["needs_gpu"]


def test_refusal_carries_pytorch_reason(tmp_path):
    """A pinned backend PyTorch will not run becomes Unsupported, with
    PyTorch's message. On the CPU the efficient kernel does not exist, so
    pinning it (past the capability check) is such a refusal."""
    s = SHAPES[0]
    params, _, _ = make_case(tmp_path, s, "sdpa-efficient")
    (q, k, v), _ = core.load_inputs(params["files"], s, CPU)
    case = core.Case("case", "sdpa-efficient", s, {}, CPU, q, k, v)
    with pytest.raises(core.Unsupported) as refused:
        sdpa_backend.Backend(CPU).prepare(case)
    assert refused.value.summary == f"PyTorch refused sdpa-efficient for {s}"
    assert "No viable backend" in refused.value.detail


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_torch_rmsnorm_matches_the_reference(worker, tmp_path, dtype):
    params, (x, w), digest = make_rmsnorm_case(tmp_path, 9, 257, dtype, "torch-rmsnorm", seed=2)
    prepared = worker.handle("prepare", params)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared
    assert prepared["facts"]["function"] == "torch.nn.functional.rms_norm"
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_tensor(params["outputs"][0]["path"], [9, 257], dtype), rmsnorm_reference(x, w), dtype)
    worker.handle("release", {"case_id": "case"})


def test_torch_rmsnorm_offers_only_rmsnorm(worker):
    (variant,) = [v for v in worker.handle("describe", {})["variants"] if v["name"] == "torch-rmsnorm"]
    assert variant["ops"] == ["rmsnorm"] and not variant["capabilities"]["needs_gpu"]
    assert all("ops" not in v for v in worker.handle("describe", {})["variants"] if v["name"].startswith("sdpa"))
