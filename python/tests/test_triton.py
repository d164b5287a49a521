"""The triton backend's kernel under Triton's CPU interpreter against a
float64 reference. Shapes stay small: the interpreter runs one program at a
time in NumPy."""

import pytest
import torch

import flashcore_worker as core
from helpers import DTYPES, assert_close, make_case, read_output, reference, shape

triton_backend = pytest.importorskip("triton_backend")
import triton_attention  # noqa: E402  (after triton_backend set TRITON_INTERPRET)

CPU = torch.device("cpu")
SHAPES = [
    shape(1, 2, 2, 64, 64, 64, False, "fp16"),    # whole tiles
    shape(2, 4, 2, 77, 77, 64, True, "fp16"),     # GQA, causal, odd length
    shape(1, 4, 1, 33, 95, 128, True, "fp32"),    # MQA, causal, seq_q < seq_k
    shape(1, 2, 2, 100, 40, 64, True, "fp16"),    # causal, seq_q > seq_k (rows past seq_k see all keys)
    shape(1, 2, 2, 45, 130, 128, False, "fp32"),  # ragged key blocks, unmasked
]


@pytest.mark.parametrize("s", SHAPES, ids=str)
def test_kernel_matches_reference(s):
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(d, generator=gen).to(DTYPES[s.dtype]) for d in (s.q_shape, s.kv_shape, s.kv_shape))
    out = torch.empty(s.q_shape, dtype=DTYPES[s.dtype])
    core.poison(out)
    triton_attention.attention(q, k, v, out, s.causal, tuned=False)
    assert_close(out, reference(q, k, v, s.causal), s.dtype)


def test_wide_scores_keep_the_running_max_right():
    """Scaled queries make later key blocks raise the running max, which
    tests the rescaling of the accumulator."""
    s = shape(1, 1, 1, 40, 200, 64, False, "fp32")
    gen = torch.Generator().manual_seed(9)
    q = torch.randn(s.q_shape, generator=gen) * 6
    k, v = torch.randn(s.kv_shape, generator=gen), torch.randn(s.kv_shape, generator=gen)
    out = torch.empty(s.q_shape)
    triton_attention.attention(q, k, v, out, False, tuned=False)
    assert_close(out, reference(q, k, v, False), "fp32")


def test_worker_round_trip_in_interpreter(tmp_path):
    worker = core.Worker(triton_backend.Backend(CPU), CPU)
    s = SHAPES[1]
    params, (q, k, v), digest = make_case(tmp_path, s, "triton")
    prepared = worker.handle("prepare", params)
    assert prepared["loaded_sha256"] == digest
    assert prepared["facts"]["interpreter"] == "true"
    assert prepared["facts"]["config"].startswith("BLOCK_M=64 BLOCK_N=64")
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, True), "fp16")


def test_interpreter_capabilities_are_small_and_say_why():
    (variant,) = triton_backend.Backend(CPU).variants()
    caps = variant["capabilities"]
    assert caps["max_seq_len"] == triton_backend.INTERPRETER_MAX_SEQ_LEN
    assert caps["max_elements"] == triton_backend.INTERPRETER_MAX_ELEMENTS
    assert "bf16" not in caps["dtypes"] and caps["head_dims"] == [64, 128]
    assert "interpreter" in variant["description"]


@pytest.mark.parametrize("dtype, head_dim, kept, dropped", [
    (torch.float16, 64, (128, 128, 8, 3), None),
    (torch.float16, 128, (128, 64, 4, 3), (128, 128, 8, 3)),
    (torch.float32, 128, (128, 32, 4, 4), (128, 64, 4, 3)),
])
def test_pruning_drops_tiles_that_cannot_fit(dtype, head_dim, kept, dropped):
    import triton

    configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s)
               for m, n, w, s in triton_attention._TUNING_SPACE]
    q = torch.empty(1, 1, 1, head_dim, dtype=dtype)
    left = {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages)
            for c in triton_attention.prune_by_shared_memory(configs, {"Q": q}, HEAD_DIM=head_dim)}
    assert kept in left
    assert dropped is None or dropped not in left


def test_parse_config_reads_chosen_config_strings():
    import triton_attention
    assert triton_attention.parse_config("BLOCK_M=64 BLOCK_N=32 warps=4 stages=3") == {
        "BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 3}


def test_tunables_are_declared_on_a_gpu_with_auto_as_the_default():
    backend = triton_backend.Backend(CPU)
    assert "tunables" not in backend.variants()[0]  # the interpreter runs one fixed configuration
    backend.interpreted = False  # what a GPU machine declares
    tunables = {t["name"]: t for t in backend.variants()[0]["tunables"]}
    assert list(tunables) == ["BLOCK_M", "BLOCK_N", "num_warps", "num_stages"]
    for t in tunables.values():
        assert t["default"] == "auto" and t["values"][0] == "auto" and len(t["values"]) >= 4


@pytest.mark.parametrize("tunables, config", [
    ({}, None),
    ({"BLOCK_M": "auto", "BLOCK_N": "auto", "num_warps": "auto", "num_stages": "auto"}, None),
    ({"BLOCK_M": "16"}, "BLOCK_M=16 BLOCK_N=64 warps=4 stages=3"),
    ({"BLOCK_M": "128", "BLOCK_N": "32", "num_warps": "8", "num_stages": "2"}, "BLOCK_M=128 BLOCK_N=32 warps=8 stages=2"),
])
def test_fixed_config_fills_auto_from_the_fallback(tunables, config):
    assert triton_attention.fixed_config(tunables) == config


@pytest.mark.parametrize("tunables", [
    {"BLOCK_M": "16", "BLOCK_N": "16", "num_warps": "2", "num_stages": "1"},
    {"BLOCK_M": "128", "BLOCK_N": "64", "num_warps": "8", "num_stages": "4"},
])
def test_a_fixed_config_runs_the_kernel_it_names(tunables):
    s = SHAPES[1]
    gen = torch.Generator().manual_seed(6)
    q, k, v = (torch.randn(d, generator=gen).to(DTYPES[s.dtype]) for d in (s.q_shape, s.kv_shape, s.kv_shape))
    out = torch.empty(s.q_shape, dtype=DTYPES[s.dtype])
    core.poison(out)
    triton_attention.attention(q, k, v, out, s.causal, tuned=False, config=triton_attention.fixed_config(tunables))
    assert_close(out, reference(q, k, v, s.causal), s.dtype)


def test_a_config_that_cannot_compile_is_refused_not_an_error(monkeypatch):
    class OutOfResources(Exception):
        pass

    def out_of_shared_memory(*args, **kwargs):
        raise OutOfResources("out of resource: shared memory, Required: 262144, Hardware limit: 232448")

    monkeypatch.setattr(triton_attention, "attention", out_of_shared_memory)
    s = SHAPES[0]
    q = torch.zeros(s.q_shape, dtype=torch.float16)
    case = core.Case("case", "triton", s, {"BLOCK_M": "128", "BLOCK_N": "128", "num_stages": "5"}, CPU, q, q, q)
    with pytest.raises(core.Unsupported) as refused:
        triton_backend.Backend(CPU).prepare(case)
    assert "does not compile or launch: OutOfResources" in refused.value.summary
    assert "Hardware limit" in refused.value.detail


def test_an_autotuned_failure_is_not_refused(monkeypatch):
    """Only a configuration the tunables fixed is the configuration's fault."""
    class OutOfResources(Exception):
        pass

    def fails(*args, **kwargs):
        raise OutOfResources("out of resource")

    monkeypatch.setattr(triton_attention, "attention", fails)
    s = SHAPES[0]
    q = torch.zeros(s.q_shape, dtype=torch.float16)
    with pytest.raises(OutOfResources):
        triton_backend.Backend(CPU).prepare(core.Case("case", "triton", s, {}, CPU, q, q, q))
