"""Plain PyTorch varlen prefill: sequence by sequence, a masked softmax in fp32."""

import torch


def capabilities():
    return {"dtypes": ["fp16", "bf16", "fp32"]}


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal: bool,
                     scale: float, window_left: int = -1, window_right: int = -1,
                     softcap: float = 0.0) -> torch.Tensor:
    # q: [total_q, H, D]; k, v: [total_k, H_kv, D]: the sequences packed end
    # to end. cu_seqlens_q, cu_seqlens_k: [B + 1] int32; sequence b is rows
    # cu[b] .. cu[b + 1] - 1. max_seqlen_*: the longest sequences (unused
    # here: a kernel sizes its grid by them).
    heads, kv_heads = q.shape[1], k.shape[1]
    out = torch.empty_like(q)
    cu_q, cu_k = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    for b in range(len(cu_q) - 1):
        q0, q1, k0, k1 = cu_q[b], cu_q[b + 1], cu_k[b], cu_k[b + 1]
        if q1 == q0:
            continue
        # This sequence's keys and values, [Lk, H, D] in fp32 (each K/V head
        # repeated for the query heads that share it).
        kb, vb = (t[k0:k1].float().repeat_interleave(heads // kv_heads, 1) for t in (k, v))
        scores = torch.einsum("qhd,khd->hqk", q[q0:q1].float(), kb) * scale
        if softcap > 0:
            scores = softcap * torch.tanh(scores / softcap)
        # Query i sits at key position Lk - Lq + i (bottom-right aligned).
        pos = torch.arange((k1 - k0) - (q1 - q0), k1 - k0, device=q.device)[:, None]
        key = torch.arange(k1 - k0, device=q.device)[None, :]
        seen = torch.ones(q1 - q0, k1 - k0, dtype=torch.bool, device=q.device)
        if causal:
            seen &= key <= pos
        if window_left >= 0:
            seen &= key >= pos - window_left
        if window_right >= 0:
            seen &= key <= pos + window_right
        probs = scores.masked_fill(~seen, float("-inf")).softmax(-1)
        out[q0:q1] = torch.einsum("hqk,khd->qhd", probs, vb).to(q.dtype)
    return out
