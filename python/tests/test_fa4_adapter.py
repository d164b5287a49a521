"""The flash-attn-4 adapter (fa4_backend) on the CPU, with a fake
flash_attn.cute that computes attention by FlashAttention's semantics and
records each call (fakes/fake_flash_attn_cute.py): the argument mapping
(layouts [B, S, H, D] against the host's [B, H, S, D], grouped-query
heads, causal alignment, windows, softcap, scale, paging), checked by the
calls recorded and by the outputs against the fp64 references. The real
library runs on a GPU."""

import dataclasses
import math

import pytest
import torch

import fa4_backend
import flashcore_extras as extras
import flashcore_worker as core
import worker_main
from fake_libraries import load
from helpers import (
    assert_close,
    masked,
    masked_reference,
    prepared_ok,
    assert_decode_close,
    assert_grads_close,
    assert_varlen_close,
    decode_reference,
    make_attention_case,
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
    return load("fake_flash_attn_cute", "flash_attn.cute")


@pytest.fixture
def worker(fake):
    return core.Worker(fa4_backend.Backend(CPU, library=fake), CPU)



# ---------------------------------------------------------------- attention forward

FORWARD_SHAPES = [
    shape(2, 4, 2, 77, 77, 64, True, "fp16"),      # causal, GQA 2:1, odd length
    shape(1, 4, 1, 33, 95, 128, False, "bf16"),    # seq_q < seq_k, MQA
    shape(1, 2, 2, 100, 40, 64, False, "fp16"),    # seq_q > seq_k
    shape(1, 8, 8, 64, 64, 32, True, "bf16"),
]


@pytest.mark.parametrize("s", FORWARD_SHAPES, ids=str)
def test_forward_maps_layout_heads_causal_and_scale(fake, worker, tmp_path, s):
    params, (q, k, v), _ = make_case(tmp_path, s, "flash-attn-4")
    facts = prepared_ok(worker.handle("prepare", params))
    call = fake.CALLS[-1]
    assert call["function"] == "flash_attn_func"
    q_arg, k_arg, v_arg = call["args"]
    assert q_arg["shape"] == (s.batch, s.seq_q, s.heads, s.head_dim) and q_arg["contiguous"]
    assert k_arg["shape"] == v_arg["shape"] == (s.batch, s.seq_k, s.kv_heads, s.head_dim)  # GQA native
    assert k_arg["contiguous"] and v_arg["contiguous"]
    assert call["kwargs"]["softmax_scale"] == pytest.approx(1 / math.sqrt(s.head_dim))
    assert call["kwargs"]["causal"] is s.causal
    assert facts["function"].startswith("flash_attn.cute.flash_attn_func(q, k, v, softmax_scale=")
    assert facts["flash-attn-4"] == "0.0.0-fake"
    assert facts["first_call"].startswith("first call ") and "kept out of the timed samples" in facts["first_call"]
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, s.causal), s.dtype)


def test_top_left_causal_with_unequal_lengths_is_refused(fake, worker, tmp_path):
    params, _, _ = make_case(tmp_path, shape(1, 4, 2, 33, 95, 64, True, "fp16"), "flash-attn-4")
    (diag,) = worker.handle("prepare", params)["diagnostics"]
    assert diag["severity"] == "unsupported"
    assert diag["summary"] == "flash-attn-4: causal with seq_q 33 != seq_k 95, top-left"
    assert "bottom-right" in diag["detail"]
    assert fake.CALLS == []  # refused before any call


def test_the_librarys_refusal_is_a_skip_in_its_own_words(worker, tmp_path):
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 16, 16, 36, False, "fp16"), "flash-attn-4")
    (diag,) = worker.handle("prepare", params)["diagnostics"]
    assert diag["severity"] == "unsupported" and diag["summary"].startswith("flash-attn-4 refused B1 H2 S16 D36")
    assert diag["detail"].startswith("AssertionError: (head_dim, head_dim_v)=(36, 36) is not supported on SM90")


def test_an_adapter_error_is_not_taken_for_a_refusal(fake, worker, tmp_path, monkeypatch):
    """An assert of the adapter's own (not the library's) stays an error."""
    def broken(t):
        assert False, "the adapter's bug"

    monkeypatch.setattr(fa4_backend, "to_bshd", broken)
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 16, 16, 64, False, "fp16"), "flash-attn-4")
    with pytest.raises(AssertionError, match="the adapter's bug"):
        worker.handle("prepare", params)


CHUNK = shape(1, 4, 2, 24, 80, 32, True, "fp16")  # GQA, a chunk of prefill: Sq < Sk
TALL = shape(1, 2, 1, 70, 33, 16, True, "bf16")  # Sq > Sk: bottom-right rows above the first key see none
SQUARE = shape(2, 2, 2, 40, 40, 16, False, "fp16")


@pytest.mark.parametrize("s, window", [
    (masked(CHUNK, causal_align="bottom-right"), (None, None)),
    (masked(CHUNK, causal_align="bottom-right", window_left=9), (9, None)),
    (masked(TALL, causal_align="bottom-right", window_left=4), (4, None)),
    (masked(SQUARE, window_left=4, window_right=3), (4, 3)),
    (masked(CHUNK, causal_align="bottom-right", window_left=16, softcap=30), (16, None)),
    (masked(SQUARE, softcap=1.5), (None, None)),
], ids=str)
def test_dense_masks_map_onto_causal_window_and_softcap(fake, worker, tmp_path, s, window):
    params, (q, k, v), _ = make_case(tmp_path, s, "flash-attn-4", seed=5)
    facts = prepared_ok(worker.handle("prepare", params))
    kw = fake.CALLS[-1]["kwargs"]
    assert (kw["causal"], kw["window_size"], kw["softcap"]) == (s.causal, window, s.softcap)
    assert f"window_size={window}" in facts["function"]
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), masked_reference(q, k, v, s), s.dtype)


def test_a_top_left_window_with_unequal_lengths_is_refused(worker, tmp_path):
    s = masked(shape(1, 4, 2, 24, 80, 32, False, "fp16"), window_left=5)
    params, _, _ = make_case(tmp_path, s, "flash-attn-4")
    (diag,) = worker.handle("prepare", params)["diagnostics"]
    assert diag["summary"] == "flash-attn-4: a window with seq_q 24 != seq_k 80, top-left"


# ---------------------------------------------------------------- attention backward


@pytest.mark.parametrize("mode", ["bwd", "fwd+bwd"])
@pytest.mark.parametrize("s", [shape(1, 4, 2, 40, 40, 64, True, "fp16"), shape(2, 2, 1, 24, 56, 32, False, "bf16")],
                         ids=str)
def test_backward_modes_through_autograd(fake, worker, tmp_path, s, mode):
    request, tensors, digest = make_attention_case(tmp_path, s, "flash-attn-4", mode)
    prepared = worker.handle("prepare", request)
    assert prepared["loaded_sha256"] == digest
    facts = prepared_ok(prepared)
    assert facts["function"].startswith("torch.autograd.grad of flash_attn.cute.flash_attn_func(")
    first = fake.CALLS[0]
    assert first["args"][0]["shape"] == (s.batch, s.seq_q, s.heads, s.head_dim) and first["args"][0]["requires_grad"]
    if mode == "bwd":
        assert "backward alone" in facts["timed"]
        calls = len(fake.CALLS)
        worker.handle("fetch", {"case_id": "case"})
        assert len(fake.CALLS) == calls, "mode bwd must not call the forward again"
    else:
        worker.handle("fetch", {"case_id": "case"})
    got = read_outputs(request)
    want = {name: tensors["want"][name] for name in got}
    assert_grads_close(got, want, s.dtype, scale=2.0)


# ---------------------------------------------------------------- decode


@dataclasses.dataclass(frozen=True)
class DecodeSpec:
    q_len: int
    page_size: int
    lengths: tuple
    dtype: str
    causal: bool = True
    window_left: int = -1
    softcap: float = 0.0
    heads: int = 8
    kv_heads: int = 2

    @property
    def masking(self):
        return {"causal": self.causal, "window_left": self.window_left, "softcap": self.softcap}

    def __str__(self):
        return (f"q{self.q_len}-p{self.page_size}-L{'.'.join(map(str, self.lengths))}-{self.dtype}"
                f"{'-causal' if self.causal else ''}-w{self.window_left}-cap{self.softcap:g}")


DECODE_SPECS = [
    (DecodeSpec(1, 16, (37, 5, 64), "fp16"), (None, 0)),
    (DecodeSpec(4, 16, (37, 5, 64, 16), "bf16"), (None, 0)),
    (DecodeSpec(4, 64, (100, 4, 129), "fp16", causal=False), (None, None)),
    (DecodeSpec(4, 16, (50, 9, 33), "fp16", window_left=7), (7, 0)),
    (DecodeSpec(1, 64, (70, 130), "fp16", window_left=3, softcap=2.0), (3, 0)),
]


@pytest.mark.parametrize("spec, window", DECODE_SPECS, ids=str)
def test_decode_passes_the_pages_as_they_are(fake, worker, tmp_path, spec, window):
    inputs = make_decode_tensors(3, len(spec.lengths), spec.heads, spec.kv_heads, spec.q_len, 64, spec.page_size,
                                 list(spec.lengths), spec.dtype)
    request, _ = make_decode_case(tmp_path, "flash-attn-4", inputs, spec.dtype, **spec.masking)
    facts = prepared_ok(worker.handle("prepare", request))
    call = fake.CALLS[-1]
    assert call["function"] == "flash_attn_varlen_func"
    kw = call["kwargs"]
    assert call["args"][0]["shape"] == tuple(inputs["q"].shape)
    assert call["args"][1]["shape"] == tuple(inputs["k_cache"].shape)  # the pool as it is: no gather
    assert kw["page_table"]["shape"] == tuple(inputs["block_table"].shape)
    assert kw["page_table"]["dtype"] == torch.int32 and kw["seqused_k"]["dtype"] == torch.int32
    assert kw["cu_seqlens_k"] is None and kw["num_splits"] == 1  # no GPU: sm90's rule (decode_splits)
    assert kw["causal"] is spec.causal and kw["window_size"] == window and kw["softcap"] == spec.softcap
    assert kw["softmax_scale"] == pytest.approx(1 / 8)
    assert "num_splits=1" in facts["function"] and "no gather" in facts["timed"]
    worker.handle("fetch", {"case_id": "case"})
    assert_decode_close(read_outputs(request)["o"], decode_reference(inputs, **spec.masking), spec.dtype)


@pytest.mark.parametrize("capability, splits", [((9, 0), 1), ((8, 0), 1), ((10, 0), 0), ((12, 0), 0)])
def test_decode_splits_the_keys_only_where_the_library_can(capability, splits):
    assert fa4_backend.decode_splits(capability) == splits


# ---------------------------------------------------------------- varlen


@pytest.mark.parametrize("masking, window", [
    ({"causal": True}, (None, 0)),
    ({"causal": False}, (None, None)),
    ({"causal": True, "window_left": 13}, (13, 0)),
    ({"causal": False, "window_left": 9, "window_right": 4}, (9, 4)),
    ({"causal": False, "window_right": 6, "softcap": 1.5}, (None, 6)),
], ids=str)
def test_varlen_passes_the_pack_and_the_window(fake, worker, tmp_path, masking, window):
    inputs = make_varlen_tensors(5, [1, 37, 70, 5], 8, 2, 64, "fp16", prefix=10)
    request, _ = make_varlen_case(tmp_path, "flash-attn-4", inputs, "fp16", **masking)
    prepared_ok(worker.handle("prepare", request))
    kw = fake.CALLS[-1]["kwargs"]
    assert kw["cu_seqlens_q"]["shape"] == (5,) and kw["cu_seqlens_k"]["dtype"] == torch.int32
    assert (kw["max_seqlen_q"], kw["max_seqlen_k"]) == (70, 80)
    assert kw["window_size"] == window and kw["page_table"] is None
    worker.handle("fetch", {"case_id": "case"})
    assert_varlen_close(read_outputs(request)["o"], varlen_reference(inputs, **masking), "fp16")


# ---------------------------------------------------------------- declared and missing


def test_it_declares_every_op_half_precision_and_a_gpu(worker):
    (variant,) = worker.handle("describe", {})["variants"]
    assert variant["name"] == "flash-attn-4" and variant["ops"] == ["attention", "decode", "varlen"]
    caps = variant["capabilities"]
    assert caps["dtypes"] == ["fp16", "bf16"] and caps["needs_gpu"] and caps["modes"] == list(core.MODES)
    assert caps["masks"] == ["bottom-right", "window", "softcap"]
    for op in ("decode", "varlen"):
        assert variant["op_capabilities"][op]["masks"] == ["window", "softcap"]


@pytest.mark.parametrize("capability, taken, refused", [
    ((9, 0), (8, 64, 136, 256), (36, 264)),
    ((10, 0), (8, 64, 128, 256), (136, 192)),
    ((8, 0), (), ()),  # the library decides
])
def test_head_dims_by_architecture(capability, taken, refused):
    declared = fa4_backend.head_dims_for(capability)
    assert all(d in declared for d in taken) and not any(d in declared for d in refused)
    assert declared or capability[0] not in (9, 10, 11)


def test_without_the_library_it_is_unavailable_with_the_install_command():
    try:
        import flash_attn.cute  # noqa: F401
        pytest.skip("flash-attn-4 is installed here")
    except ImportError:
        pass
    worker, reason = worker_main.start("fa4_backend")
    assert worker is None
    assert reason.startswith("flash-attn-4 is not installed for ")
    assert "`make setup EXTRAS=fa4`" in reason and "scripts/extras.py" in reason
    with pytest.raises(extras.LibraryMissing):
        fa4_backend.Backend(CPU)
