"""The attention the fake kernel libraries compute, in float32 with
autograd, by FlashAttention's and FlashInfer's documented semantics:
causal masks bottom-right aligned (query i of Lq sits at key position
p = Lk - Lq + i), windows (left, right) bounding p - left <= j <= p + right
(None or a negative bound: unbounded), softcap c turning a scaled score s
into c·tanh(s/c). A row that sees no key is zero, its lse -inf."""

import math

import torch


def attend(q, k, v, scale, causal=False, left=None, right=None, softcap=0.0):
    """q [Lq, H, D], k and v [Lk, KVH, D] -> (out [Lq, H, D] in q's dtype, lse [H, Lq] fp32)."""
    lq, heads, _ = q.shape
    lk, kv_heads, _ = k.shape
    group = heads // kv_heads
    kk, vv = (t.float().repeat_interleave(group, 1) for t in (k, v))
    s = torch.einsum("qhd,khd->hqk", q.float(), kk) * scale
    if softcap:
        s = softcap * torch.tanh(s / softcap)
    pos = torch.arange(lq)[:, None] + (lk - lq)
    key = torch.arange(lk)[None, :]
    seen = torch.ones(lq, lk, dtype=torch.bool)
    if causal:
        seen &= key <= pos
    if left is not None and left >= 0:
        seen &= key >= pos - left
    if right is not None and right >= 0:
        seen &= key <= pos + right
    s = s.masked_fill(~seen, -math.inf)
    lse = torch.logsumexp(s, -1)
    p = torch.where(seen, torch.exp(s - lse.clamp_min(-1e30)[..., None]), torch.zeros((), dtype=s.dtype))
    out = torch.einsum("hqk,khd->qhd", p, vv)
    return out.to(q.dtype), lse


def record(calls, name, args, kwargs):
    """A call as the fakes record it: tensors by shape, dtype and whether
    contiguous; everything else as it was passed."""
    def describe(x):
        if isinstance(x, torch.Tensor):
            return {"shape": tuple(x.shape), "dtype": x.dtype, "contiguous": x.is_contiguous(),
                    "requires_grad": x.requires_grad}
        if isinstance(x, (tuple, list)) and any(isinstance(t, torch.Tensor) for t in x):
            return [describe(t) for t in x]
        return x

    calls.append({"function": name, "args": [describe(a) for a in args],
                  "kwargs": {key: describe(value) for key, value in kwargs.items()}})
