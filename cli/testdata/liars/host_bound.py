"""An honest py: file whose calls cost the host far more than their
kernels, for the timing audit's GPU step (scripts/gpu-audit.sh,
host-bound): each call runs one SDPA and then waits 0.4 s on the host, as
a Python loop of many small launches or a host-side synchronisation would.
Its kernel time is true, but on a GPU the host's clock cannot reconcile it
with 0.4 s a call, so the row is refused by the clock, and the timing
audit, which measures it under ncu, must find the reported kernel time
confirmed and let the row PASS with a warning."""

import time

import torch
import torch.nn.functional as F

HOST_SECONDS = 0.4


def capabilities():
    return {"dtypes": ["fp16", "bf16"], "gqa": True, "unequal_lengths": True}


def attention(q, k, v, *, causal: bool, scale: float) -> torch.Tensor:
    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                         enable_gqa=q.shape[1] != k.shape[1])
    if out.is_cuda:
        torch.cuda.synchronize()
    time.sleep(HOST_SECONDS)
    return out
