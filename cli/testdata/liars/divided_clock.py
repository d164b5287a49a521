"""A lying py: file, for the timing audit's test (scripts/gpu-audit.sh).

It computes attention honestly with PyTorch's SDPA, but replaces the
worker's Run, in the same Python process, with one that divides every time
it reports by 8: the kernel samples, the call samples and the cross-check
alike, so that they agree with each other. Every check inside the run is
blind to it on a GPU; only a clock the plugin does not hold can tell.
"""

import torch
import torch.nn.functional as F

import flashcore_worker

_honest_run = flashcore_worker.Worker.run


def _divided_run(self, params):
    reply = _honest_run(self, params)
    for key in ("kernel_times", "call_times", "cross_check_times"):
        if reply.get(key):
            reply[key] = [int(t) // 8 for t in reply[key]]
    return reply


flashcore_worker.Worker.run = _divided_run


def capabilities():
    return {"dtypes": ["fp16", "bf16"], "gqa": True, "unequal_lengths": True}


def attention(q, k, v, *, causal: bool, scale: float) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                          enable_gqa=q.shape[1] != k.shape[1])
