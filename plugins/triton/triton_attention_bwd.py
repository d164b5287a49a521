"""FlashCore bench's own FlashAttention backward pass, written in Triton.

Given Q, K, V, the forward's output O, the output's gradient dO and the
forward's per-row log-sum-exp L (natural log, fp32), it writes dQ, dK and dV
without ever storing the [seq_q, seq_k] probability matrix: each kernel
recomputes the probabilities of its tile as P = exp(scale·Q·Kᵀ − L), in
base 2 like the forward (scale·log2 e folded into the scores, L·log2 e).
Three launches, none with atomics:

1. ``_attention_backward_delta``: Delta_i = Σ_d dO_id·O_id per query row,
   fp32 (the row's Σ_j P_ij·dP_ij, which the softmax's gradient subtracts).
2. ``_attention_backward_dkdv``: one program per (key block, batch ·
   kv head). It holds its K and V tiles and fp32 dK and dV accumulators, and
   walks every query head of its group (GQA) and every query block that can
   see the key block:
       Pᵀ = exp(scale·K·Qᵀ − L)      dV += Pᵀ·dO
       dPᵀ = V·dOᵀ                    dSᵀ = Pᵀ∘(dPᵀ − Delta)
       dK += dSᵀ·Q                    (dK scaled by `scale` once, at the end)
   and stores its dK and dV once. The group's heads are summed in the
   accumulators, so grouped-query heads need no second pass.
3. ``_attention_backward_dq``: one program per (query block, batch · head),
   walking the key blocks its rows can see: dQ = scale·Σ_j dS·K.

Causal masking is top-left, as in the forward (query row i sees key rows
j <= i, also for seq_q != seq_k). The query blocks a dK/dV program walks
split in three loops, and the dQ program's key blocks in two, so that only
tiles that need a mask pay for one:

- dK/dV: the blocks on the causal diagonal (masked), then those whose every
  row sees the whole key block (no mask), then the ragged end of seq_q
  (masked). Query blocks wholly above the diagonal are skipped.
- dQ: the key blocks every row of the tile sees in full (no mask), then the
  diagonal and the ragged end of seq_k (masked); key blocks past the
  diagonal are skipped.

Rows past seq_q and keys past seq_k are loaded as zeros, their
probabilities set to 0 where a mask applies, and never stored.

``backward`` launches the autotuned kernels; ``backward(..., tuned=False)``
one small fixed configuration (Triton's CPU interpreter); ``config=`` one
chosen configuration per kernel.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
_LOG2E = tl.constexpr(LOG2E)

# (BLOCK_M, BLOCK_N, num_warps, num_stages). The dK/dV kernel holds a
# BLOCK_N × head_dim tile of K, V, dK and dV and streams BLOCK_M query rows
# through its loop, so it wants BLOCK_N large and BLOCK_M small; the dQ
# kernel holds BLOCK_M query rows (Q, dO, dQ) and streams BLOCK_N keys, the
# other way round. prune_by_shared_memory drops the tiles whose pipeline
# would not fit before they are compiled.
DKDV_TUNING_SPACE = [
    (32, 64, 4, 3),
    (64, 64, 4, 3),
    (32, 128, 8, 2),
]
DQ_TUNING_SPACE = [
    (64, 32, 4, 3),
    (64, 64, 4, 3),
    (128, 64, 8, 2),
]
# Rows per program of the Delta kernel (one pass over O and dO: not tuned).
DELTA_BLOCK_M = 64
# The same conservative bound as the forward's (Hopper has 227 KB per block).
_SHARED_MEMORY_BUDGET = 200 << 10
# Under the interpreter: small tiles, the dK/dV ones taller than wide and
# the dQ ones the other way, as the tuned ones are, so that the causal
# diagonal's bookkeeping is exercised with BLOCK_M != BLOCK_N.
INTERPRETER_CONFIG = {"dkdv": {"BLOCK_M": 16, "BLOCK_N": 32}, "dq": {"BLOCK_M": 32, "BLOCK_N": 16}}
KERNELS = ("_attention_backward_delta", "_attention_backward_dkdv", "_attention_backward_dq")


@triton.jit
def _attention_backward_delta(O, DO, DELTA,
                              stride_ob, stride_oh, stride_om,
                              stride_dob, stride_doh, stride_dom,
                              heads, seq_q,
                              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    batch = pid_bh // heads
    head = pid_bh % heads
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    inside = rows < seq_q
    o = tl.load(O + batch * stride_ob + head * stride_oh + rows[:, None] * stride_om + offs_d[None, :],
                mask=inside[:, None], other=0.0)
    do = tl.load(DO + batch * stride_dob + head * stride_doh + rows[:, None] * stride_dom + offs_d[None, :],
                 mask=inside[:, None], other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    tl.store(DELTA + pid_bh * seq_q + rows, delta, mask=inside)


@triton.jit
def _dkdv_blocks(dk, dv, k, v, q_base, do_base, lse_base, delta_base, stride_qm, stride_dom,
                 offs_n, offs_d, start, end, seq_q, qk_scale,
                 MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, PRECISION: tl.constexpr):
    """Adds the query blocks start, start+BLOCK_M, ... < end of one query
    head to the key block's dK (unscaled) and dV, all transposed: the key
    block's rows are the tiles' rows."""
    arange_m = tl.arange(0, BLOCK_M)
    for start_m in range(start, end, BLOCK_M):
        rows = start_m + arange_m
        q_ptrs = q_base + rows[:, None] * stride_qm + offs_d[None, :]
        do_ptrs = do_base + rows[:, None] * stride_dom + offs_d[None, :]
        if MASKED:
            inside = rows < seq_q
            q = tl.load(q_ptrs, mask=inside[:, None], other=0.0)
            do = tl.load(do_ptrs, mask=inside[:, None], other=0.0)
            lse = tl.load(lse_base + rows, mask=inside, other=0.0)
            delta = tl.load(delta_base + rows, mask=inside, other=0.0)
        else:
            q = tl.load(q_ptrs)
            do = tl.load(do_ptrs)
            lse = tl.load(lse_base + rows)
            delta = tl.load(delta_base + rows)
        # Scores and probabilities with keys down, queries across: [BLOCK_N, BLOCK_M].
        s_t = tl.dot(k, tl.trans(q), input_precision=PRECISION) * qk_scale
        p_t = tl.math.exp2(s_t - (lse * _LOG2E)[None, :])
        if MASKED:
            keep = rows[None, :] < seq_q
            if CAUSAL:
                keep = keep & (rows[None, :] >= offs_n[:, None])
            p_t = tl.where(keep, p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv, input_precision=PRECISION)
        dp_t = tl.dot(v, tl.trans(do), input_precision=PRECISION)
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk, input_precision=PRECISION)
    return dk, dv


@triton.jit
def _attention_backward_dkdv(Q, K, V, DO, LSE, DELTA, DK, DV, sm_scale, qk_scale,
                             stride_qb, stride_qh, stride_qm,
                             stride_kb, stride_kh, stride_kn,
                             stride_vb, stride_vh, stride_vn,
                             stride_dob, stride_doh, stride_dom,
                             stride_dkb, stride_dkh, stride_dkn,
                             stride_dvb, stride_dvh, stride_dvn,
                             heads, kv_heads, group, seq_q, seq_k,
                             HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_bh = tl.program_id(1)
    batch = pid_bh // kv_heads
    kv_head = pid_bh % kv_heads
    n0 = pid_n * BLOCK_N
    offs_n = n0 + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    keys = offs_n[:, None] < seq_k

    k = tl.load(K + batch * stride_kb + kv_head * stride_kh + offs_n[:, None] * stride_kn + offs_d[None, :],
                mask=keys, other=0.0)
    v = tl.load(V + batch * stride_vb + kv_head * stride_vh + offs_n[:, None] * stride_vn + offs_d[None, :],
                mask=keys, other=0.0)
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)

    whole_blocks_end = seq_q // BLOCK_M * BLOCK_M
    if CAUSAL:
        # Rows below n0 see none of the block: start at the query block
        # holding row n0. A query block whose first row is at or past the
        # block's last key (n0 + BLOCK_N - 1) sees all of it: no mask from there.
        start = n0 // BLOCK_M * BLOCK_M
        diagonal_end = tl.cdiv(n0 + BLOCK_N - 1, BLOCK_M) * BLOCK_M
    else:
        start = 0
        diagonal_end = 0
    tail_start = tl.maximum(diagonal_end, whole_blocks_end)

    for g in range(0, group):
        head = kv_head * group + g
        q_base = Q + batch * stride_qb + head * stride_qh
        do_base = DO + batch * stride_dob + head * stride_doh
        row_base = (batch * heads + head) * seq_q  # LSE and DELTA are contiguous [batch, heads, seq_q]
        dk, dv = _dkdv_blocks(dk, dv, k, v, q_base, do_base, LSE + row_base, DELTA + row_base,
                              stride_qm, stride_dom, offs_n, offs_d, start, tl.minimum(diagonal_end, seq_q),
                              seq_q, qk_scale, True, CAUSAL, BLOCK_M, PRECISION)
        dk, dv = _dkdv_blocks(dk, dv, k, v, q_base, do_base, LSE + row_base, DELTA + row_base,
                              stride_qm, stride_dom, offs_n, offs_d, diagonal_end, whole_blocks_end,
                              seq_q, qk_scale, False, CAUSAL, BLOCK_M, PRECISION)
        dk, dv = _dkdv_blocks(dk, dv, k, v, q_base, do_base, LSE + row_base, DELTA + row_base,
                              stride_qm, stride_dom, offs_n, offs_d, tail_start, seq_q,
                              seq_q, qk_scale, True, CAUSAL, BLOCK_M, PRECISION)

    dk_ptrs = DK + batch * stride_dkb + kv_head * stride_dkh + offs_n[:, None] * stride_dkn + offs_d[None, :]
    dv_ptrs = DV + batch * stride_dvb + kv_head * stride_dvh + offs_n[:, None] * stride_dvn + offs_d[None, :]
    tl.store(dk_ptrs, (dk * sm_scale).to(DK.dtype.element_ty), mask=keys)
    tl.store(dv_ptrs, dv.to(DV.dtype.element_ty), mask=keys)


@triton.jit
def _dq_blocks(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d, start, end, seq_k,
               qk_scale, MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr,
               PRECISION: tl.constexpr):
    """Adds the key blocks start, start+BLOCK_N, ... < end to the query
    tile's dQ (unscaled)."""
    arange_n = tl.arange(0, BLOCK_N)
    for start_n in range(start, end, BLOCK_N):
        cols = start_n + arange_n
        k_ptrs = k_base + cols[:, None] * stride_kn + offs_d[None, :]  # [BLOCK_N, D]
        v_t_ptrs = v_base + cols[None, :] * stride_vn + offs_d[:, None]  # Vᵀ block, [D, BLOCK_N]
        if MASKED:
            k = tl.load(k_ptrs, mask=cols[:, None] < seq_k, other=0.0)
            v_t = tl.load(v_t_ptrs, mask=cols[None, :] < seq_k, other=0.0)
        else:
            k = tl.load(k_ptrs)
            v_t = tl.load(v_t_ptrs)
        s = tl.dot(q, tl.trans(k), input_precision=PRECISION) * qk_scale
        p = tl.math.exp2(s - lse[:, None])
        if MASKED:
            keep = cols[None, :] < seq_k
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            p = tl.where(keep, p, 0.0)
        dp = tl.dot(do, v_t, input_precision=PRECISION)
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq, input_precision=PRECISION)
    return dq


@triton.jit
def _attention_backward_dq(Q, K, V, DO, LSE, DELTA, DQ, sm_scale, qk_scale,
                           stride_qb, stride_qh, stride_qm,
                           stride_kb, stride_kh, stride_kn,
                           stride_vb, stride_vh, stride_vn,
                           stride_dob, stride_doh, stride_dom,
                           stride_dqb, stride_dqh, stride_dqm,
                           heads, group, seq_q, seq_k,
                           HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    batch = pid_bh // heads
    head = pid_bh % heads
    kv_head = head // group
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows = offs_m[:, None] < seq_q

    q = tl.load(Q + batch * stride_qb + head * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :],
                mask=rows, other=0.0)
    do = tl.load(DO + batch * stride_dob + head * stride_doh + offs_m[:, None] * stride_dom + offs_d[None, :],
                 mask=rows, other=0.0)
    lse = tl.load(LSE + pid_bh * seq_q + offs_m, mask=offs_m < seq_q, other=0.0) * _LOG2E
    delta = tl.load(DELTA + pid_bh * seq_q + offs_m, mask=offs_m < seq_q, other=0.0)
    k_base = K + batch * stride_kb + kv_head * stride_kh
    v_base = V + batch * stride_vb + kv_head * stride_vh
    dq = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    whole_blocks_end = seq_k // BLOCK_N * BLOCK_N
    if CAUSAL:
        # As in the forward: key blocks ending at or before row m0 are seen
        # in full by every row; the tile's last row sees keys below m0+BLOCK_M.
        unmasked_end = tl.minimum((m0 + 1) // BLOCK_N * BLOCK_N, whole_blocks_end)
        end = tl.minimum(seq_k, m0 + BLOCK_M)
    else:
        unmasked_end = whole_blocks_end
        end = seq_k
    dq = _dq_blocks(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d,
                    0, unmasked_end, seq_k, qk_scale, False, CAUSAL, BLOCK_N, PRECISION)
    dq = _dq_blocks(dq, q, do, lse, delta, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d,
                    unmasked_end, end, seq_k, qk_scale, True, CAUSAL, BLOCK_N, PRECISION)

    dq_ptrs = DQ + batch * stride_dqb + head * stride_dqh + offs_m[:, None] * stride_dqm + offs_d[None, :]
    tl.store(dq_ptrs, (dq * sm_scale).to(DQ.dtype.element_ty), mask=rows)


def _pruner(held, streamed):
    """An early_config_prune keeping the configs whose held tiles (two of
    `held` rows: K and V, or Q and dO) plus num_stages of the streamed pair
    fit the shared-memory budget."""

    def prune(configs, named_args, **kwargs):
        head_dim = kwargs.get("HEAD_DIM", named_args.get("HEAD_DIM"))
        element = named_args["Q"].element_size()

        def estimate(c):
            return 2 * (c.kwargs[held] + c.num_stages * c.kwargs[streamed]) * head_dim * element

        fitting = [c for c in configs if estimate(c) <= _SHARED_MEMORY_BUDGET]
        return fitting or [min(configs, key=estimate)]

    return prune


prune_dkdv = _pruner("BLOCK_N", "BLOCK_M")
prune_dq = _pruner("BLOCK_M", "BLOCK_N")


def _configs(space):
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s) for m, n, w, s in space]


# dK, dV and dQ are written whole by each launch, so benchmarking a config
# needs no reset between runs. The autotuner adds the tensors' dtypes to the keys.
_attention_backward_dkdv_tuned = triton.autotune(
    configs=_configs(DKDV_TUNING_SPACE),
    key=["seq_q", "seq_k", "group", "HEAD_DIM", "CAUSAL"],
    prune_configs_by={"early_config_prune": prune_dkdv},
)(_attention_backward_dkdv)
_attention_backward_dq_tuned = triton.autotune(
    configs=_configs(DQ_TUNING_SPACE),
    key=["seq_q", "seq_k", "group", "HEAD_DIM", "CAUSAL"],
    prune_configs_by={"early_config_prune": prune_dq},
)(_attention_backward_dq)


def delta_buffer(q):
    """Scratch for backward's Delta: fp32 [batch, heads, seq_q] on q's device."""
    return torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)


def backward(q, k, v, o, do, lse, dq, dk, dv, causal, tuned=True, config=None, delta=None):
    """Writes the gradients of softmax(Q·Kᵀ/√D)·V with respect to Q, K and V
    into dq, dk and dv, given the forward's output o, its gradient do and
    lse, the forward's natural log-sum-exp per row (fp32 [batch, heads,
    seq_q], contiguous). q, o, do and dq are [batch, heads, seq_q, D]; k, v,
    dk and dv [batch, kv_heads, seq_k, D], every tensor with unit stride in
    its last dim. delta, scratch as delta_buffer(q) makes it, is allocated
    here when not given. config ({"dkdv": {...}, "dq": {...}}, each with
    BLOCK_M and BLOCK_N and optionally num_warps and num_stages) launches
    those configs untuned; tuned=False the interpreter's small ones."""
    batch, heads, seq_q, head_dim = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    if heads % kv_heads:
        raise ValueError(f"{heads} query heads do not split into {kv_heads} kv heads")
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o), ("do", do), ("dq", dq), ("dk", dk), ("dv", dv)):
        if t.stride(-1) != 1:
            raise ValueError(f"{name} must have unit stride in its last dim")
    if lse.dtype != torch.float32 or not lse.is_contiguous() or tuple(lse.shape) != (batch, heads, seq_q):
        raise ValueError(f"lse must be a contiguous fp32 {(batch, heads, seq_q)} tensor, "
                         f"got {lse.dtype} {tuple(lse.shape)}")
    if delta is None:
        delta = delta_buffer(q)
    group = heads // kv_heads
    sm_scale = head_dim ** -0.5
    # As in the forward: fp32 products as three TF32 ones on a GPU (about
    # fp32 accuracy), exact ones in the interpreter; fp16 and bf16 ignore it.
    precision = "tf32" if q.element_size() != 4 else ("tf32x3" if q.is_cuda else "ieee")
    constants = {"HEAD_DIM": head_dim, "CAUSAL": causal, "PRECISION": precision}

    _attention_backward_delta[(triton.cdiv(seq_q, DELTA_BLOCK_M), batch * heads)](
        o, do, delta, o.stride(0), o.stride(1), o.stride(2), do.stride(0), do.stride(1), do.stride(2),
        heads, seq_q, HEAD_DIM=head_dim, BLOCK_M=DELTA_BLOCK_M)

    dkdv_grid = lambda meta: (triton.cdiv(seq_k, meta["BLOCK_N"]), batch * kv_heads)  # noqa: E731
    dkdv_args = (q, k, v, do, lse, delta, dk, dv, sm_scale, sm_scale * LOG2E,
                 q.stride(0), q.stride(1), q.stride(2),
                 k.stride(0), k.stride(1), k.stride(2),
                 v.stride(0), v.stride(1), v.stride(2),
                 do.stride(0), do.stride(1), do.stride(2),
                 dk.stride(0), dk.stride(1), dk.stride(2),
                 dv.stride(0), dv.stride(1), dv.stride(2),
                 heads, kv_heads, group, seq_q, seq_k)
    dq_grid = lambda meta: (triton.cdiv(seq_q, meta["BLOCK_M"]), batch * heads)  # noqa: E731
    dq_args = (q, k, v, do, lse, delta, dq, sm_scale, sm_scale * LOG2E,
               q.stride(0), q.stride(1), q.stride(2),
               k.stride(0), k.stride(1), k.stride(2),
               v.stride(0), v.stride(1), v.stride(2),
               do.stride(0), do.stride(1), do.stride(2),
               dq.stride(0), dq.stride(1), dq.stride(2),
               heads, group, seq_q, seq_k)
    if config or not tuned:
        chosen = config or INTERPRETER_CONFIG
        _attention_backward_dkdv[dkdv_grid](*dkdv_args, **constants, **chosen["dkdv"])
        _attention_backward_dq[dq_grid](*dq_args, **constants, **chosen["dq"])
    else:
        _attention_backward_dkdv_tuned[dkdv_grid](*dkdv_args, **constants)
        _attention_backward_dq_tuned[dq_grid](*dq_args, **constants)
    return dq, dk, dv


def describe_config(config):
    """One kernel's launch options as "BLOCK_M=32 BLOCK_N=128 warps=4 stages=3"."""
    text = f"BLOCK_M={config['BLOCK_M']} BLOCK_N={config['BLOCK_N']}"
    if "num_warps" in config:
        text += f" warps={config['num_warps']} stages={config['num_stages']}"
    return text


def chosen_config():
    """The autotuner's last choices for the dK/dV and dQ kernels, as
    "dkdv BLOCK_M=32 BLOCK_N=128 warps=4 stages=3; dq BLOCK_M=128 ...",
    or "" before either was tuned."""
    parts = []
    for name, tuner in (("dkdv", _attention_backward_dkdv_tuned), ("dq", _attention_backward_dq_tuned)):
        best = getattr(tuner, "best_config", None)
        if best is None:
            return ""
        parts.append(f"{name} " + describe_config({**best.kwargs, "num_warps": best.num_warps,
                                                     "num_stages": best.num_stages}))
    return "; ".join(parts)


def interpreter_config():
    """The interpreter's fixed configs, described as chosen_config() does."""
    return "; ".join(f"{name} {describe_config(c)}" for name, c in INTERPRETER_CONFIG.items()) + " (interpreter)"
