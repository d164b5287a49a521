"""FlashCore bench's own varlen prefill forward kernel (packed variable-length
sequences), in Triton.

The op (`varlen`): a batch of sequences of different lengths packed end to
end, FlashAttention's ``flash_attn_varlen_func`` layout:

- q [total_q, H, D]; out [total_q, H, D] (q's dtype);
- k, v [total_k, KVH, D] (query head h reads kv head h // (H // KVH));
- cu_seqlens_q, cu_seqlens_k [B + 1] int32: sequence b's queries are rows
  cu_seqlens_q[b] .. cu_seqlens_q[b + 1] - 1 of q, its keys rows
  cu_seqlens_k[b] .. cu_seqlens_k[b + 1] - 1 of k and v; every sequence
  has at least as many keys as queries (Lk >= Lq: a cached prefix).

One kernel, ``_varlen_forward``, FlashAttention-2 style: one program per
(query tile, head, sequence). The grid's first axis covers the longest
query sequence (max_seqlen_q / BLOCK_M tiles); a program whose tile starts
past its own sequence's length does nothing (it reads two cu_seqlens entries
and exits), so a short sequence costs a few empty programs, not padding.
Tiles are taken longest-work first (the grid's first axis runs backwards),
so the heavy causal tiles at the end of the long sequences start early and
the tail of the last wave is short. Each program loads its BLOCK_M query
rows once and walks its sequence's keys BLOCK_N at a time with an online
softmax in fp32, base 2, the scale folded into log2(e), as the attention
forward does.

Masks (all per row; query i of a sequence with Lq queries and Lk keys sits at
key position p = Lk - Lq + i, bottom-right aligned): causal (key j visible
when j <= p); window_left W >= 0 (j >= p - W); window_right R >= 0
(j <= p + R); softcap c > 0 (the scaled score s becomes c·tanh(s/c)
before the softmax). The key range each program walks is cut to the keys
some row of its tile can see ([lo, hi): the first row's p - W, the last
row's p, or p + R), so key blocks wholly outside the mask are never loaded;
the blocks it walks are masked per element. Loads are masked to the
sequence's own keys, so no row ever reads a neighbouring sequence.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
# LOG2E as a kernel may read it: a jit'ed function reads constexpr globals alone.
_LOG2E = tl.constexpr(LOG2E)

# The kernel this op launches (the facts name it).
KERNELS = ("_varlen_forward",)

# Under Triton's CPU interpreter: small fixed blocks (one program runs at a
# time in NumPy).
INTERPRETER_BLOCK_M = 32
INTERPRETER_BLOCK_N = 32


@triton.jit
def _varlen_forward(Q, K, V, CU_Q, CU_K, OUT,
                    qk_scale, softcap_log2, softcap_inv, window_left, window_right,
                    stride_qt, stride_qh, stride_kt, stride_kh, stride_vt, stride_vh, stride_ot, stride_oh,
                    num_tiles,
                    GROUP: tl.constexpr, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                    WINDOW_LEFT: tl.constexpr, WINDOW_RIGHT: tl.constexpr, SOFTCAP: tl.constexpr,
                    PRECISION: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Longest work first: the last tiles of the longest sequences (which,
    # causal, see the most keys) get the lowest program ids.
    tile = num_tiles - 1 - tl.program_id(0)
    head = tl.program_id(1)
    batch = tl.program_id(2)
    q_start = tl.load(CU_Q + batch)
    q_len = tl.load(CU_Q + batch + 1) - q_start
    start_m = tile * BLOCK_M
    if start_m < q_len:
        k_start = tl.load(CU_K + batch)
        k_len = tl.load(CU_K + batch + 1) - k_start
        offset = k_len - q_len  # the cached prefix: query i sits at key position offset + i

        rows = start_m + tl.arange(0, BLOCK_M)
        row_ok = rows < q_len
        pos = offset + rows
        offs_d = tl.arange(0, HEAD_DIM)
        q_rows = (q_start + rows).to(tl.int64)
        q = tl.load(Q + q_rows[:, None] * stride_qt + head * stride_qh + offs_d[None, :], mask=row_ok[:, None],
                    other=0.0)

        # The keys some row of the tile sees: [lo, hi).
        first = offset + start_m
        last = offset + tl.minimum(start_m + BLOCK_M, q_len) - 1
        lo = 0
        hi = k_len
        if CAUSAL:
            hi = tl.minimum(hi, last + 1)
        if WINDOW_RIGHT:
            hi = tl.minimum(hi, last + window_right + 1)
        if WINDOW_LEFT:
            lo = tl.maximum(first - window_left, 0)

        kv_head = head // GROUP
        k_base = K + k_start.to(tl.int64) * stride_kt + kv_head * stride_kh
        v_base = V + k_start.to(tl.int64) * stride_vt + kv_head * stride_vh
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        offs_n = tl.arange(0, BLOCK_N)
        for start_n in range(lo, hi, BLOCK_N):
            cols = start_n + offs_n
            live = cols < hi
            k = tl.load(k_base + cols[None, :] * stride_kt + offs_d[:, None], mask=live[None, :], other=0.0)  # Kᵀ
            v = tl.load(v_base + cols[:, None] * stride_vt + offs_d[None, :], mask=live[:, None], other=0.0)
            qk = tl.dot(q, k, input_precision=PRECISION)
            if SOFTCAP:
                # c·tanh(scale·qk / c), in base 2: tanh from exp2 of −2|x|,
                # which cannot overflow.
                x = qk * softcap_inv
                e = tl.math.exp2(-2.0 * _LOG2E * tl.abs(x))
                t = (1.0 - e) / (1.0 + e)
                s = tl.where(x < 0, -t, t) * softcap_log2
            else:
                s = qk * qk_scale
            keep = live[None, :]
            if CAUSAL:
                keep = keep & (cols[None, :] <= pos[:, None])
            if WINDOW_LEFT:
                keep = keep & (cols[None, :] >= pos[:, None] - window_left)
            if WINDOW_RIGHT:
                keep = keep & (cols[None, :] <= pos[:, None] + window_right)
            s = tl.where(keep, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            # A row that has seen no key yet keeps m = −inf; subtracting 0
            # instead keeps exp2 at 0 rather than NaN.
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.math.exp2(m_i - m_safe)
            p = tl.math.exp2(s - m_safe[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None]
            acc = tl.dot(p.to(v.dtype), v, acc, input_precision=PRECISION)
            m_i = m_new

        out = acc / tl.where(l_i > 0, l_i, 1.0)[:, None]
        o_ptrs = OUT + q_rows[:, None] * stride_ot + head * stride_oh + offs_d[None, :]
        tl.store(o_ptrs, out.to(OUT.dtype.element_ty), mask=row_ok[:, None])


def default_launch(dtype, head_dim, max_seqlen_q, interpreted):
    """(BLOCK_M, BLOCK_N, num_warps, num_stages) where the caller sets none:
    small fixed blocks in the interpreter; on a GPU 128 × 64 query rows ×
    keys in half precision (64-row tiles when no sequence is longer than
    64 queries), 64 × 32 in fp32, whose tiles take twice the shared memory."""
    if interpreted:
        return INTERPRETER_BLOCK_M, INTERPRETER_BLOCK_N, 4, 1
    if dtype == torch.float32:
        return 64, 32, 4, (2 if head_dim > 64 else 3)
    block_m = 128 if max_seqlen_q > 64 else 64
    return block_m, 64, (8 if block_m == 128 else 4), 3


def varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, out, *, causal, scale,
           window_left=-1, window_right=-1, softcap=0.0, block_m=None, block_n=None, num_warps=None,
           num_stages=None):
    """Writes the varlen op's output into out and returns the launch's config
    (a dict: BLOCK_M, BLOCK_N, num_tiles, num_warps, num_stages, precision).
    max_seqlen_q must be at least the longest query sequence (it sizes the
    grid; a longer sequence's last rows would be left unwritten);
    max_seqlen_k is not needed by the kernel and is checked only for sense.
    None for a launch parameter is its default (default_launch)."""
    total_q, heads, head_dim = q.shape
    total_k, kv_heads, k_dim = k.shape
    if k_dim != head_dim or tuple(v.shape) != tuple(k.shape):
        raise ValueError(f"k {tuple(k.shape)} and v {tuple(v.shape)} must be [total_k, kv_heads, {head_dim}]")
    if heads % kv_heads:
        raise ValueError(f"heads {heads} is not a multiple of kv_heads {kv_heads}")
    if head_dim < 16 or head_dim & (head_dim - 1):
        raise ValueError(f"head dim {head_dim}: the kernel takes powers of two from 16")
    if tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype:
        raise ValueError(f"out is {out.dtype} {tuple(out.shape)}, want {q.dtype} {tuple(q.shape)}")
    batch = cu_seqlens_q.shape[0] - 1
    for name, cu in (("cu_seqlens_q", cu_seqlens_q), ("cu_seqlens_k", cu_seqlens_k)):
        if cu.dim() != 1 or cu.shape[0] != batch + 1 or cu.dtype != torch.int32:
            raise ValueError(f"{name} must be int32 [{batch + 1}], got {cu.dtype} {tuple(cu.shape)}")
    if batch < 1 or max_seqlen_q < 0 or max_seqlen_k < max_seqlen_q:
        raise ValueError(f"batch {batch}, max_seqlen_q {max_seqlen_q}, max_seqlen_k {max_seqlen_k}: want "
                         f"batch >= 1 and max_seqlen_k >= max_seqlen_q >= 0")
    for name, tensor in (("q", q), ("k", k), ("v", v), ("out", out)):
        if tensor.stride(-1) != 1:
            raise ValueError(f"{name}'s head dim must be contiguous (stride {tensor.stride(-1)})")
    cu_seqlens_q, cu_seqlens_k = cu_seqlens_q.contiguous(), cu_seqlens_k.contiguous()
    interpreted = q.device.type != "cuda"
    default_m, default_n, default_warps, default_stages = default_launch(q.dtype, head_dim, max_seqlen_q, interpreted)
    block_m = block_m or default_m
    block_n = block_n or default_n
    num_warps = num_warps or default_warps
    num_stages = num_stages or default_stages
    # fp32 as in triton_attention: three TF32 products on a GPU (about fp32
    # accuracy), exact in the interpreter; half precision on tensor cores.
    precision = "tf32" if q.element_size() != 4 else ("ieee" if interpreted else "tf32x3")
    window_left = window_left if window_left is not None and window_left >= 0 else -1
    window_right = window_right if window_right is not None and window_right >= 0 else -1
    # Causal already bounds every row by its own position, tighter than any
    # right window (R >= 0).
    right = window_right >= 0 and not causal
    softcapped = softcap is not None and softcap > 0
    num_tiles = triton.cdiv(max_seqlen_q, block_m)
    if num_tiles and total_q:
        _varlen_forward[(num_tiles, heads, batch)](
            q, k, v, cu_seqlens_q, cu_seqlens_k, out,
            scale * LOG2E, softcap * LOG2E if softcapped else 0.0, scale / softcap if softcapped else 0.0,
            max(window_left, 0), max(window_right, 0),
            q.stride(0), q.stride(1), k.stride(0), k.stride(1), v.stride(0), v.stride(1),
            out.stride(0), out.stride(1),
            num_tiles,
            GROUP=heads // kv_heads, HEAD_DIM=head_dim, CAUSAL=bool(causal), WINDOW_LEFT=window_left >= 0,
            WINDOW_RIGHT=right, SOFTCAP=softcapped, PRECISION=precision, BLOCK_M=block_m, BLOCK_N=block_n,
            num_warps=num_warps, num_stages=num_stages)
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "num_tiles": num_tiles, "num_warps": num_warps,
            "num_stages": num_stages, "precision": precision}


def describe_config(config):
    """A config dict as one line for the facts: "BLOCK_M=128 BLOCK_N=64
    warps=8 stages=3"."""
    return (f"BLOCK_M={config['BLOCK_M']} BLOCK_N={config['BLOCK_N']} warps={config['num_warps']} "
            f"stages={config['num_stages']}")
