"""Plain PyTorch attention: softmax(Q·Kᵀ·scale)·V, written out in full."""

import torch


def capabilities():
    return {"dtypes": ["fp16", "bf16", "fp32"], "gqa": True, "unequal_lengths": True}


def attention(q, k, v, *, causal: bool, scale: float) -> torch.Tensor:
    # q: [B, H, Sq, D]; k, v: [B, H_kv, Sk, D]. Each K/V head serves H / H_kv query heads.
    group = q.shape[1] // k.shape[1]
    return (scores_of(q, k, causal, scale).softmax(dim=-1) @ v.repeat_interleave(group, dim=1).float()).to(q.dtype)


def attention_backward(q, k, v, o, do, lse, *, causal: bool, scale: float):
    # o, do: [B, H, Sq, D]; lse: [B, H, Sq] fp32, log Σ_j exp(scale·q_i·k_j) over the keys row i sees.
    group = q.shape[1] // k.shape[1]
    kf, vf = (t.repeat_interleave(group, dim=1).float() for t in (k, v))
    dof = do.float()
    p = torch.exp(scores_of(q, k, causal, scale) - lse.unsqueeze(-1))  # the forward's softmax, 0 where masked
    dv = p.transpose(-1, -2) @ dof                                      # dV = Pᵀ·dO
    delta = (dof * o.float()).sum(dim=-1, keepdim=True)                 # Δ = rowsum(dO∘O)
    ds = p * (dof @ vf.transpose(-1, -2) - delta)                       # dS = P∘(dO·Vᵀ − Δ)
    dq = (ds @ kf) * scale
    dk = (ds.transpose(-1, -2) @ q.float()) * scale
    b, h_kv, sk, d = k.shape  # a K/V head's gradient sums those of the query heads that read it
    dk, dv = (t.view(b, h_kv, group, sk, d).sum(dim=2) for t in (dk, dv))
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype)


def attention_forward_backward(q, k, v, do, *, causal: bool, scale: float):
    # As training runs them: the forward, keeping LSE, then the backward from O and LSE.
    group = q.shape[1] // k.shape[1]
    scores = scores_of(q, k, causal, scale)
    lse = scores.logsumexp(dim=-1)
    o = (torch.exp(scores - lse.unsqueeze(-1)) @ v.repeat_interleave(group, dim=1).float()).to(q.dtype)
    return (o, *attention_backward(q, k, v, o, do, lse, causal=causal, scale=scale))


def scores_of(q, k, causal, scale):
    # scale·Q·Kᵀ in fp32; -inf where causal masking (top-left aligned) hides key j from query row i: j > i.
    scores = (q.float() @ k.repeat_interleave(q.shape[1] // k.shape[1], dim=1).float().transpose(-1, -2)) * scale
    if causal:
        hidden = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(hidden, float("-inf"))
    return scores
