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
    tensors and the SHA-256 of the bytes written. The mask axes s sets away
    from their defaults go into the params, as the host sends them."""
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
    masks = s.mask_keywords()
    if masks:
        params["params"] = {name: str(value) for name, value in masks.items()}
    return params, tensors, digest.hexdigest()


def prepared_ok(prepared):
    """The facts of a Prepare that ran the case (no diagnostic)."""
    assert "diagnostics" not in prepared, prepared
    return prepared["facts"]


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


# ---------------------------------------------------------------- decode (paged KV cache)

# The poison of a paged case (the contract's): keys of magnitude 8 with
# random signs, values 100, in every page past a sequence's length and in
# the slots of its last page past it.
POISON_KEY, POISON_VALUE = 8.0, 100.0


def make_decode_tensors(seed, batch, heads, kv_heads, q_len, head_dim, page_size, lengths, dtype, spare_pages=3):
    """A decode case's inputs as the host builds them: q [B, q_len, H, D];
    k_cache and v_cache [num_pages, page_size, KVH, D] whose pages are
    scattered through the pool in a random order; block_table [B,
    max_pages] int32 whose entries past a sequence's pages point at poison
    pages; cache_seqlens [B] int32. The slots of each last page past its
    sequence's length hold poison too, and so do the spare pages no table
    names."""
    gen = torch.Generator().manual_seed(seed)
    dt = DTYPES[dtype]
    max_pages = -(-max(lengths) // page_size)
    used = [-(-n // page_size) for n in lengths]
    poison_pages = batch * max_pages - sum(used)
    num_pages = sum(used) + poison_pages + spare_pages
    k_cache = POISON_KEY * (torch.randint(0, 2, (num_pages, page_size, kv_heads, head_dim), generator=gen) * 2 - 1)
    v_cache = torch.full((num_pages, page_size, kv_heads, head_dim), POISON_VALUE)
    order = torch.randperm(num_pages, generator=gen).tolist()
    real, poison = order[:sum(used)], order[sum(used):sum(used) + poison_pages]
    block_table = torch.empty(batch, max_pages, dtype=torch.int32)
    for b, n in enumerate(lengths):
        pages, real = real[:used[b]], real[used[b]:]
        block_table[b, :used[b]] = torch.tensor(pages, dtype=torch.int32)
        block_table[b, used[b]:] = torch.tensor(poison[:max_pages - used[b]], dtype=torch.int32)
        poison = poison[max_pages - used[b]:]
        for j in range(n):
            page, slot = pages[j // page_size], j % page_size
            k_cache[page, slot] = torch.randn(kv_heads, head_dim, generator=gen)
            v_cache[page, slot] = torch.randn(kv_heads, head_dim, generator=gen)
    q = torch.randn(batch, q_len, heads, head_dim, generator=gen)
    return {"q": q.to(dt), "k_cache": k_cache.to(dt), "v_cache": v_cache.to(dt), "block_table": block_table,
            "cache_seqlens": torch.tensor(lengths, dtype=torch.int32)}


def decode_params(inputs, dtype, causal=True, window_left=-1, softcap=0.0):
    """A decode case's axes as the host sends them: text."""
    batch, q_len, heads, head_dim = inputs["q"].shape
    num_pages, page_size, kv_heads, _ = inputs["k_cache"].shape
    lengths = inputs["cache_seqlens"]
    return {"batch": str(batch), "heads": str(heads), "kv_heads": str(kv_heads), "q_len": str(q_len),
            "head_dim": str(head_dim), "page_size": str(page_size), "context_len": str(int(lengths.max())),
            "context_dist": "uniform", "dtype": dtype, "causal": "true" if causal else "false",
            "window_left": str(window_left), "softcap": f"{softcap:g}",
            "max_pages": str(inputs["block_table"].shape[1]), "num_pages": str(num_pages)}


def make_decode_case(tmp_path, variant, inputs, dtype, case_id="case", **masking):
    """A decode request as the host sends it (make_decode_tensors' inputs
    written in the op's order, o [B, q_len, H, D] out) and its input hash."""
    params = decode_params(inputs, dtype, **masking)
    return make_op_case(tmp_path, "decode", variant, inputs, [("o", list(inputs["q"].shape), dtype)], params,
                        case_id)


def decode_reference(inputs, causal=True, window_left=-1, softcap=0.0, align="bottom-right", use_table=True,
                     mask_lengths=True):
    """The decode output in float64, each sequence's keys read one by one
    through the block table. The last three arguments compute it wrongly
    on purpose, as a broken kernel would, to show the checks catch it:
    align "top-left" puts query i at position i, use_table False reads the
    pool's pages in order, mask_lengths False reads every slot of the
    sequence's pages (the poison past its length too)."""
    q, k_cache, v_cache = (inputs[n].double() for n in ("q", "k_cache", "v_cache"))
    table, lengths = inputs["block_table"].tolist(), inputs["cache_seqlens"].tolist()
    batch, q_len, heads, head_dim = q.shape
    page_size, kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = heads // kv_heads
    out = torch.empty_like(q)
    for b in range(batch):
        length = lengths[b]
        slots = length if mask_lengths else -(-length // page_size) * page_size
        pages = table[b] if use_table else list(range(len(table[b])))
        keys = torch.stack([k_cache[pages[j // page_size], j % page_size] for j in range(slots)])  # [L, KVH, D]
        values = torch.stack([v_cache[pages[j // page_size], j % page_size] for j in range(slots)])
        for i in range(q_len):
            pos = length - q_len + i if align == "bottom-right" else i
            seen = [j for j in range(slots)
                    if (not causal or j <= pos) and (window_left < 0 or j >= pos - window_left)]
            for h in range(heads):
                kh, vh = keys[seen, h // group], values[seen, h // group]
                scores = kh @ q[b, i, h] / math.sqrt(head_dim)
                if softcap > 0:
                    scores = softcap * torch.tanh(scores / softcap)
                out[b, i, h] = torch.softmax(scores, 0) @ vh
    return out


# Decode's tolerance: |got - want| <= tol * (1 + |want|).
DECODE_TOLERANCE = {"fp16": 1e-2, "bf16": 3e-2, "fp32": 1e-4}


def decode_error(got, want):
    """The largest |got - want| / (1 + |want|)."""
    return ((got.double() - want).abs() / (1 + want.abs())).max().item()


def assert_decode_close(got, want, dtype):
    assert not torch.isnan(got.double()).any(), "output has NaN (poison read?)"
    err = decode_error(got, want)
    assert err <= DECODE_TOLERANCE[dtype], f"max error {err:.3g} > {DECODE_TOLERANCE[dtype]}"


# ---------------------------------------------------------------- varlen (packed variable-length prefill)


def make_varlen_tensors(seed, q_lens, heads, kv_heads, head_dim, dtype, prefix=0, k_lens=None):
    """A varlen case's inputs as the host builds them: the sequences packed
    end to end, q [total_q, H, D], k and v [total_k, KVH, D] in dtype, and
    cu_seqlens_q, cu_seqlens_k [B + 1] int32. Sequence b has q_lens[b]
    queries and q_lens[b] + prefix keys (k_lens, when given, instead)."""
    gen = torch.Generator().manual_seed(seed)
    dt = DTYPES[dtype]
    k_lens = list(k_lens) if k_lens is not None else [n + prefix for n in q_lens]
    if len(k_lens) != len(q_lens) or any(lk < lq for lq, lk in zip(q_lens, k_lens)):
        raise ValueError(f"key lengths {k_lens} must match the query lengths {list(q_lens)} and be no shorter")
    cu_q = torch.tensor([0, *q_lens], dtype=torch.int64).cumsum(0).to(torch.int32)
    cu_k = torch.tensor([0, *k_lens], dtype=torch.int64).cumsum(0).to(torch.int32)
    total_q, total_k = int(cu_q[-1]), int(cu_k[-1])
    q = torch.randn(total_q, heads, head_dim, generator=gen)
    k = torch.randn(total_k, kv_heads, head_dim, generator=gen)
    v = torch.randn(total_k, kv_heads, head_dim, generator=gen)
    return {"q": q.to(dt), "k": k.to(dt), "v": v.to(dt), "cu_seqlens_q": cu_q, "cu_seqlens_k": cu_k}


def varlen_lengths(inputs):
    """The (query, key) lengths of each sequence, from the cu_seqlens."""
    cu_q, cu_k = inputs["cu_seqlens_q"].tolist(), inputs["cu_seqlens_k"].tolist()
    return [(cu_q[b + 1] - cu_q[b], cu_k[b + 1] - cu_k[b]) for b in range(len(cu_q) - 1)]


def varlen_params(inputs, dtype, causal=True, window_left=-1, window_right=-1, softcap=0.0):
    """A varlen case's axes as the host sends them: text. seq_q and seq_k
    are the longest sequences."""
    total_q, heads, head_dim = inputs["q"].shape
    total_k, kv_heads, _ = inputs["k"].shape
    lengths = varlen_lengths(inputs)
    return {"batch": str(len(lengths)), "heads": str(heads), "kv_heads": str(kv_heads),
            "seq_q": str(max(lq for lq, _ in lengths)), "seq_k": str(max(lk for _, lk in lengths)),
            "seq_dist": "uniform", "head_dim": str(head_dim), "dtype": dtype,
            "causal": "true" if causal else "false", "window_left": str(window_left),
            "window_right": str(window_right), "softcap": f"{softcap:g}", "total_q": str(total_q),
            "total_k": str(total_k), "offsets": str(len(lengths) + 1)}


def make_varlen_case(tmp_path, variant, inputs, dtype, case_id="case", **masking):
    """A varlen request as the host sends it (make_varlen_tensors' inputs
    written in the op's order, o [total_q, H, D] out) and its input hash."""
    params = varlen_params(inputs, dtype, **masking)
    return make_op_case(tmp_path, "varlen", variant, inputs, [("o", list(inputs["q"].shape), dtype)], params,
                        case_id)


def varlen_reference(inputs, causal=True, window_left=-1, window_right=-1, softcap=0.0, align="bottom-right",
                     use_cu_seqlens=True):
    """The varlen output in float64, sequence by sequence and row by row:
    query i of a sequence with Lq queries and Lk keys sits at position
    p = Lk - Lq + i and sees key j when j <= p (causal), p - window_left <=
    j (window_left >= 0) and j <= p + window_right (window_right >= 0);
    softcap c turns a scaled score s into c·tanh(s/c). The last two
    arguments compute it wrongly on purpose, as a broken kernel would, to
    show the checks catch it: align "top-left" puts query i at position i,
    use_cu_seqlens False reads the whole pack as one sequence."""
    q, k, v = (inputs[n].double() for n in ("q", "k", "v"))
    heads, head_dim = q.shape[1], q.shape[2]
    group = heads // k.shape[1]
    if use_cu_seqlens:
        cu_q, cu_k = inputs["cu_seqlens_q"].tolist(), inputs["cu_seqlens_k"].tolist()
    else:
        cu_q, cu_k = [0, q.shape[0]], [0, k.shape[0]]
    out = torch.empty_like(q)
    for b in range(len(cu_q) - 1):
        q0, lq, k0, lk = cu_q[b], cu_q[b + 1] - cu_q[b], cu_k[b], cu_k[b + 1] - cu_k[b]
        for i in range(lq):
            pos = lk - lq + i if align == "bottom-right" else i
            seen = [j for j in range(lk)
                    if (not causal or j <= pos) and (window_left < 0 or j >= pos - window_left)
                    and (window_right < 0 or j <= pos + window_right)]
            keys = k[[k0 + j for j in seen]]  # [n, KVH, D]
            values = v[[k0 + j for j in seen]]
            for h in range(heads):
                scores = keys[:, h // group] @ q[q0 + i, h] / math.sqrt(head_dim)
                if softcap > 0:
                    scores = softcap * torch.tanh(scores / softcap)
                out[q0 + i, h] = torch.softmax(scores, 0) @ values[:, h // group]
    return out


# Varlen's tolerance, as decode's: |got - want| <= tol * (1 + |want|).
VARLEN_TOLERANCE = DECODE_TOLERANCE


def assert_varlen_close(got, want, dtype, tolerance=None):
    assert not torch.isnan(got.double()).any(), "output has NaN (a row left unwritten?)"
    tol = (tolerance or VARLEN_TOLERANCE)[dtype]
    err = decode_error(got, want)
    assert err <= tol, f"max error {err:.3g} > {tol}"


# ---------------------------------------------------------------- dense attention under masks


def masked_reference(q, k, v, s):
    """softmax(cap(Q·Kᵀ/√D))·V in float64 under the mask of s: query row i
    at key position i (top-left) or Sk - Sq + i (bottom-right), key j seen
    when causal allows (j <= pos) and the window does (pos - left <= j <=
    pos + right); a row that sees no key is zeros."""
    q, k, v = (t.double() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if s.softcap:
        scores = s.softcap * torch.tanh(scores / s.softcap)
    pos = torch.arange(s.seq_q)[:, None] + (s.seq_k - s.seq_q if s.causal_align == "bottom-right" else 0)
    j = torch.arange(s.seq_k)[None, :]
    seen = torch.ones(s.seq_q, s.seq_k, dtype=torch.bool)
    if s.causal:
        seen &= j <= pos
    if s.window_left >= 0:
        seen &= j >= pos - s.window_left
    if s.window_right >= 0:
        seen &= j <= pos + s.window_right
    weights = torch.softmax(scores.masked_fill(~seen, float("-inf")), -1).nan_to_num(0.0)
    return weights @ v


def masked(s, **masks):
    return s.with_masks({name: str(value) for name, value in masks.items()})
