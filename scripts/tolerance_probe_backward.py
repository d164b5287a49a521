#!/usr/bin/env python3
"""The error of a straightforward same-precision attention backward against fp64.

docs/correctness.md sets the tolerance factors of dQ, dK and dV
(ops/attention.GradientToleranceFactor) from these figures. For each shape
and dtype, Q, K, V and dO are drawn from a standard normal and rounded to
the dtype; O and the row log-sum-exp are the fp64 forward's, O rounded to
the dtype and the LSE to fp32, as the host gives them to every backend in
mode bwd. The backward is then computed the straightforward way, the way a
FlashAttention-style kernel rounds: P = exp(scale·Q·Kᵀ − LSE) in fp32 and
rounded to the dtype for dV = Pᵀ·dO; dP = dO·Vᵀ in fp32; dS = P∘(dP − D)
rounded to the dtype for dQ = scale·dS·K and dK = scale·dSᵀ·Q; every
product accumulated in fp32 and each gradient rounded to the dtype (fp32
throughout for fp32). The fp64 reference takes the same rounded inputs.

For each output it prints the relative L2 error, the largest absolute
error, and "needs": the smallest multiple of the dtype's tolerance
(op.DefaultTolerances) that the output passes, by the same element rule
and relative-L2 rule as the host's check.

    python scripts/tolerance_probe_backward.py        (needs torch; runs on the CPU)
"""

import math

import torch

# (heads, kv_heads, seq, head_dim, causal): the shapes of the backward
# suite's cases, with fewer heads so the fp64 reference stays quick.
SHAPES = [(4, 4, 1024, 64, False), (4, 4, 1024, 64, True), (2, 2, 2048, 128, True),
          (4, 1, 1000, 128, True), (2, 2, 4096, 128, False), (1, 1, 8192, 128, True)]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
# op.DefaultTolerances: (atol, rtol, rel_l2).
TOLERANCES = {"fp16": (2e-3, 1e-2, 2e-3), "bf16": (1.6e-2, 3e-2, 1.6e-2), "fp32": (2e-5, 2e-5, 2e-5)}


def expand(x, group):
    return x.repeat_interleave(group, dim=1) if group > 1 else x


def masked_scores(q, k, causal):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    return scores


def backward(q, k, v, o, do, lse, causal, dtype, accumulate, group):
    """dQ, dK, dV from the given O and LSE, rounding as a kernel in dtype
    does when accumulate is fp32, exactly when everything is fp64."""
    up = lambda x: x.to(accumulate)  # noqa: E731
    kf, vf = expand(up(k), group), expand(up(v), group)
    qf, dof, of = up(q), up(do), up(o)
    p = torch.exp(masked_scores(qf, kf, causal) - up(lse)[..., None])
    delta = (dof * of).sum(-1, keepdim=True)
    dp = dof @ vf.transpose(-1, -2)
    ds = p * (dp - delta)
    p_r, ds_r = up(p.to(dtype)), up(ds.to(dtype))
    scale = 1 / math.sqrt(q.shape[-1])
    dv = p_r.transpose(-1, -2) @ dof
    dq = scale * (ds_r @ kf)
    dk = scale * (ds_r.transpose(-1, -2) @ qf)
    b, h, s, d = dk.shape
    dk = dk.reshape(b, h // group, group, s, d).sum(2)
    dv = dv.reshape(b, h // group, group, s, d).sum(2)
    return tuple(x.to(dtype).to(torch.float64) for x in (dq, dk, dv))


def needs(got, want, dtype):
    """The smallest factor f with |e| <= f·(atol + rtol·|r|) everywhere and
    rel_l2 <= f·rel_l2_tolerance."""
    atol, rtol, rel_l2 = TOLERANCES[dtype]
    err = (got - want).abs()
    element = (err / (atol + rtol * want.abs())).max().item()
    rel = ((got - want).norm() / want.norm()).item()
    return max(element, rel / rel_l2), rel, err.max().item()


def main():
    generator = torch.Generator().manual_seed(7)
    worst = {}
    for heads, kv_heads, seq, dim, causal in SHAPES:
        group = heads // kv_heads
        q, do = (torch.randn(1, heads, seq, dim, generator=generator, dtype=torch.float64) for _ in range(2))
        k, v = (torch.randn(1, kv_heads, seq, dim, generator=generator, dtype=torch.float64) for _ in range(2))
        label = f"B1 H{heads}" + (f"/{kv_heads}" if group > 1 else "") + f" S{seq} D{dim}" + (" causal" if causal else "")
        for name, dtype in DTYPES.items():
            qr, kr, vr, dor = (x.to(dtype).to(torch.float64) for x in (q, k, v, do))
            scores = masked_scores(qr, expand(kr, group), causal)
            lse = torch.logsumexp(scores, -1)
            o = (torch.softmax(scores, -1) @ expand(vr, group)).to(dtype).to(torch.float64)
            lse32 = lse.to(torch.float32).to(torch.float64)
            want = backward(qr, kr, vr, o, dor, lse32, causal, torch.float64, torch.float64, group)
            accumulate = torch.float64 if dtype == torch.float32 else torch.float32
            if dtype == torch.float32:
                accumulate = torch.float32
            got = backward(qr, kr, vr, o, dor, lse32, causal, dtype, accumulate, group)
            parts = []
            for output, g, w in zip(("dq", "dk", "dv"), got, want):
                factor, rel, max_abs = needs(g, w, name)
                worst[(name, output)] = max(worst.get((name, output), 0), factor)
                parts.append(f"{output} rel_l2 {rel:.2e} max_abs {max_abs:.2e} needs {factor:.2f}×")
            print(f"{label} {name}: " + "; ".join(parts), flush=True)
    print("largest factor needed over the shapes:")
    for (name, output), factor in sorted(worst.items()):
        print(f"  {name} {output}: {factor:.2f}×")


if __name__ == "__main__":
    main()
