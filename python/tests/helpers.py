"""What the Python tests share: cases written as the host writes them and
a float64 reference."""

import hashlib
import math

import torch

import flashcore_worker as core

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
TOLERANCE = {"fp16": 1e-2, "bf16": 4e-2, "fp32": 1e-4}


def shape(batch, heads, kv_heads, seq_q, seq_k, head_dim, causal, dtype):
    return core.Shape(batch, heads, kv_heads, seq_q, seq_k, head_dim, causal, dtype)


def shape_json(s):
    return {"batch": s.batch, "heads": s.heads, "kv_heads": s.kv_heads, "seq_q": s.seq_q, "seq_k": s.seq_k,
            "head_dim": s.head_dim, "causal": s.causal, "dtype": s.dtype}


def make_case(tmp_path, s, variant, seed=0, case_id="case"):
    """Writes Q, K and V for s into tmp_path; returns the prepare params, the
    tensors and the SHA-256 of the bytes written."""
    gen = torch.Generator().manual_seed(seed)
    tensors = [torch.randn(dims, generator=gen).to(DTYPES[s.dtype]) for dims in (s.q_shape, s.kv_shape, s.kv_shape)]
    files, digest = {}, hashlib.sha256()
    for key, tensor in zip("QKV", tensors):
        path = tmp_path / f"{key.lower()}.bin"
        raw = tensor.contiguous().view(torch.uint8).numpy().tobytes()
        path.write_bytes(raw)
        digest.update(raw)
        files[key] = str(path)
    files["Output"] = str(tmp_path / "out.bin")
    params = {"case_id": case_id, "variant": variant, "shape": shape_json(s), "files": files}
    return params, tensors, digest.hexdigest()


def make_op_case(tmp_path, op, variant, inputs, outputs, params=None, case_id="case"):
    """Writes the named input tensors (name -> tensor, in the op's order)
    into tmp_path, as the host writes an op's inputs; returns the prepare
    params, naming the outputs ((name, dims, dtype), in the op's order), and
    the SHA-256 of the bytes written, file after file."""
    digest, files = hashlib.sha256(), []
    for name, tensor in inputs.items():
        path = tmp_path / f"{name}.bin"
        raw = tensor.contiguous().view(torch.uint8).numpy().tobytes()
        path.write_bytes(raw)
        digest.update(raw)
        files.append(tensor_file(name, path, list(tensor.shape), DTYPE_NAMES[tensor.dtype]))
    out = [tensor_file(name, tmp_path / ("out.bin" if len(outputs) == 1 else f"out-{name}.bin"), dims, dtype)
           for name, dims, dtype in outputs]
    request = {"case_id": case_id, "variant": variant, "op": op, "params": params or {}, "inputs": files,
               "outputs": out}
    return request, digest.hexdigest()


def tensor_file(name, path, dims, dtype):
    """sdk.TensorFile as JSON."""
    return {"name": name, "path": str(path), "dtype": dtype, "dims": list(dims)}


# The index tensors of the paged-cache ops (block tables, sequence lengths) are int32.
DTYPE_NAMES = {**{dtype: name for name, dtype in DTYPES.items()}, torch.int32: "int32"}


def make_rmsnorm_case(tmp_path, rows, cols, dtype, variant, seed=0, case_id="case"):
    """An rmsnorm case as the host sends it: x [rows, cols] and weight
    [cols] in dtype, y [rows, cols]. Returns the prepare params, (x, weight)
    and the input hash."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen).to(DTYPES[dtype])
    weight = (1 + 0.5 * torch.randn(cols, generator=gen)).to(DTYPES[dtype])
    params = {"rows": str(rows), "cols": str(cols), "dtype": dtype}
    request, digest = make_op_case(tmp_path, "rmsnorm", variant, {"x": x, "weight": weight},
                                   [("y", [rows, cols], dtype)], params, case_id)
    return request, (x, weight), digest


def rmsnorm_reference(x, weight, eps=1e-6):
    """y = x / sqrt(mean(x²) + eps) · weight per row, in float64."""
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


def read_tensor(path, dims, dtype):
    """The tensor in the file at path, as the host reads an output."""
    raw = torch.from_file(str(path), size=math.prod(dims) * core.DTYPE_SIZES[dtype], dtype=torch.uint8)
    return raw.view(DTYPES[dtype]).reshape(dims)


def reference(q, k, v, causal):
    """softmax(Q·Kᵀ/√D)·V in float64, top-left causal, grouped-query heads."""
    q, k, v = (t.double() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        rows = torch.arange(q.shape[2])[:, None]
        cols = torch.arange(k.shape[2])[None, :]
        scores = scores.masked_fill(cols > rows, float("-inf"))
    return torch.softmax(scores, -1) @ v


def read_output(path, s):
    raw = torch.from_file(str(path), size=math.prod(s.q_shape) * core.DTYPE_SIZES[s.dtype], dtype=torch.uint8)
    return raw.view(DTYPES[s.dtype]).reshape(s.q_shape)


def assert_close(got, want, dtype):
    assert not torch.isnan(got.double()).any(), "output has NaN (poison left?)"
    err = (got.double() - want).abs().max().item()
    assert err <= TOLERANCE[dtype], f"max error {err:.3g} > {TOLERANCE[dtype]}"


def restore_triton_autotune(monkeypatch):
    """Has monkeypatch put triton's autotune back (where triton is there)."""
    try:
        import triton
        import triton.runtime.autotuner as autotuner
    except ImportError:
        return
    for module in (triton, triton.runtime, autotuner):
        monkeypatch.setattr(module, "autotune", module.autotune)



# ---------------------------------------------------------------- attention's backward

# What each attention mode takes and returns, in order (flashcore_worker.OpCase).
MODE_INPUTS = {"bwd": ("q", "k", "v", "o", "do", "lse"), "fwd+bwd": ("q", "k", "v", "do")}
MODE_OUTPUTS = {"bwd": ("dq", "dk", "dv"), "fwd+bwd": ("o", "dq", "dk", "dv")}


def reference_backward(q, k, v, do, causal):
    """The fp64 reference forward and its autograd backward, top-left
    causal, grouped-query heads: (o, lse, dq, dk, dv), with lse[b, h, i]
    the natural log of row i's softmax denominator, scale included."""
    q, k, v = (t.detach().double().requires_grad_() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    scores = q @ k.repeat_interleave(group, 1).transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        rows = torch.arange(q.shape[2])[:, None]
        cols = torch.arange(k.shape[2])[None, :]
        scores = scores.masked_fill(cols > rows, float("-inf"))
    lse = scores.logsumexp(-1)
    o = torch.softmax(scores, -1) @ v.repeat_interleave(group, 1)
    dq, dk, dv = torch.autograd.grad(o, (q, k, v), do.double())
    return o.detach(), lse.detach(), dq, dk, dv


def make_attention_case(tmp_path, s, variant, mode, seed=0, case_id="case"):
    """An attention case of mode bwd or fwd+bwd as the host sends it: the
    op's axes in params (mode among them), the shape with its mode, and
    named files in and out. q, k, v and do are random in the dtype; o
    (rounded to the dtype) and lse (fp32) come from the fp64 reference
    forward. Returns the prepare params, every tensor by name (inputs as
    written; "want": the fp64 reference of each output by name) and the
    input hash."""
    gen = torch.Generator().manual_seed(seed)
    dtype = DTYPES[s.dtype]
    q, k, v, do = (torch.randn(dims, generator=gen).to(dtype) for dims in (s.q_shape, s.kv_shape, s.kv_shape, s.q_shape))
    o, lse, dq, dk, dv = reference_backward(q, k, v, do, s.causal)
    tensors = {"q": q, "k": k, "v": v, "o": o.to(dtype), "do": do, "lse": lse.float()}
    want = {"o": o, "dq": dq, "dk": dk, "dv": dv}
    dims = {"o": s.q_shape, "dq": s.q_shape, "dk": s.kv_shape, "dv": s.kv_shape}
    params = {"mode": mode, "batch": str(s.batch), "heads": str(s.heads), "kv_heads": str(s.kv_heads),
              "seq_q": str(s.seq_q), "seq_k": str(s.seq_k), "head_dim": str(s.head_dim), "dtype": s.dtype,
              "causal": "true" if s.causal else "false"}
    request, digest = make_op_case(tmp_path, "attention", variant, {n: tensors[n] for n in MODE_INPUTS[mode]},
                                   [(n, dims[n], s.dtype) for n in MODE_OUTPUTS[mode]], params, case_id)
    request["shape"] = {**shape_json(s), "mode": mode}
    return request, {**tensors, "want": want}, digest


def read_outputs(request):
    """Every output file a request names, by name, as the host reads them."""
    return {f["name"]: read_tensor(f["path"], f["dims"], f["dtype"]) for f in request["outputs"]}


def assert_grads_close(got, want, dtype, scale=1.0):
    """Each output of got (name -> tensor) against want's fp64 reference,
    within the dtype's tolerance times the reference's largest magnitude
    (at least 1) times scale: gradients grow with the problem."""
    assert set(got) == set(want), f"outputs {sorted(got)}, want {sorted(want)}"
    for name, tensor in got.items():
        assert not torch.isnan(tensor.double()).any(), f"{name} has NaN (poison left?)"
        bound = TOLERANCE[dtype] * max(1.0, want[name].abs().max().item()) * scale
        err = (tensor.double() - want[name]).abs().max().item()
        assert err <= bound, f"{name}: max error {err:.3g} > {bound:.3g}"
