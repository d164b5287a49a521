"""A fake flash_attn.cute (FlashAttention-4's interface) for testing the
flash-attn-4 adapter on the CPU: its two functions with FlashAttention-4's
signatures compute attention with fake_attention_math and record each call in
CALLS. It refuses head dims that are no multiple of 8 as FlashAttention-4
does on sm90 (an assert), so that a refusal comes from the library's own
code. Loaded under the name flash_attn.cute (fake_libraries.load)."""

import torch

from fake_attention_math import attend, record

__version__ = "0.0.0-fake"
CALLS = []


def _check_head_dim(head_dim):
    assert head_dim % 8 == 0 and 8 <= head_dim <= 256, (
        f"(head_dim, head_dim_v)=({head_dim}, {head_dim}) is not supported on SM90. "
        f"head_dim and head_dim_v must be between 8 and 256 and divisible by 8.")


def _window(causal, window_size):
    left, right = window_size
    if causal:
        right = 0
    return left, right


def flash_attn_func(q, k, v, qv=None, gather_kv_indices=None, softmax_scale=None, causal=False,
                    window_size=(None, None), learnable_sink=None, softcap=0.0, num_splits=1, pack_gqa=None,
                    deterministic=False, **rest):
    """q [B, Sq, H, D], k and v [B, Sk, KVH, D] -> (out [B, Sq, H, D], lse [B, H, Sq])."""
    record(CALLS, "flash_attn_func", (q, k, v), {"softmax_scale": softmax_scale, "causal": causal,
                                                  "window_size": window_size, "softcap": softcap, **rest})
    _check_head_dim(q.shape[-1])
    left, right = _window(causal, window_size)
    outs, lses = zip(*(attend(q[b], k[b], v[b], softmax_scale, causal, left, right, softcap)
                       for b in range(q.shape[0])))
    return torch.stack(outs), torch.stack(lses)


def flash_attn_varlen_func(q, k, v, qv=None, cu_seqlens_q=None, cu_seqlens_k=None, max_seqlen_q=None,
                           max_seqlen_k=None, min_seqlen_k=None, seqused_q=None, seqused_k=None,
                           gather_kv_indices=None, page_table=None, softmax_scale=None, causal=False,
                           window_size=(None, None), learnable_sink=None, softcap=0.0, num_splits=1, **rest):
    """Packed: q [total_q, H, D], k and v [total_k, KVH, D] with cu_seqlens.
    Paged: q [B, Sq, H, D], k and v [num_pages, page_size, KVH, D], page_table
    [B, max_pages] and seqused_k [B]."""
    record(CALLS, "flash_attn_varlen_func", (q, k, v), {
        "cu_seqlens_q": cu_seqlens_q, "cu_seqlens_k": cu_seqlens_k, "max_seqlen_q": max_seqlen_q,
        "max_seqlen_k": max_seqlen_k, "seqused_k": seqused_k, "page_table": page_table,
        "softmax_scale": softmax_scale, "causal": causal, "window_size": window_size, "softcap": softcap,
        "num_splits": num_splits, **rest})
    _check_head_dim(q.shape[-1])
    left, right = _window(causal, window_size)
    if page_table is not None:
        assert cu_seqlens_k is None, "page_table is not supported with cu_seqlens_k"
        assert page_table.dtype == torch.int32, "page_table must be int32"
        page_size, kv_heads, head_dim = k.shape[1:]
        out = torch.empty_like(q)
        for b in range(q.shape[0]):
            length = int(seqused_k[b])
            pages = page_table[b].long()
            keys = k[pages].reshape(-1, kv_heads, head_dim)[:length]
            values = v[pages].reshape(-1, kv_heads, head_dim)[:length]
            out[b] = attend(q[b], keys, values, softmax_scale, causal, left, right, softcap)[0]
        return out, None
    cu_q, cu_k = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    out = torch.empty_like(q)
    for b in range(len(cu_q) - 1):
        out[cu_q[b]:cu_q[b + 1]] = attend(q[cu_q[b]:cu_q[b + 1]], k[cu_k[b]:cu_k[b + 1]], v[cu_k[b]:cu_k[b + 1]],
                                          softmax_scale, causal, left, right, softcap)[0]
    return out, None
