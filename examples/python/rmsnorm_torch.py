"""Plain PyTorch RMS normalisation: y = x / sqrt(mean(x²) + eps) · weight, in fp32."""

import torch


def capabilities():
    return {"dtypes": ["fp16", "bf16", "fp32"]}


def rmsnorm(x, weight, *, eps: float) -> torch.Tensor:
    # x: [rows, cols]; weight: [cols]. Each row is normalised on its own,
    # accumulating in fp32 whatever the dtype, and rounded once at the end.
    xf = x.float()
    inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
    return (xf * inv_rms * weight.float()).to(x.dtype)
