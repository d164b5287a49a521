"""Attention backward with one planted fault, for showing on a GPU that the
host's gradient check FAILs each kind of wrong gradient.

A `py:` file for `flashcore run --backends py:FILE`: attention_backward is
PyTorch's own (scaled_dot_product_attention through autograd, on whatever
device the host gives), then one fault is planted in what it returns. The
fault is the part of the file's name after "planted_" (copy this file
under each name, as scripts/gpu-backward.sh does):

    planted_honest.py         plants nothing: the control, which must PASS
    planted_zero_dk.py        dK all zeros
    planted_nan_dq.py         one NaN in dQ
    planted_swap_dkdv.py      dK returned as dV and dV as dK
    planted_wrong_group.py    dK of key/value head 0 written over head 1's
    planted_transposed_dk.py  each head's dK laid out [D, Sk] instead of [Sk, D]
    planted_noise_dq.py       ±1e-2 added to every element of dQ
"""

import os

import torch
import torch.nn.functional as F

FAULT = os.path.splitext(os.path.basename(__file__))[0].removeprefix("planted_")
FAULTS = ("honest", "zero_dk", "nan_dq", "swap_dkdv", "wrong_group", "transposed_dk", "noise_dq")
if FAULT not in FAULTS:
    raise ValueError(f"{__file__}: no fault named {FAULT!r}: want planted_<fault>.py, fault one of {', '.join(FAULTS)}")


def attention_backward(q, k, v, o, do, lse, *, causal, scale):
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    out = F.scaled_dot_product_attention(*leaves, is_causal=causal, scale=scale,
                                         enable_gqa=q.shape[1] != k.shape[1])
    dq, dk, dv = torch.autograd.grad(out, leaves, do)
    return plant(dq, dk, dv)


def plant(dq, dk, dv):
    if FAULT == "zero_dk":
        dk = torch.zeros_like(dk)
    elif FAULT == "nan_dq":
        dq = dq.contiguous().clone()
        dq.view(-1)[dq.numel() // 2] = float("nan")
    elif FAULT == "swap_dkdv":
        dk, dv = dv, dk
    elif FAULT == "wrong_group":
        if dk.shape[1] < 2:
            raise ValueError("wrong_group needs at least two key/value heads")
        dk = dk.clone()
        dk[:, 1] = dk[:, 0]
    elif FAULT == "transposed_dk":
        dk = dk.transpose(-1, -2).contiguous().reshape(dk.shape)
    elif FAULT == "noise_dq":
        signs = torch.randint(0, 2, dq.shape, device=dq.device, generator=None).to(dq.dtype) * 2 - 1
        dq = dq + 1e-2 * signs
    return dq, dk, dv
