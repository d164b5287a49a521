"""The honest twin of divided_clock.py, for the timing audit's test: the
same attention, timed by the worker as it is."""

import torch
import torch.nn.functional as F


def capabilities():
    return {"dtypes": ["fp16", "bf16"], "gqa": True, "unequal_lengths": True}


def attention(q, k, v, *, causal: bool, scale: float) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                          enable_gqa=q.shape[1] != k.shape[1])
