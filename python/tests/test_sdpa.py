"""The pytorch-sdpa backend on the CPU against a float64 reference."""

import pytest
import torch

import flashcore_worker as core
import sdpa_backend
from helpers import (
    assert_close,
    assert_grads_close,
    make_attention_case,
    make_case,
    make_rmsnorm_case,
    read_output,
    read_outputs,
    read_tensor,
    reference,
    rmsnorm_reference,
    shape,
)

CPU = torch.device("cpu")
QUICK = {"warmup_runs": 1, "warmup_time": 0, "min_samples": 3, "max_samples": 6, "target_noise": 0.5,
         "time_cap": 5_000_000_000, "l2": "hot", "call_samples": 2}
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
    assert list(caps) == ["sdpa", "sdpa-flash", "sdpa-efficient", "sdpa-cudnn", "sdpa-math", "torch-rmsnorm",
                          "sdpa-paged", "sdpa-varlen", "flex-attention"]
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
    assert all("ops" not in v for v in worker.handle("describe", {})["variants"] if v["name"] in sdpa_backend.VARIANTS)


# ---------------------------------------------------------------- attention's backward modes

BWD_SHAPES = [
    shape(1, 2, 1, 33, 47, 16, False, "fp32"),
    shape(1, 2, 1, 33, 47, 16, True, "fp32"),     # top-left causal, Sq < Sk
    shape(1, 2, 1, 33, 47, 16, False, "fp16"),
    shape(1, 2, 1, 33, 47, 16, True, "fp16"),
    shape(2, 4, 2, 40, 24, 32, True, "bf16"),     # GQA, causal, Sq > Sk
    shape(1, 2, 2, 64, 64, 64, True, "fp32"),
]


@pytest.mark.parametrize("mode", ["bwd", "fwd+bwd"])
@pytest.mark.parametrize("variant", ["sdpa", "sdpa-flash", "sdpa-math"])
@pytest.mark.parametrize("s", BWD_SHAPES, ids=str)
def test_cpu_variants_backward_matches_fp64_autograd(worker, tmp_path, variant, s, mode):
    request, tensors, digest = make_attention_case(tmp_path, s, variant, mode, seed=5)
    prepared = worker.handle("prepare", request)
    assert prepared["loaded_sha256"] == digest
    assert "diagnostics" not in prepared
    worker.handle("fetch", {"case_id": "case"})
    got = read_outputs(request)
    assert_grads_close(got, {n: tensors["want"][n] for n in got}, s.dtype)
    worker.handle("release", {"case_id": "case"})


def test_backward_facts_say_what_is_called_and_what_is_timed(worker, tmp_path):
    request, _, _ = make_attention_case(tmp_path, BWD_SHAPES[1], "sdpa-math", "bwd")
    facts = worker.handle("prepare", request)["facts"]
    assert facts["function"] == "torch.autograd.grad of torch.nn.functional.scaled_dot_product_attention"
    assert facts["backward_inputs"] == "autograd of SDPA's own forward; the host's o and lse are not read"
    assert facts["timed"].startswith("the backward alone") and facts["sdp_backend"] == "MATH"
    request, _, _ = make_attention_case(tmp_path, BWD_SHAPES[1], "sdpa", "fwd+bwd")
    facts = worker.handle("prepare", request)["facts"]
    assert facts["function"].startswith("torch.nn.functional.scaled_dot_product_attention, then torch.autograd.grad")
    assert facts["timed"] == "the forward and the backward, in one call" and "backward_inputs" not in facts


class Counted:
    """Counts calls of torch.autograd.grad and of SDPA while patched in."""

    def __init__(self, monkeypatch):
        self.grads = self.forwards = 0
        grad, sdpa = torch.autograd.grad, torch.nn.functional.scaled_dot_product_attention

        def counted_grad(*args, **kwargs):
            self.grads += 1
            return grad(*args, **kwargs)

        def counted_sdpa(*args, **kwargs):
            self.forwards += 1
            return sdpa(*args, **kwargs)

        monkeypatch.setattr(torch.autograd, "grad", counted_grad)
        monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", counted_sdpa)


@pytest.mark.parametrize("mode, forwards_per_call", [("bwd", 0), ("fwd+bwd", 1)])
def test_a_bwd_call_runs_the_backward_alone(worker, tmp_path, monkeypatch, mode, forwards_per_call):
    counted = Counted(monkeypatch)
    request, tensors, _ = make_attention_case(tmp_path, BWD_SHAPES[3], "sdpa-math", mode)
    worker.handle("prepare", request)
    before = (counted.forwards, counted.grads)
    samples = worker.handle("run", {"case_id": "case", "measurement": QUICK})
    # On a CPU the call samples are the last kernel samples (sdk.WallClockCallSamples).
    calls = len(samples["kernel_times"]) + QUICK["warmup_runs"]
    assert counted.grads - before[1] >= calls
    assert counted.forwards - before[0] == forwards_per_call * (counted.grads - before[1])
    # The graph is kept between calls: every call gives the same gradients.
    case = worker.cases["case"]
    with case.kernel.session():
        first, second = case.kernel.run(), case.kernel.run()
    assert all(torch.equal(a, b) for a, b in zip(first, second))


def test_backward_refusal_carries_pytorch_reason(tmp_path):
    """On the CPU there is no efficient kernel: pinning it for the backward
    is a refusal, with PyTorch's message, as for the forward."""
    s = BWD_SHAPES[0]
    request, _, digest = make_attention_case(tmp_path, s, "sdpa-efficient", "bwd")
    prepared = core.Worker(sdpa_backend.Backend(CPU), CPU).handle("prepare", request)
    (diag,) = prepared["diagnostics"]
    assert prepared["loaded_sha256"] == digest
    assert diag["severity"] == "unsupported"
    assert diag["summary"] == f"PyTorch refused sdpa-efficient for {s} bwd"
    assert "No viable backend" in diag["detail"]


def test_every_sdpa_variant_runs_every_mode(worker):
    for v in worker.handle("describe", {})["variants"]:
        want = ["fwd", "bwd", "fwd+bwd"] if v["name"] in sdpa_backend.VARIANTS else None
        assert v["capabilities"].get("modes") == want, v["name"]


def test_torch_rmsnorm_refuses_attention(tmp_path):
    request, _, _ = make_attention_case(tmp_path, BWD_SHAPES[0], "torch-rmsnorm", "bwd")
    with pytest.raises(ValueError, match="torch-rmsnorm runs rmsnorm alone, not attention"):
        core.Worker(sdpa_backend.Backend(CPU), CPU).handle("prepare", request)
