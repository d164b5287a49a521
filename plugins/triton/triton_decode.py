"""FlashCore bench's own split-KV paged decode kernel (flash-decoding), in Triton.

The op (`decode`): a few new query tokens per sequence attend to that
sequence's keys and values in a paged KV cache, FlashAttention's
``flash_attn_with_kvcache`` layout:

- q [B, q_len, H, D]; out [B, q_len, H, D] (q's dtype);
- k_cache, v_cache [num_pages, page_size, KVH, D];
- block_table [B, max_pages] int32: key position j of sequence b lives in
  page block_table[b, j // page_size], slot j % page_size;
- cache_seqlens [B] int32: L_b, the keys of sequence b (its q_len new
  tokens included, so L_b >= q_len).

Decode has few query rows and long contexts, so one program per (batch,
head) would leave most of a GPU idle while it streams the whole cache. Two
kernels:

1. ``_decode_split``: one program per (batch · kv head, split, row tile).
   Its rows are every query row that reads that kv head: the H // KVH query
   heads of the group times the q_len positions, packed into the M dimension
   of one tile (padded to at least 16 rows so tl.dot runs on tensor cores),
   so each K/V block is loaded once for the whole group. It walks one
   contiguous range of key positions (its split) BLOCK_N keys at a time,
   gathering the rows of each block through the block table (any page size:
   the page and slot are computed per key, so a block may span several pages
   or part of one), with an online softmax in fp32, base 2, the scale folded
   into log2(e). It stores the split's normalised partial output and
   log-sum-exp per row (fp32 scratch).
2. ``_decode_combine``: one program per output row merges the splits by
   their log-sum-exps: out = Σ_s 2^(lse_s − m)·o_s / Σ_s 2^(lse_s − m),
   m = max_s lse_s. A split in which a row sees no key has lse −inf and
   weight 0 (its partial output is never multiplied in, so nothing in it can
   make a NaN).

With one split the first kernel normalises and writes ``out`` itself
(a constexpr), and the combine is not launched.

Masks (all per row; a row's absolute position is p = L − q_len + i):
keys at or past L; bottom-right causal (key j visible when j <= p);
window_left W >= 0 (j >= p − W); softcap c > 0 (the scaled score s becomes
c·tanh(s/c) before the softmax). Keys are split over [lo, L) with lo the
first key any row's window admits (0 without a window), so a sliding
window's work is split as evenly as a full context's. A row that sees no
key of a split (causal or window) carries l = 0 and lse −inf through it
without NaNs. K and V loads are masked to the split's keys, so poison past
L (in the last page's tail, or in pages past the end of the table's live
entries) is never read.
"""

import functools
import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
# LOG2E as a kernel may read it: a jit'ed function reads constexpr globals alone.
_LOG2E = tl.constexpr(LOG2E)

# The kernels this op launches (the facts name them).
KERNELS = ("_decode_split", "_decode_combine")

# Rows of the query tile: tl.dot needs at least 16; a larger group · q_len
# is split into row tiles of at most MAX_BLOCK_M rows.
MIN_BLOCK_M = 16
MAX_BLOCK_M = 128
# The heuristic's target: about this many programs per SM over batch ·
# kv heads · splits, so the GPU fills even at batch 1 and the tail of the
# last wave is short.
PROGRAMS_PER_SM = 2
# A split walks at least this many BLOCK_N blocks: shorter splits cost more
# in the combine and in each program's start-up than they gain in parallelism.
MIN_BLOCKS_PER_SPLIT = 4
# The combine kernel holds every split of a row in one tile.
MAX_SPLITS = 64
# Under Triton's CPU interpreter: small fixed blocks (one program runs at a
# time in NumPy) and a small pretend SM count for the heuristic.
INTERPRETER_BLOCK_N = 32
INTERPRETER_SMS = 4


@triton.jit
def _decode_split(Q, K, V, BLOCK_TABLE, SEQLENS, O_PART, LSE_PART, OUT,
                  qk_scale, softcap_log2, softcap_inv, window_left,
                  stride_qb, stride_qt, stride_qh,
                  stride_kp, stride_ks, stride_kh,
                  stride_vp, stride_vs, stride_vh,
                  stride_bt,
                  stride_ob, stride_ot, stride_oh,
                  kv_heads, heads, q_len, num_splits,
                  GROUP: tl.constexpr, PAGE_SIZE: tl.constexpr, HEAD_DIM: tl.constexpr,
                  CAUSAL: tl.constexpr, WINDOW: tl.constexpr, SOFTCAP: tl.constexpr,
                  DIRECT: tl.constexpr, PRECISION: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_bk = tl.program_id(0)
    split = tl.program_id(1)
    tile = tl.program_id(2)
    batch = pid_bk // kv_heads
    kv_head = pid_bk % kv_heads

    # Row r of the group's rows is query position r // GROUP of query head
    # kv_head·GROUP + r % GROUP: consecutive rows are neighbouring heads of
    # one position, contiguous in q and out.
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    row_ok = rows < GROUP * q_len
    pos_q = rows // GROUP
    head = kv_head * GROUP + rows % GROUP
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = (Q + batch.to(tl.int64) * stride_qb + pos_q[:, None] * stride_qt + head[:, None] * stride_qh
              + offs_d[None, :])
    q = tl.load(q_ptrs, mask=row_ok[:, None], other=0.0)

    seq_len = tl.load(SEQLENS + batch)
    # Each row's absolute position (bottom-right alignment): the q_len new
    # tokens are the last q_len keys of the cache.
    pos = seq_len - q_len + pos_q
    lo = 0
    if WINDOW:
        lo = tl.maximum(seq_len - q_len - window_left, 0)
    # This split's keys: [lo, seq_len) cut into num_splits ranges of whole
    # BLOCK_N blocks; trailing splits of a short sequence are empty.
    per_split = tl.cdiv(tl.cdiv(seq_len - lo, num_splits), BLOCK_N) * BLOCK_N
    start = lo + split * per_split
    end = tl.minimum(start + per_split, seq_len)

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    table = BLOCK_TABLE + batch.to(tl.int64) * stride_bt
    k_base = K + kv_head * stride_kh
    v_base = V + kv_head * stride_vh
    for start_n in range(start, end, BLOCK_N):
        cols = start_n + offs_n
        live = cols < end
        # The gather: each key's page from the table, then its slot.
        page = tl.load(table + cols // PAGE_SIZE, mask=live, other=0).to(tl.int64)
        slot = cols % PAGE_SIZE
        k_ptrs = k_base + (page * stride_kp + slot * stride_ks)[None, :] + offs_d[:, None]  # Kᵀ, [D, BLOCK_N]
        v_ptrs = v_base + (page * stride_vp + slot * stride_vs)[:, None] + offs_d[None, :]  # [BLOCK_N, D]
        k = tl.load(k_ptrs, mask=live[None, :], other=0.0)
        v = tl.load(v_ptrs, mask=live[:, None], other=0.0)
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
        if WINDOW:
            keep = keep & (cols[None, :] >= pos[:, None] - window_left)
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

    seen = l_i > 0
    out = acc / tl.where(seen, l_i, 1.0)[:, None]
    if DIRECT:
        o_ptrs = (OUT + batch.to(tl.int64) * stride_ob + pos_q[:, None] * stride_ot + head[:, None] * stride_oh
                  + offs_d[None, :])
        tl.store(o_ptrs, out.to(OUT.dtype.element_ty), mask=row_ok[:, None])
    else:
        # Scratch rows in out's order: ((b · q_len + i) · H + h) · splits + split.
        part = ((batch.to(tl.int64) * q_len + pos_q) * heads + head) * num_splits + split
        tl.store(O_PART + part[:, None] * HEAD_DIM + offs_d[None, :], out, mask=row_ok[:, None])
        lse = tl.where(seen, m_i + tl.math.log2(tl.where(seen, l_i, 1.0)), float("-inf"))
        tl.store(LSE_PART + part, lse, mask=row_ok)


@triton.jit
def _decode_combine(O_PART, LSE_PART, OUT, stride_ob, stride_ot, stride_oh, heads, q_len, num_splits,
                    HEAD_DIM: tl.constexpr, SPLITS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # (b · q_len + i) · H + h
    head = row % heads
    pos_q = (row // heads) % q_len
    batch = row // heads // q_len
    offs_s = tl.arange(0, SPLITS)
    offs_d = tl.arange(0, HEAD_DIM)
    real = offs_s < num_splits
    lse = tl.load(LSE_PART + row * num_splits + offs_s, mask=real, other=float("-inf"))
    used = lse > float("-inf")
    m = tl.max(lse, 0)
    m = tl.where(m == float("-inf"), 0.0, m)
    weight = tl.where(used, tl.math.exp2(lse - m), 0.0)
    parts = tl.load(O_PART + (row * num_splits + offs_s)[:, None] * HEAD_DIM + offs_d[None, :],
                    mask=used[:, None], other=0.0)
    # where, not a product alone: an unused split's scratch is never read.
    total = tl.sum(tl.where(used[:, None], parts * weight[:, None], 0.0), 0)
    denominator = tl.sum(weight, 0)
    out = total / tl.where(denominator > 0, denominator, 1.0)
    tl.store(OUT + batch * stride_ob + pos_q * stride_ot + head * stride_oh + offs_d, out.to(OUT.dtype.element_ty))


@functools.lru_cache(maxsize=None)
def _multiprocessors(index):
    return torch.cuda.get_device_properties(index).multi_processor_count


def multiprocessors(device):
    """The SM count the heuristic fills: the GPU's, or INTERPRETER_SMS."""
    if device.type != "cuda":
        return INTERPRETER_SMS
    return _multiprocessors(device.index if device.index is not None else torch.cuda.current_device())


def pick_num_splits(programs, visible_keys, block_n, sms):
    """The heuristic: enough splits that programs × splits reaches about
    PROGRAMS_PER_SM × sms programs (programs: batch · kv heads · row tiles),
    but no split shorter than MIN_BLOCKS_PER_SPLIT blocks of the longest
    range of keys a row can see (visible_keys), and at most MAX_SPLITS.
    A large batch gets one split: it fills the GPU alone, and the combine
    is skipped."""
    wanted = math.ceil(PROGRAMS_PER_SM * sms / max(programs, 1))
    longest = max(1, visible_keys // (MIN_BLOCKS_PER_SPLIT * block_n))
    return max(1, min(wanted, longest, MAX_SPLITS))


def default_block_n(dtype, head_dim, interpreted):
    if interpreted:
        return INTERPRETER_BLOCK_N
    return 32 if dtype == torch.float32 and head_dim > 64 else 64


def default_num_warps(block_m):
    return 4 if block_m <= 64 else 8


def default_num_stages(dtype, head_dim):
    # K and V blocks of num_stages stages must fit shared memory: fp32 at
    # head dim 128 pipelines two.
    return 2 if dtype == torch.float32 and head_dim > 64 else 3


def workspace(q, num_splits):
    """The fp32 scratch of num_splits splits: partial outputs [B, q_len, H,
    splits, D] and log-sum-exps [B, q_len, H, splits] (base 2)."""
    batch, q_len, heads, head_dim = q.shape
    return (torch.empty((batch, q_len, heads, num_splits, head_dim), dtype=torch.float32, device=q.device),
            torch.empty((batch, q_len, heads, num_splits), dtype=torch.float32, device=q.device))


def decode(q, k_cache, v_cache, block_table, cache_seqlens, out, *, causal, scale, window_left=-1, softcap=0.0,
           num_splits=None, block_n=None, num_warps=None, num_stages=None, workspace_buffers=None):
    """Writes the decode op's output into out and returns the launch's
    config (a dict: num_splits, BLOCK_M, BLOCK_N, row_tiles, num_warps,
    num_stages, precision). None for any launch parameter is its default;
    num_splits=None is pick_num_splits. workspace_buffers, as workspace()
    returns for the same q and num_splits, saves allocating the scratch in
    every call."""
    batch, q_len, heads, head_dim = q.shape
    num_pages, page_size, kv_heads, cache_dim = k_cache.shape
    if cache_dim != head_dim or tuple(v_cache.shape) != tuple(k_cache.shape):
        raise ValueError(f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)} must be "
                         f"[num_pages, page_size, kv_heads, {head_dim}]")
    if heads % kv_heads:
        raise ValueError(f"heads {heads} is not a multiple of kv_heads {kv_heads}")
    if head_dim < 16 or head_dim & (head_dim - 1):
        raise ValueError(f"head dim {head_dim}: the kernel takes powers of two from 16")
    if tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype:
        raise ValueError(f"out is {out.dtype} {tuple(out.shape)}, want {q.dtype} {tuple(q.shape)}")
    if block_table.dim() != 2 or block_table.shape[0] != batch or block_table.dtype != torch.int32:
        raise ValueError(f"block_table must be int32 [{batch}, max_pages], got {block_table.dtype} "
                         f"{tuple(block_table.shape)}")
    if tuple(cache_seqlens.shape) != (batch,) or cache_seqlens.dtype != torch.int32:
        raise ValueError(f"cache_seqlens must be int32 [{batch}], got {cache_seqlens.dtype} "
                         f"{tuple(cache_seqlens.shape)}")
    for name, tensor in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("out", out)):
        if tensor.stride(-1) != 1:
            raise ValueError(f"{name}'s head dim must be contiguous (stride {tensor.stride(-1)})")
    block_table, cache_seqlens = block_table.contiguous(), cache_seqlens.contiguous()
    interpreted = q.device.type != "cuda"
    group = heads // kv_heads
    rows = group * q_len
    block_m = min(max(MIN_BLOCK_M, triton.next_power_of_2(rows)), MAX_BLOCK_M)
    row_tiles = triton.cdiv(rows, block_m)
    block_n = block_n or default_block_n(q.dtype, head_dim, interpreted)
    window = window_left is not None and window_left >= 0
    # The longest key range a row tile walks: the table's reach, or the
    # window plus the new tokens. No sync: cache_seqlens stays on the device.
    visible = block_table.shape[1] * page_size
    if window:
        visible = min(visible, window_left + q_len)
    if num_splits is None:
        num_splits = pick_num_splits(batch * kv_heads * row_tiles, visible, block_n, multiprocessors(q.device))
    if not 1 <= num_splits <= MAX_SPLITS:
        raise ValueError(f"num_splits {num_splits} is not within 1..{MAX_SPLITS}")
    num_warps = num_warps or (4 if interpreted else default_num_warps(block_m))
    num_stages = num_stages or (1 if interpreted else default_num_stages(q.dtype, head_dim))
    # fp32 as in triton_attention: three TF32 products on a GPU (about fp32
    # accuracy), exact in the interpreter; half precision on tensor cores.
    precision = "tf32" if q.element_size() != 4 else ("ieee" if interpreted else "tf32x3")
    direct = num_splits == 1
    if direct:
        o_part = lse_part = out  # never read or written (DIRECT is a constexpr)
    else:
        o_part, lse_part = workspace_buffers or workspace(q, num_splits)
        if tuple(lse_part.shape) != (batch, q_len, heads, num_splits) or not o_part.is_contiguous():
            raise ValueError(f"workspace for {tuple(lse_part.shape)[-1]} splits, the launch has {num_splits}")
    softcapped = softcap is not None and softcap > 0
    _decode_split[(batch * kv_heads, num_splits, row_tiles)](
        q, k_cache, v_cache, block_table, cache_seqlens, o_part, lse_part, out,
        scale * LOG2E, softcap * LOG2E if softcapped else 0.0, scale / softcap if softcapped else 0.0,
        window_left if window else 0,
        q.stride(0), q.stride(1), q.stride(2),
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        v_cache.stride(0), v_cache.stride(1), v_cache.stride(2),
        block_table.stride(0),
        out.stride(0), out.stride(1), out.stride(2),
        kv_heads, heads, q_len, num_splits,
        GROUP=group, PAGE_SIZE=page_size, HEAD_DIM=head_dim, CAUSAL=bool(causal), WINDOW=window,
        SOFTCAP=softcapped, DIRECT=direct, PRECISION=precision, BLOCK_M=block_m, BLOCK_N=block_n,
        num_warps=num_warps, num_stages=num_stages)
    if not direct:
        _decode_combine[(batch * q_len * heads,)](
            o_part, lse_part, out, out.stride(0), out.stride(1), out.stride(2), heads, q_len, num_splits,
            HEAD_DIM=head_dim, SPLITS=max(2, triton.next_power_of_2(num_splits)), num_warps=4)
    return {"num_splits": num_splits, "BLOCK_M": block_m, "BLOCK_N": block_n, "row_tiles": row_tiles,
            "num_warps": num_warps, "num_stages": num_stages, "precision": precision}


def describe_config(config):
    """A config dict as one line for the facts: "splits=4 BLOCK_M=16
    BLOCK_N=64 warps=4 stages=3"."""
    return (f"splits={config['num_splits']} BLOCK_M={config['BLOCK_M']} BLOCK_N={config['BLOCK_N']} "
            f"warps={config['num_warps']} stages={config['num_stages']}")
