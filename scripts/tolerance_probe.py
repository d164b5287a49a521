#!/usr/bin/env python3
"""The error of a straightforward same-precision attention against fp64.

docs/correctness.md sets each dtype's tolerance from these figures: for
each shape and dtype, the inputs are drawn from a standard normal and
rounded to the dtype; attention is computed the straightforward way (Q·Kᵀ,
softmax and P·V accumulated in fp32, P and the output rounded to the
dtype; fp32 throughout for fp32) and compared with fp64 on the same rounded
inputs. Prints the relative L2 error and the largest absolute error.

    python scripts/tolerance_probe.py        (needs torch; runs on the CPU)
"""

import math

import torch

SHAPES = [(2, 128, 64, False), (8, 512, 64, True), (4, 2048, 128, False), (2, 4096, 128, True)]
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


def attention(q, k, v, causal, dtype, accumulate):
    q, k, v = (x.to(accumulate) for x in (q, k, v))
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        mask = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
    p = torch.softmax(scores, -1)
    return (p.to(dtype).to(accumulate) @ v).to(dtype).to(torch.float64)


def main():
    generator = torch.Generator().manual_seed(7)
    for heads, seq, dim, causal in SHAPES:
        q, k, v = (torch.randn(1, heads, seq, dim, generator=generator, dtype=torch.float64) for _ in range(3))
        for name, dtype in DTYPES.items():
            qr, kr, vr = (x.to(dtype) for x in (q, k, v))
            reference = attention(qr, kr, vr, causal, torch.float64, torch.float64)
            got = attention(qr, kr, vr, causal, dtype, torch.float32)
            rel = ((got - reference).norm() / reference.norm()).item()
            print(f"B1 H{heads} S{seq} D{dim}{' causal' if causal else ''} {name}: "
                  f"rel_l2 {rel:.2e}, max_abs {(got - reference).abs().max().item():.2e}")


if __name__ == "__main__":
    main()
