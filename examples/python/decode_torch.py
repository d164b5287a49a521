"""Plain PyTorch paged-KV decode: each sequence's pages gathered, a masked softmax in fp32."""

import torch


def capabilities():
    return {"dtypes": ["fp16", "bf16", "fp32"]}


def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal: bool, scale: float,
           window_left: int = -1, softcap: float = 0.0) -> torch.Tensor:
    # q: [B, q_len, H, D]; k_cache, v_cache: [num_pages, page_size, H_kv, D];
    # block_table: [B, max_pages] int32; cache_seqlens: [B] int32. Key j of
    # sequence b is slot j % page_size of page block_table[b, j // page_size].
    batch, q_len, heads, _ = q.shape
    page_size, kv_heads = k_cache.shape[1], k_cache.shape[2]
    out = torch.empty_like(q)
    for b in range(batch):
        length = int(cache_seqlens[b])
        pages = block_table[b, : -(-length // page_size)].long()
        # This sequence's keys and values, [L, H, D] in fp32 (each K/V head
        # repeated for the query heads that share it).
        k, v = (c.index_select(0, pages).flatten(0, 1)[:length].float().repeat_interleave(heads // kv_heads, 1)
                for c in (k_cache, v_cache))
        scores = torch.einsum("qhd,khd->hqk", q[b].float(), k) * scale
        if softcap > 0:
            scores = softcap * torch.tanh(scores / softcap)
        # Query i sits at position L - q_len + i (bottom-right aligned).
        pos = torch.arange(length - q_len, length, device=q.device)[:, None]
        key = torch.arange(length, device=q.device)[None, :]
        seen = torch.ones(q_len, length, dtype=torch.bool, device=q.device)
        if causal:
            seen &= key <= pos
        if window_left >= 0:
            seen &= key >= pos - window_left
        out[b] = torch.einsum("hqk,khd->qhd", scores.masked_fill(~seen, float("-inf")).softmax(-1), v).to(q.dtype)
    return out
