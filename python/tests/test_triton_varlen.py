"""The triton backend's packed varlen prefill kernel (triton_varlen.py) and
its op "varlen", under Triton's CPU interpreter (or on a GPU where there is
one), against the float64 reference of helpers.varlen_reference, which
walks each sequence row by row.

Sequences are packed end to end, so a kernel that ignores cu_seqlens (one
long sequence), aligns causal masking top-left when a sequence has a cached
prefix, or drops a window or the softcap reads or weighs keys it should not;
the tests at the end show that such kernels fail the comparison."""

import dataclasses

import pytest
import torch

import flashcore_worker as core
from helpers import (
    decode_error,
    make_varlen_case,
    make_varlen_tensors,
    read_tensor,
    varlen_lengths,
    varlen_params,
    varlen_reference,
)

triton_backend = pytest.importorskip("triton_backend")
import triton_varlen  # noqa: E402  (after triton_backend set TRITON_INTERPRET)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if DEVICE.type == "cpu":
    try:
        triton_backend.check_interpreter_numpy()
    except RuntimeError as why:
        pytest.skip(str(why), allow_module_level=True)

# |got - want| <= tol · (1 + |want|): fp32 is computed in fp32 (an fp16 or
# TF32 shortcut would miss by about 1e-3), fp16 rounds its inputs, P and
# the output.
TOLERANCE = {"fp32": 2e-5, "fp16": 1e-2}


@dataclasses.dataclass(frozen=True)
class Case:
    q_lens: tuple
    heads: int = 8
    kv_heads: int = 2  # grouped-query heads, 4:1
    head_dim: int = 64
    dtype: str = "fp16"
    prefix: int = 0  # keys per sequence beyond its queries (seq_k - seq_q)
    causal: bool = True
    window_left: int = -1
    window_right: int = -1
    softcap: float = 0.0
    block_m: int = None  # None: the launcher's default
    block_n: int = None

    def __str__(self):
        heads = f"H{self.heads}" if self.heads == self.kv_heads else f"H{self.heads}/{self.kv_heads}"
        text = f"L{','.join(map(str, self.q_lens))}+{self.prefix} {heads} D{self.head_dim} {self.dtype}"
        text += " causal" if self.causal else ""
        text += f" W{self.window_left},{self.window_right}" if (self.window_left, self.window_right) != (-1, -1) else ""
        text += f" cap{self.softcap:g}" if self.softcap else ""
        return text + (f" M{self.block_m}" if self.block_m else "") + (f" N{self.block_n}" if self.block_n else "")

    @property
    def masking(self):
        return {"causal": self.causal, "window_left": self.window_left, "window_right": self.window_right,
                "softcap": self.softcap}


def build(case, seed=0):
    """The case's inputs by name, on DEVICE."""
    inputs = make_varlen_tensors(seed, list(case.q_lens), case.heads, case.kv_heads, case.head_dim, case.dtype,
                                 prefix=case.prefix)
    return {name: t.to(DEVICE) for name, t in inputs.items()}


def want_of(case, inputs, **wrong):
    return varlen_reference({n: t.cpu() for n, t in inputs.items()}, **case.masking, **wrong)


def run_kernel(case, inputs, max_seqlen=None, **launch):
    """The kernel's output (into a NaN-filled buffer, so an unwritten element
    shows) and the config it launched."""
    lengths = varlen_lengths({n: t.cpu() for n, t in inputs.items()})
    max_q, max_k = max_seqlen or (max(lq for lq, _ in lengths), max(lk for _, lk in lengths))
    out = torch.full_like(inputs["q"], float("nan"))
    launch = {"block_m": case.block_m, "block_n": case.block_n, **launch}
    config = triton_varlen.varlen(inputs["q"], inputs["k"], inputs["v"], inputs["cu_seqlens_q"],
                                  inputs["cu_seqlens_k"], max_q, max_k, out, scale=case.head_dim ** -0.5,
                                  **case.masking, **launch)
    return out, config


def assert_close(got, want, dtype, what=""):
    assert not torch.isnan(got.double()).any(), f"{what}: the output has NaN (a row left unwritten, or 0/0)"
    err = decode_error(got.cpu(), want)
    assert err <= TOLERANCE[dtype], f"{what}: error {err:.3g} > {TOLERANCE[dtype]}"


UNEVEN = (1, 37, 70, 5)  # a single-token sequence, and lengths that are no multiple of a tile

CASES = [
    # Causal and not, equal query and key lengths, GQA 4:1.
    Case(UNEVEN),
    Case(UNEVEN, causal=False),
    Case(UNEVEN, dtype="fp32"),
    # A cached prefix (seq_k > seq_q): bottom-right causal.
    Case(UNEVEN, prefix=20),
    Case(UNEVEN, prefix=20, dtype="fp32", causal=False),
    Case((33, 1, 64), prefix=45, dtype="fp32", heads=4, kv_heads=4),
    # Head dim 128; MQA (8:1); a sequence with no query at all.
    Case((40, 9, 66), head_dim=128, prefix=3),
    Case((17, 0, 50), heads=8, kv_heads=1, prefix=5, dtype="fp32"),
    # Windows: left alone (with causal), left and right (without), right
    # alone, a window wider than any sequence, a window of 0.
    Case(UNEVEN, prefix=10, window_left=13),
    Case(UNEVEN, prefix=10, causal=False, window_left=9, window_right=4, dtype="fp32"),
    Case((50, 3, 70), causal=False, window_right=6),
    Case((50, 3, 70), prefix=8, window_left=500, dtype="fp32"),
    Case((50, 3, 70), causal=False, window_left=0, window_right=0, dtype="fp32"),
    # Softcap, alone and with a window.
    Case(UNEVEN, prefix=20, softcap=2.0),
    Case((50, 3, 70), prefix=4, softcap=1.0, window_left=20, dtype="fp32", causal=False),
    # Other tiles: 16-row tiles over 64-key blocks, 64-row tiles over 16.
    Case(UNEVEN, prefix=7, block_m=16, block_n=64, dtype="fp32"),
    Case(UNEVEN, prefix=7, block_m=64, block_n=16, window_left=11),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_varlen_matches_the_float64_reference(case):
    inputs = build(case)
    out, config = run_kernel(case, inputs)
    assert config["BLOCK_M"] == (case.block_m or triton_varlen.default_launch(
        inputs["q"].dtype, case.head_dim, max(case.q_lens), DEVICE.type != "cuda")[0])
    assert_close(out, want_of(case, inputs), case.dtype, str(case))


def test_a_larger_max_seqlen_only_adds_empty_tiles():
    """max_seqlen_q sizes the grid; one larger than the longest sequence
    launches tiles that every sequence exits at once."""
    case = Case(UNEVEN, prefix=3, dtype="fp32")
    inputs = build(case)
    want = want_of(case, inputs)
    out, config = run_kernel(case, inputs, max_seqlen=(300, 303))
    assert config["num_tiles"] == -(-300 // config["BLOCK_M"])
    assert_close(out, want, case.dtype)


def test_a_window_of_zero_returns_each_rows_own_value():
    """Causal with window_left 0: each query sees only the key at its own
    position, so the output is that key's value row, whatever the scores."""
    case = Case(UNEVEN, prefix=6, dtype="fp32", window_left=0)
    inputs = build(case)
    out, _ = run_kernel(case, inputs)
    cpu = {n: t.cpu() for n, t in inputs.items()}
    group = case.heads // case.kv_heads
    for b, (lq, lk) in enumerate(varlen_lengths(cpu)):
        q0, k0 = int(cpu["cu_seqlens_q"][b]), int(cpu["cu_seqlens_k"][b])
        for i in range(lq):
            own = cpu["v"][k0 + lk - lq + i].repeat_interleave(group, 0)  # [H, D]
            assert torch.equal(out.cpu()[q0 + i], own), (b, i)


def test_masks_change_the_result():
    """Causal, each window and softcap change the output at this case, so
    the cases above test them rather than a no-op."""
    case = Case(UNEVEN, prefix=20, dtype="fp32", causal=False)
    inputs = build(case)
    plain = want_of(case, inputs)
    for variant in (dict(causal=True), dict(window_left=9), dict(window_right=3), dict(softcap=1.0)):
        changed = dataclasses.replace(case, **variant)
        want = want_of(changed, inputs)
        assert decode_error(plain, want) > 100 * TOLERANCE["fp32"], variant
        assert_close(run_kernel(changed, inputs)[0], want, "fp32", str(variant))


# ---------------------------------------------------------------- the check has teeth


def test_a_kernel_that_ignores_cu_seqlens_fails():
    """The kernel run on the pack as one sequence (cu_seqlens [0, total])
    attends across the boundaries: it matches the reference computed that
    way, and misses the true one by far more than the tolerance."""
    for case in (Case(UNEVEN), Case(UNEVEN, causal=False, prefix=5)):
        inputs = build(case)
        total_q, total_k = inputs["q"].shape[0], inputs["k"].shape[0]
        one = {**inputs, "cu_seqlens_q": torch.tensor([0, total_q], dtype=torch.int32, device=DEVICE),
               "cu_seqlens_k": torch.tensor([0, total_k], dtype=torch.int32, device=DEVICE)}
        wrong, _ = run_kernel(case, one)
        assert_close(wrong, want_of(case, inputs, use_cu_seqlens=False), case.dtype)
        with pytest.raises(AssertionError):
            assert_close(wrong, want_of(case, inputs), case.dtype)


def test_top_left_causal_alignment_fails():
    """With a cached prefix, top-left alignment (query i sees keys 0..i)
    misses the bottom-right reference by far more than the tolerance, and
    the kernel matches the bottom-right one."""
    case = Case(UNEVEN, prefix=20)
    inputs = build(case)
    want = want_of(case, inputs)
    with pytest.raises(AssertionError):
        assert_close(want_of(case, inputs, align="top-left"), want, case.dtype)
    assert_close(run_kernel(case, inputs)[0], want, case.dtype)


def test_dropping_the_window_or_the_softcap_fails():
    case = Case(UNEVEN, prefix=10, window_left=5, window_right=2, causal=False, softcap=1.0, dtype="fp32")
    inputs = build(case)
    want = want_of(case, inputs)
    for dropped in (dict(window_left=-1), dict(window_right=-1), dict(softcap=0.0)):
        wrong, _ = run_kernel(dataclasses.replace(case, **dropped), inputs)
        with pytest.raises(AssertionError):
            assert_close(wrong, want, case.dtype, str(dropped))
    assert_close(run_kernel(case, inputs)[0], want, case.dtype)


def test_the_launcher_refuses_what_it_cannot_run():
    inputs = build(Case((5, 7)))
    q, k, v, cu_q, cu_k = (inputs[n] for n in ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_k"))
    out = torch.empty_like(q)
    with pytest.raises(ValueError, match="cu_seqlens_q must be int32"):
        triton_varlen.varlen(q, k, v, cu_q.long(), cu_k, 7, 7, out, causal=True, scale=0.125)
    with pytest.raises(ValueError, match="heads 8 is not a multiple of kv_heads 3"):
        triton_varlen.varlen(q, k[:, :1].expand(-1, 3, -1), v[:, :1].expand(-1, 3, -1), cu_q, cu_k, 7, 7, out,
                             causal=True, scale=0.125)
    with pytest.raises(ValueError, match="head dim 48"):
        triton_varlen.varlen(q[..., :48], k[..., :48], v[..., :48], cu_q, cu_k, 7, 7, out[..., :48],
                             causal=True, scale=0.125)


# ---------------------------------------------------------------- the backend


def op_case(case, seed=0, params=None):
    """A varlen OpCase as the worker builds it, and the reference."""
    inputs = build(case, seed)
    outputs = [core.TensorFile("o", "/nonexistent/o.bin", case.dtype, tuple(inputs["q"].shape))]
    cpu = {n: t.cpu() for n, t in inputs.items()}
    params = params or varlen_params(cpu, case.dtype, **case.masking)
    opcase = core.OpCase("case", "triton", "varlen", params, {}, DEVICE, inputs, outputs)
    return opcase, want_of(case, inputs)


@pytest.mark.parametrize("case", [CASES[3], CASES[9], CASES[13]], ids=str)
def test_prepare_op_runs_varlen(case):
    opcase, want = op_case(case)
    kernel = triton_backend.Backend(DEVICE).prepare_op(opcase)
    for buffer in core.as_tensors(kernel.output):
        core.poison(buffer)
    (got,) = core.check_outputs(kernel.run(), opcase.outputs, "varlen")
    assert_close(got, want, case.dtype)
    assert_close(kernel.run(), want, case.dtype, "second call")
    facts = kernel.facts
    assert facts["op"] == "varlen" and facts["function"] == "triton_varlen.varlen"
    assert facts["kernels"] == "_varlen_forward"
    assert facts["config"] == (f"BLOCK_M={facts['block_m']} BLOCK_N={facts['block_n']} "
                               f"warps={facts['config'].split('warps=')[1]}")
    assert facts["max_seqlen"] == f"q {max(case.q_lens)}, k {max(case.q_lens) + case.prefix}"
    assert facts["grid"].endswith(f"x {case.heads} heads x {len(case.q_lens)} sequences "
                                  f"(tiles past a sequence's length exit at once)")
    if DEVICE.type == "cpu":
        assert facts["interpreter"] == "true" and facts["block_m"] == str(triton_varlen.INTERPRETER_BLOCK_M)
        assert facts["precision"] == ("ieee" if case.dtype == "fp32" else "tf32")


def test_prepare_op_refuses_a_seq_q_shorter_than_a_sequence():
    case = Case(UNEVEN)
    inputs = {n: t for n, t in build(case).items()}
    params = {**varlen_params({n: t.cpu() for n, t in inputs.items()}, case.dtype), "seq_q": "50", "seq_k": "50"}
    opcase, _ = op_case(case, params=params)
    with pytest.raises(ValueError, match="sequences of up to 70 queries and 70 keys, longer than seq_q 50"):
        triton_backend.Backend(DEVICE).prepare_op(opcase)


def test_the_variant_lists_varlen_with_its_own_capabilities():
    backend = triton_backend.Backend(DEVICE)
    for interpreted in (True, False):
        backend.interpreted = interpreted
        (variant,) = backend.variants()
        assert variant["ops"] == ["attention", "decode", "varlen"]
        caps = variant["op_capabilities"]["varlen"]
        assert caps["head_dims"] == [64, 128] and caps["masks"] == ["window", "softcap"]
        assert caps["grouped_query_heads"] and caps["causal"] and caps["non_causal"]
        assert ("bf16" in caps["dtypes"]) == (not interpreted) and caps["needs_gpu"] == (not interpreted)
        assert caps["max_elements"] == (triton_backend.INTERPRETER_VARLEN_MAX_ELEMENTS if interpreted else 0)
        assert variant["op_capabilities"]["decode"]["masks"] == ["window", "softcap"]
        assert all(t["ops"] == ["attention"] for t in variant.get("tunables", ()))
        assert "varlen" in variant["description"]


@pytest.mark.skipif("int32" not in core.DTYPE_SIZES, reason="needs the worker core that reads int32 tensors")
def test_worker_round_trip_of_a_varlen_case(tmp_path):
    case = Case(UNEVEN, prefix=9, window_left=15)
    inputs = build(case, seed=2)
    want = want_of(case, inputs)
    cpu = {n: t.cpu() for n, t in inputs.items()}
    request, digest = make_varlen_case(tmp_path, "triton", cpu, case.dtype, **case.masking)
    worker = core.Worker(triton_backend.Backend(DEVICE), DEVICE)
    prepared = worker.handle("prepare", request)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared, prepared
    assert prepared["facts"]["op"] == "varlen"
    worker.handle("fetch", {"case_id": "case"})
    (f,) = request["outputs"]
    assert_close(read_tensor(f["path"], f["dims"], f["dtype"]), want, case.dtype)


def test_a_case_at_the_interpreter_limit_takes_seconds():
    """The interpreter's max_elements: 512 tokens of 4 heads at head dim 64
    (2^17 elements per tensor), causal, runs in a few seconds."""
    if DEVICE.type != "cpu":
        pytest.skip("the interpreter's limit")
    import time

    case = Case((200, 1, 150, 97, 64), heads=4, kv_heads=4, prefix=0)
    inputs = build(case)
    assert inputs["q"].numel() == triton_backend.INTERPRETER_VARLEN_MAX_ELEMENTS
    start = time.perf_counter()
    run_kernel(case, inputs)
    assert time.perf_counter() - start < 30
