"""Plain PyTorch attention: softmax(Q·Kᵀ·scale)·V, written out in full."""

import torch


def capabilities():
    return {"dtypes": ["fp16", "bf16", "fp32"], "gqa": True, "unequal_lengths": True}


def attention(q, k, v, *, causal: bool, scale: float) -> torch.Tensor:
    # q: [B, H, Sq, D]; k, v: [B, H_kv, Sk, D]. Each K/V head serves H / H_kv query heads.
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:  # top-left aligned: query row i sees key rows j <= i
        sq, sk = q.shape[2], k.shape[2]
        hidden = torch.ones(sq, sk, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(hidden, float("-inf"))
    return (scores.softmax(dim=-1) @ v.float()).to(q.dtype)
