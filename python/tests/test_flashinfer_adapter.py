"""The flashinfer adapter (flashinfer_backend) on the CPU, with a fake
flashinfer whose wrappers compute attention from their plan by
FlashInfer's semantics and record each call (fakes/fake_flashinfer.py): the
mapping of the host's paged cache to FlashInfer's CSR pages, of the
masks and scale to plan(), of the layouts, and the wrapper chosen per
case, checked by the calls recorded and by the outputs against the fp64
references. The real library runs on a GPU."""

import math
import os

import pytest
import torch

import flashcore_extras as extras
import flashcore_worker as core
import flashinfer_backend
import worker_main
from fake_libraries import load
from helpers import (
    assert_close,
    masked,
    masked_reference,
    prepared_ok,
    assert_decode_close,
    assert_varlen_close,
    decode_reference,
    make_case,
    make_decode_case,
    make_decode_tensors,
    make_varlen_case,
    make_varlen_tensors,
    read_output,
    read_outputs,
    reference,
    shape,
    varlen_reference,
)

CPU = torch.device("cpu")


@pytest.fixture
def fake():
    return load("fake_flashinfer", "flashinfer")


@pytest.fixture
def backend(fake, monkeypatch):
    monkeypatch.setattr(flashinfer_backend, "WORKSPACE_BYTES", 1 << 10)
    return flashinfer_backend.Backend(CPU, library=fake)


@pytest.fixture
def worker(backend):
    return core.Worker(backend, CPU)


def calls_of(fake, suffix):
    return [c for c in fake.CALLS if c["function"].endswith(suffix)]



# ---------------------------------------------------------------- pages as FlashInfer's CSR


def test_paged_csr_takes_each_sequences_pages_in_order():
    table = torch.tensor([[7, 2, 9], [4, 0, 0], [1, 5, 3]], dtype=torch.int32)
    lengths = torch.tensor([33, 16, 40], dtype=torch.int32)
    indptr, indices, last = flashinfer_backend.paged_csr(table, lengths, 16)
    assert indptr.tolist() == [0, 3, 4, 7]
    assert indices.tolist() == [7, 2, 9, 4, 1, 5, 3]
    assert last.tolist() == [1, 16, 8]
    assert indptr.dtype == indices.dtype == last.dtype == torch.int32


# ---------------------------------------------------------------- decode


@pytest.mark.parametrize("q_len, lengths, heads, kv_heads, masking, wrapper, tensor_cores", [
    (1, (37, 5, 64), 8, 2, {}, "BatchDecodeWithPagedKVCacheWrapper", True),
    (1, (37, 5), 8, 4, {}, "BatchDecodeWithPagedKVCacheWrapper", False),
    (1, (70, 130), 8, 1, {"window_left": 3, "softcap": 2.0}, "BatchDecodeWithPagedKVCacheWrapper", True),
    (1, (16, 1), 4, 4, {"causal": False}, "BatchDecodeWithPagedKVCacheWrapper", False),
    (4, (37, 5, 64, 16), 8, 2, {}, "BatchPrefillWithPagedKVCacheWrapper", None),
    (4, (50, 9, 33), 8, 2, {"window_left": 7}, "BatchPrefillWithPagedKVCacheWrapper", None),
    (4, (100, 4, 129), 8, 2, {"causal": False, "softcap": 1.0}, "BatchPrefillWithPagedKVCacheWrapper", None),
], ids=str)
def test_decode_plans_the_pages_and_runs_on_the_pool(fake, worker, tmp_path, q_len, lengths, heads, kv_heads,
                                                     masking, wrapper, tensor_cores):
    inputs = make_decode_tensors(4, len(lengths), heads, kv_heads, q_len, 64, 16, list(lengths), "fp16")
    request, _ = make_decode_case(tmp_path, "flashinfer", inputs, "fp16", **masking)
    facts = prepared_ok(worker.handle("prepare", request))
    (init,) = calls_of(fake, f"{wrapper}.__init__")
    if tensor_cores is not None:
        assert init["kwargs"]["use_tensor_cores"] is tensor_cores
    (plan,) = calls_of(fake, f"{wrapper}.plan")
    kw = plan["kwargs"]
    assert kw["sm_scale"] == pytest.approx(1 / 8)
    assert kw["window_left"] == masking.get("window_left", -1)
    assert kw["logits_soft_cap"] == (masking.get("softcap") or None)
    assert kw["q_data_type"] == kw["kv_data_type"] == torch.float16
    if wrapper.startswith("BatchPrefill"):
        assert kw["causal"] is masking.get("causal", True)
    run = calls_of(fake, f"{wrapper}.run")[-1]
    assert run["args"][0]["shape"] == (len(lengths) * q_len, heads, 64)
    assert [t["shape"] for t in run["args"][1]] == [tuple(inputs["k_cache"].shape)] * 2  # the pool, no gather
    assert run["kwargs"]["out"] is not None
    assert facts["function"].startswith(f"flashinfer.{wrapper}(")
    assert facts["plan"].startswith("plan() in Prepare took ") and facts["first_call"].startswith("first call ")
    worker.handle("fetch", {"case_id": "case"})
    want = decode_reference(inputs, **masking)
    assert_decode_close(read_outputs(request)["o"], want, "fp16")


def test_the_output_buffer_is_the_backends_and_poisoned_before_the_check(fake, backend, tmp_path):
    inputs = make_decode_tensors(1, 2, 4, 4, 1, 64, 16, [20, 9], "fp16")
    request, _ = make_decode_case(tmp_path, "flashinfer", inputs, "fp16")
    worker = core.Worker(backend, CPU)
    prepared_ok(worker.handle("prepare", request))
    kernel = worker.cases["case"].kernel
    assert isinstance(kernel.output, torch.Tensor)
    assert kernel.run().data_ptr() == kernel.output.data_ptr()


# ---------------------------------------------------------------- varlen and dense attention


@pytest.mark.parametrize("masking", [{"causal": True}, {"causal": False}, {"causal": True, "window_left": 13},
                                     {"causal": False, "window_left": 9, "softcap": 1.5}], ids=str)
def test_varlen_plans_the_cu_seqlens(fake, worker, tmp_path, masking):
    inputs = make_varlen_tensors(5, [1, 37, 70, 5], 8, 2, 64, "bf16", prefix=10)
    request, _ = make_varlen_case(tmp_path, "flashinfer", inputs, "bf16", **masking)
    prepared_ok(worker.handle("prepare", request))
    (plan,) = calls_of(fake, "BatchPrefillWithRaggedKVCacheWrapper.plan")
    assert plan["args"][0]["shape"] == (5,) and plan["args"][2:] == [8, 2, 64]
    assert plan["kwargs"]["causal"] is masking["causal"]
    assert plan["kwargs"]["window_left"] == masking.get("window_left", -1)
    worker.handle("fetch", {"case_id": "case"})
    assert_varlen_close(read_outputs(request)["o"], varlen_reference(inputs, **masking), "bf16")


def test_a_right_window_is_refused(worker, tmp_path):
    inputs = make_varlen_tensors(5, [3, 7], 4, 2, 64, "fp16")
    request, _ = make_varlen_case(tmp_path, "flashinfer", inputs, "fp16", causal=False, window_right=4)
    (diag,) = worker.handle("prepare", request)["diagnostics"]
    assert diag["summary"].startswith("flashinfer: window_right 4") and "left window" in diag["detail"]


@pytest.mark.parametrize("s", [shape(2, 4, 2, 77, 77, 64, True, "fp16"), shape(1, 4, 1, 33, 95, 128, False, "bf16")],
                         ids=str)
def test_dense_attention_as_equal_sequences(fake, worker, tmp_path, s):
    params, (q, k, v), _ = make_case(tmp_path, s, "flashinfer")
    prepared_ok(worker.handle("prepare", params))
    (plan,) = calls_of(fake, "BatchPrefillWithRaggedKVCacheWrapper.plan")
    assert plan["args"][0]["shape"] == (s.batch + 1,) and plan["kwargs"]["causal"] is s.causal
    assert plan["kwargs"]["sm_scale"] == pytest.approx(1 / math.sqrt(s.head_dim))
    run = calls_of(fake, "BatchPrefillWithRaggedKVCacheWrapper.run")[-1]
    assert run["args"][0]["shape"] == (s.batch * s.seq_q, s.heads, s.head_dim) and run["args"][0]["contiguous"]
    assert run["args"][1]["shape"] == (s.batch * s.seq_k, s.kv_heads, s.head_dim)
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, s.causal), s.dtype)


@pytest.mark.parametrize("s", [
    masked(shape(1, 4, 2, 24, 80, 64, True, "fp16"), causal_align="bottom-right"),
    masked(shape(1, 4, 2, 24, 80, 64, True, "fp16"), causal_align="bottom-right", window_left=9, softcap=30),
    masked(shape(1, 2, 1, 70, 33, 64, True, "bf16"), causal_align="bottom-right"),
    masked(shape(2, 2, 2, 40, 40, 64, False, "fp16"), window_left=4, softcap=1.5),
], ids=str)
def test_dense_masks_go_into_the_plan(fake, worker, tmp_path, s):
    params, (q, k, v), _ = make_case(tmp_path, s, "flashinfer", seed=5)
    prepared_ok(worker.handle("prepare", params))
    (plan,) = calls_of(fake, "BatchPrefillWithRaggedKVCacheWrapper.plan")
    kw = plan["kwargs"]
    assert (kw["causal"], kw["window_left"], kw["logits_soft_cap"]) == (s.causal, s.window_left, s.softcap or None)
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), masked_reference(q, k, v, s), s.dtype)


def test_top_left_causal_with_unequal_lengths_is_refused(worker, tmp_path):
    params, _, _ = make_case(tmp_path, shape(1, 4, 2, 33, 95, 64, True, "fp16"), "flashinfer")
    (diag,) = worker.handle("prepare", params)["diagnostics"]
    assert diag["summary"] == "flashinfer: causal with seq_q 33 != seq_k 95, top-left"


def test_the_librarys_refusal_is_a_skip_in_its_own_words(worker, tmp_path):
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 16, 16, 96, False, "fp16"), "flashinfer")
    (diag,) = worker.handle("prepare", params)["diagnostics"]
    assert diag["summary"].startswith("flashinfer refused B1 H2 S16 D96")
    assert diag["detail"] == "AssertionError: head_dim 96 is not supported"


# ---------------------------------------------------------------- declared and missing


def test_it_declares_its_ops_and_masks(worker):
    (variant,) = worker.handle("describe", {})["variants"]
    assert variant["ops"] == ["attention", "decode", "varlen"]
    assert variant["capabilities"]["modes"] == ["fwd"] and variant["capabilities"]["needs_gpu"]
    assert variant["op_capabilities"]["decode"]["head_dims"] == [64, 128, 256]


def test_its_jit_cache_goes_to_the_plugins_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("FLASHINFER_WORKSPACE_BASE", raising=False)
    monkeypatch.setenv("FLASHCORE_CACHE_DIR", str(tmp_path))
    flashinfer_backend.use_plugin_cache()
    assert os.environ["FLASHINFER_WORKSPACE_BASE"] == str(tmp_path)


def test_without_the_library_it_is_unavailable_with_the_install_command():
    try:
        import flashinfer  # noqa: F401
        pytest.skip("flashinfer is installed here")
    except ImportError:
        pass
    worker, reason = worker_main.start("flashinfer_backend")
    assert worker is None
    assert reason.startswith("flashinfer-python is not installed for ")
    assert "make setup EXTRAS=flashinfer" in reason
    with pytest.raises(extras.LibraryMissing):
        flashinfer_backend.Backend(CPU)
