"""The triton backend's backward pass (triton_attention_bwd.py) and the
forward's log-sum-exp under Triton's CPU interpreter, against float64
autograd. Shapes stay small and odd: the interpreter runs one program at a
time in NumPy, and lengths that are multiples of no block exercise the masks."""

import inspect
import math

import pytest
import torch

import flashcore_worker as core
from helpers import DTYPES, make_op_case, read_tensor, shape

triton_backend = pytest.importorskip("triton_backend")
import triton_attention  # noqa: E402  (after triton_backend set TRITON_INTERPRET)
import triton_attention_bwd  # noqa: E402

CPU = torch.device("cpu")
# Relative to the largest magnitude of the reference gradient.
GRAD_TOLERANCE = {"fp32": 1e-4, "fp16": 5e-3}

SHAPES = [
    shape(1, 2, 1, 37, 53, 16, True, "fp32"),    # GQA, causal, seq_q < seq_k, ragged everywhere
    shape(1, 2, 1, 37, 53, 16, False, "fp32"),
    shape(1, 2, 1, 37, 53, 16, True, "fp16"),
    shape(1, 2, 1, 37, 53, 16, False, "fp16"),
    shape(2, 4, 2, 70, 70, 32, True, "fp32"),    # GQA, seq_q = seq_k, causal
    shape(1, 4, 2, 48, 48, 16, False, "fp16"),   # GQA, seq_q = seq_k, whole blocks
    shape(1, 2, 2, 61, 29, 16, True, "fp32"),    # causal, seq_q > seq_k: later rows see every key
    shape(1, 3, 3, 45, 45, 64, True, "fp16"),    # one of the declared head dims
]


def inputs(s, seed=0):
    """q, k, v and dO of shape s in its dtype (values as the kernel sees them)."""
    gen = torch.Generator().manual_seed(seed)
    dims = (s.q_shape, s.kv_shape, s.kv_shape, s.q_shape)
    return tuple(torch.randn(d, generator=gen).to(DTYPES[s.dtype]) for d in dims)


def reference(q, k, v, do, causal):
    """O, the natural log-sum-exp per row, dQ, dK and dV in float64 by
    autograd through an explicit softmax: top-left causal, grouped-query
    heads (the KV heads' gradients summed over their query heads)."""
    q, k, v = (t.double().requires_grad_() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    scores = q @ k.repeat_interleave(group, 1).transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        above = torch.arange(k.shape[2])[None, :] > torch.arange(q.shape[2])[:, None]
        scores = scores.masked_fill(above, float("-inf"))
    lse = torch.logsumexp(scores, -1)
    out = torch.softmax(scores, -1) @ v.repeat_interleave(group, 1)
    dq, dk, dv = torch.autograd.grad(out, (q, k, v), do.double())
    return out.detach(), lse.detach(), dq, dk, dv


def assert_grad_close(name, got, want, dtype):
    assert got.shape == want.shape, f"{name}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert not torch.isnan(got.double()).any(), f"{name} has NaN (an element left unwritten?)"
    err = (got.double() - want).abs().max().item()
    bound = GRAD_TOLERANCE[dtype] * max(want.abs().max().item(), 1.0)
    assert err <= bound, f"{name}: max error {err:.3g} > {bound:.3g}"


def nan_like(t):
    return torch.full_like(t, float("nan"))


def test_reference_agrees_with_torch_sdpa():
    """The explicit reference against PyTorch's own attention and autograd."""
    s = SHAPES[4]
    q, k, v, do = (t.double().requires_grad_() for t in inputs(s))
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    want = torch.autograd.grad(out, (q, k, v), do.detach())
    got = reference(q.detach(), k.detach(), v.detach(), do.detach(), True)
    for a, b in zip((out.detach(), *want), (got[0], *got[2:])):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("s", SHAPES, ids=str)
def test_backward_matches_float64_autograd(s):
    q, k, v, do = inputs(s)
    out, lse, *want = reference(q, k, v, do, s.causal)
    dq, dk, dv = nan_like(q), nan_like(k), nan_like(v)
    triton_attention_bwd.backward(q, k, v, out.to(q.dtype), do, lse.float(), dq, dk, dv, s.causal, tuned=False)
    for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), want):
        assert_grad_close(name, got, ref, s.dtype)


@pytest.mark.parametrize("s", SHAPES, ids=str)
def test_forward_stores_the_log_sum_exp(s):
    q, k, v, do = inputs(s)
    out_want, lse_want, *_ = reference(q, k, v, do, s.causal)
    out, lse = nan_like(q), torch.full(s.q_shape[:3], float("nan"))
    triton_attention.attention(q, k, v, out, s.causal, tuned=False, lse=lse)
    assert_grad_close("o", out, out_want, s.dtype)
    # lse is fp32 whatever the inputs' dtype: its error is the scores' rounding.
    assert (lse.double() - lse_want).abs().max().item() <= 1e-5 * max(lse_want.abs().max().item(), 1.0)


def test_the_forward_without_lse_leaves_it_alone():
    s = SHAPES[0]
    q, k, v, _ = inputs(s)
    out, untouched = torch.empty_like(q), torch.full(s.q_shape[:3], 7.0)
    triton_attention.attention(q, k, v, out, s.causal, tuned=False)
    assert torch.equal(untouched, torch.full(s.q_shape[:3], 7.0))


def test_forward_then_backward_chains_through_the_kernels_lse():
    """fwd+bwd as the backend runs it: the backward reads the forward's O and lse."""
    s = SHAPES[4]
    q, k, v, do = inputs(s, seed=3)
    _, _, *want = reference(q, k, v, do, s.causal)
    out, lse = torch.empty_like(q), torch.empty(s.q_shape[:3])
    triton_attention.attention(q, k, v, out, s.causal, tuned=False, lse=lse)
    dq, dk, dv = nan_like(q), nan_like(k), nan_like(v)
    triton_attention_bwd.backward(q, k, v, out, do, lse, dq, dk, dv, s.causal, tuned=False)
    for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), want):
        assert_grad_close(name, got, ref, s.dtype)


def test_a_wrong_lse_is_caught():
    """The comparison has teeth: the probabilities come from lse, so an lse
    off by 0.01 makes every gradient miss the tolerance."""
    s = SHAPES[0]
    q, k, v, do = inputs(s)
    out, lse, *want = reference(q, k, v, do, s.causal)
    dq, dk, dv = nan_like(q), nan_like(k), nan_like(v)
    triton_attention_bwd.backward(q, k, v, out.float(), do, lse.float() + 0.01, dq, dk, dv, s.causal, tuned=False)
    for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), want):
        with pytest.raises(AssertionError):
            assert_grad_close(name, got, ref, s.dtype)


@pytest.mark.parametrize("index", range(len(triton_attention_bwd.DKDV_TUNING_SPACE)))
@pytest.mark.parametrize("causal", [True, False])
def test_every_tuned_tile_size_is_right(index, causal):
    """The autotuner's tile sizes (the interpreter ignores warps and stages),
    on seq lens both below and above the tiles, with GQA."""
    m1, n1, _, _ = triton_attention_bwd.DKDV_TUNING_SPACE[index]
    m2, n2, _, _ = triton_attention_bwd.DQ_TUNING_SPACE[index]
    config = {"dkdv": {"BLOCK_M": m1, "BLOCK_N": n1}, "dq": {"BLOCK_M": m2, "BLOCK_N": n2}}
    for s in (shape(1, 4, 2, 75, 139, 16, causal, "fp32"), shape(1, 2, 1, 139, 75, 16, causal, "fp32")):
        q, k, v, do = inputs(s, seed=index)
        out, lse, *want = reference(q, k, v, do, causal)
        dq, dk, dv = nan_like(q), nan_like(k), nan_like(v)
        triton_attention_bwd.backward(q, k, v, out.float(), do, lse.float(), dq, dk, dv, causal, config=config)
        for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), want):
            assert_grad_close(f"{name} of {s}", got, ref, s.dtype)


def test_the_autotuned_path_launches_the_first_fitting_config(monkeypatch, keep_triton_autotune):
    """backward(tuned=True) through triton.autotune, which the interpreter's
    shim (flashcore_triton_interpreter) makes launch the first config the
    pruner keeps, untimed: a copy of the module loaded after the shim."""
    import importlib.util

    import flashcore_triton_interpreter as shim

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert shim.install()
    spec = importlib.util.spec_from_file_location("triton_attention_bwd_shimmed", triton_attention_bwd.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.chosen_config() == ""
    s = SHAPES[0]
    q, k, v, do = inputs(s)
    out, lse, *want = reference(q, k, v, do, s.causal)
    dq, dk, dv = nan_like(q), nan_like(k), nan_like(v)
    module.backward(q, k, v, out.float(), do, lse.float(), dq, dk, dv, s.causal)
    for name, got, ref in zip(("dq", "dk", "dv"), (dq, dk, dv), want):
        assert_grad_close(name, got, ref, s.dtype)
    assert module.chosen_config() == ("dkdv BLOCK_M=32 BLOCK_N=64 warps=4 stages=3; "
                                      "dq BLOCK_M=64 BLOCK_N=32 warps=4 stages=3")


@pytest.mark.parametrize("prune, space, dtype, head_dim, kept, dropped", [
    ("prune_dkdv", "DKDV_TUNING_SPACE", torch.float16, 128, (64, 64, 4, 3), None),
    ("prune_dkdv", "DKDV_TUNING_SPACE", torch.float32, 128, (32, 64, 4, 3), (64, 64, 4, 3)),
    ("prune_dq", "DQ_TUNING_SPACE", torch.float32, 128, (64, 32, 4, 3), (128, 64, 8, 2)),
])
def test_pruning_drops_backward_tiles_that_cannot_fit(prune, space, dtype, head_dim, kept, dropped):
    import triton

    configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=st)
               for m, n, w, st in getattr(triton_attention_bwd, space)]
    q = torch.empty(1, 1, 1, head_dim, dtype=dtype)
    left = {(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages)
            for c in getattr(triton_attention_bwd, prune)(configs, {"Q": q}, HEAD_DIM=head_dim)}
    assert kept in left
    assert dropped is None or dropped not in left


# ---------------------------------------------------------------- the backend


def op_case(s, mode, tunables=None, seed=0, output_names=None):
    """An attention OpCase of mode "bwd" or "fwd+bwd" as the worker builds
    it, with the reference's O and lse as bwd's inputs; and the reference."""
    q, k, v, do = inputs(s, seed)
    out, lse, *grads = reference(q, k, v, do, s.causal)
    if mode == "bwd":
        named = {"q": q, "k": k, "v": v, "o": out.to(q.dtype), "do": do, "lse": lse.float()}
    else:
        named = {"q": q, "k": k, "v": v, "do": do}
    dims = {"o": s.q_shape, "dq": s.q_shape, "dk": s.kv_shape, "dv": s.kv_shape}
    names = output_names or triton_backend.MODE_OUTPUTS[mode]
    outputs = [core.TensorFile(name, f"/nonexistent/{name}.bin", s.dtype, dims[name]) for name in names]
    params = {"mode": mode, "batch": str(s.batch), "heads": str(s.heads), "kv_heads": str(s.kv_heads),
              "seq_q": str(s.seq_q), "seq_k": str(s.seq_k), "head_dim": str(s.head_dim), "dtype": s.dtype,
              "causal": str(s.causal).lower()}
    case = core.OpCase("case", "triton", "attention", params, tunables or {}, CPU, named, outputs)
    return case, {"o": out, "dq": grads[0], "dk": grads[1], "dv": grads[2]}


@pytest.mark.parametrize("mode", ["bwd", "fwd+bwd"])
@pytest.mark.parametrize("s", [SHAPES[0], SHAPES[3], SHAPES[7]], ids=str)
def test_prepare_op_runs_the_mode(s, mode):
    case, want = op_case(s, mode)
    kernel = triton_backend.Backend(CPU).prepare_op(case)
    for buffer in core.as_tensors(kernel.output):
        core.poison(buffer)
    got = core.check_outputs(kernel.run(), case.outputs, "attention")
    for f, tensor in zip(case.outputs, got):
        assert_grad_close(f.name, tensor, want[f.name], s.dtype)
    facts = kernel.facts
    assert facts["mode"] == mode and facts["interpreter"] == "true"
    assert "_attention_backward_dkdv" in facts["kernels"] and "_attention_backward_dq" in facts["kernels"]
    assert "triton_attention_bwd.backward" in facts["function"]
    assert "dkdv BLOCK_M=16 BLOCK_N=32" in facts["config"]
    assert ("_attention_forward" in facts["kernels"]) == (mode == "fwd+bwd")


def test_prepare_op_returns_the_outputs_in_the_order_the_case_names_them():
    s = SHAPES[0]
    case, want = op_case(s, "fwd+bwd", output_names=("dv", "dk", "dq", "o"))
    got = triton_backend.Backend(CPU).prepare_op(case).run()
    for name, tensor in zip(("dv", "dk", "dq", "o"), got):
        assert_grad_close(name, tensor, want[name], s.dtype)


def test_bwd_refuses_fixed_tunables_and_fwd_bwd_gives_them_to_the_forward():
    s = SHAPES[0]
    fixed = {"BLOCK_M": "16", "BLOCK_N": "16", "num_warps": "2", "num_stages": "1"}
    case, _ = op_case(s, "bwd", tunables=fixed)
    with pytest.raises(core.Unsupported) as refused:
        triton_backend.Backend(CPU).prepare_op(case)
    assert "autotuned only" in refused.value.summary
    case, want = op_case(s, "fwd+bwd", tunables=fixed)
    kernel = triton_backend.Backend(CPU).prepare_op(case)
    assert kernel.facts["forward_config"] == "BLOCK_M=16 BLOCK_N=16 warps=2 stages=1"
    assert_grad_close("dq", kernel.run()[1], want["dq"], s.dtype)


def test_the_variant_declares_every_mode():
    backend = triton_backend.Backend(CPU)
    for interpreted in (True, False):
        backend.interpreted = interpreted
        (variant,) = backend.variants()
        assert list(variant["capabilities"]["modes"]) == ["fwd", "bwd", "fwd+bwd"]
        assert variant["capabilities"]["head_dims"] == [64, 128]
        assert "backward" in variant["description"]


@pytest.mark.skipif("modes" not in inspect.signature(core.capabilities).parameters,
                    reason="needs the worker core that builds attention's bwd and fwd+bwd requests as OpCases")
def test_worker_round_trip_of_a_backward_case(tmp_path):
    s = SHAPES[2]
    q, k, v, do = inputs(s, seed=4)
    out, lse, dq, dk, dv = reference(q, k, v, do, s.causal)
    named = {"q": q, "k": k, "v": v, "o": out.to(q.dtype), "do": do, "lse": lse.float()}
    params = {"mode": "bwd", "batch": str(s.batch), "heads": str(s.heads), "kv_heads": str(s.kv_heads),
              "seq_q": str(s.seq_q), "seq_k": str(s.seq_k), "head_dim": str(s.head_dim), "dtype": s.dtype,
              "causal": "true"}
    outputs = [("dq", s.q_shape, s.dtype), ("dk", s.kv_shape, s.dtype), ("dv", s.kv_shape, s.dtype)]
    request, _ = make_op_case(tmp_path, "attention", "triton", named, outputs, params)
    worker = core.Worker(triton_backend.Backend(CPU), CPU)
    prepared = worker.handle("prepare", request)
    assert prepared["facts"]["mode"] == "bwd"
    worker.handle("fetch", {"case_id": "case"})
    for f, want in zip(request["outputs"], (dq, dk, dv)):
        assert_grad_close(f["name"], read_tensor(f["path"], f["dims"], f["dtype"]), want, s.dtype)
