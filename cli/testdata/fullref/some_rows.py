"""An adversary for the harness's reference of every row: SDPA's output,
but three rows in the middle of every head hold V's first key row
instead, finite and within V's range. A check that samples rows misses
them most of the time; one that compares every row cannot."""

import torch
import torch.nn.functional as F


def capabilities():
    return {"dtypes": ["fp16", "bf16", "fp32"], "gqa": True, "unequal_lengths": True}


def attention(q, k, v, *, causal: bool, scale: float) -> torch.Tensor:
    o = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                       enable_gqa=q.shape[1] != k.shape[1])
    middle = q.shape[2] // 2
    first = v[:, :, :1].repeat_interleave(q.shape[1] // k.shape[1], dim=1)
    o[:, :, middle:middle + 3] = first
    return o
