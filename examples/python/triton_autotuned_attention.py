"""Autotuned FlashAttention forward in Triton: triton.autotune picks the tiles."""

import os

import torch
import triton
import triton.language as tl

# Triton's CPU interpreter has no driver to ask for the GPU, and the harness
# sets TRITON_INTERPRET=1 before importing this file where there is no GPU:
# guard every question to the driver made at import.
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
HOPPER = not INTERPRETED and triton.runtime.driver.active.get_current_target().arch == 90

# Under the interpreter the harness launches one of these without timing:
# the first, unless FLASHCORE_INTERPRETER_CONFIG names another.
CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 32}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=2),
    triton.Config({"BLOCK_M": 32, "BLOCK_N": 32}, num_warps=2, num_stages=2),
]
if HOPPER:
    CONFIGS.append(triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=3))


def capabilities():
    # tl.dot wants head dims of at least 16. The interpreter misreads bf16.
    return {"dtypes": ["fp16"] if INTERPRETED else ["fp16", "bf16"], "head_dims": [16, 32, 64, 128]}


@triton.autotune(configs=CONFIGS, key=["seq_q", "seq_k", "HEAD_DIM", "CAUSAL"])
@triton.jit
def _attention_forward(Q, K, V, Out, scale, seq_q, seq_k, heads, kv_group,
                       stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                       stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
                       CAUSAL: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # One program: BLOCK_M query rows of one (batch, head); grid axis 1 runs
    # over every batch and head.
    tile = tl.program_id(0)
    batch, head = tl.program_id(1) // heads, tl.program_id(1) % heads
    kv_head = head // kv_group
    q_rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q_ptrs = Q + batch * stride_qb + head * stride_qh + q_rows[:, None] * stride_qs + dims[None, :]
    q = tl.load(q_ptrs, mask=q_rows[:, None] < seq_q, other=0.0)
    k_head = K + batch * stride_kb + kv_head * stride_kh
    v_head = V + batch * stride_vb + kv_head * stride_vh

    # Online softmax in base 2: the running row maximum and row sum.
    qk_scale = scale * 1.4426950408889634
    row_max = tl.full([BLOCK_M], float("-inf"), tl.float32)
    row_sum = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    stop = seq_k
    if CAUSAL:  # top-left aligned: row i attends to keys 0..i
        stop = tl.minimum(seq_k, (tile + 1) * BLOCK_M)
    for first in range(0, stop, BLOCK_N):
        k_cols = first + tl.arange(0, BLOCK_N)
        k_t = tl.load(k_head + k_cols[None, :] * stride_ks + dims[:, None], mask=k_cols[None, :] < seq_k, other=0.0)
        scores = tl.dot(q, k_t) * qk_scale
        keep = k_cols[None, :] < seq_k
        if CAUSAL:
            keep = keep & (k_cols[None, :] <= q_rows[:, None])
        scores = tl.where(keep, scores, float("-inf"))
        max_next = tl.maximum(row_max, tl.max(scores, 1))
        # A fully masked row keeps its maximum at -inf; subtracting 0 there avoids NaN.
        max_safe = tl.where(max_next == float("-inf"), 0.0, max_next)
        p = tl.exp2(scores - max_safe[:, None])
        rescale = tl.exp2(row_max - max_safe)
        row_sum = row_sum * rescale + tl.sum(p, 1)
        v = tl.load(v_head + k_cols[:, None] * stride_vs + dims[None, :], mask=k_cols[:, None] < seq_k, other=0.0)
        acc = acc * rescale[:, None] + tl.dot(p.to(v.dtype), v)
        row_max = max_next
    out = acc / tl.where(row_sum == 0.0, 1.0, row_sum)[:, None]
    o_ptrs = Out + batch * stride_ob + head * stride_oh + q_rows[:, None] * stride_os + dims[None, :]
    tl.store(o_ptrs, out.to(Out.dtype.element_ty), mask=q_rows[:, None] < seq_q)


def attention(q, k, v, *, causal: bool, scale: float, out: torch.Tensor) -> torch.Tensor:
    # q, out: [B, H, Sq, D]; k, v: [B, H_kv, Sk, D], contiguous in D.
    batch, heads, seq_q, head_dim = q.shape
    seq_k = k.shape[2]

    def grid(meta):  # the tile count depends on the BLOCK_M the autotuner picks
        return (triton.cdiv(seq_q, meta["BLOCK_M"]), batch * heads)

    _attention_forward[grid](q, k, v, out, scale, seq_q, seq_k, heads, heads // k.shape[1],
                             *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3],
                             CAUSAL=causal, HEAD_DIM=head_dim)
    return out
