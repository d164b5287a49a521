"""A Triton file that cannot compile: its tl.dot multiplies a [BLOCK, 16]
block by a [32, BLOCK] one. Under the interpreter (no GPU) the launch
fails; on a GPU Triton's compiler rejects it. Either way the row's reason
must name the error, and the whole stderr must be kept."""

import torch
import triton
import triton.language as tl


def capabilities():
    return {"dtypes": ["fp16"], "head_dims": [16]}


@triton.jit
def _scores(Q, K, O, BLOCK: tl.constexpr):
    rows = tl.arange(0, BLOCK)
    q = tl.load(Q + rows[:, None] * 16 + tl.arange(0, 16)[None, :])
    k = tl.load(K + tl.arange(0, 32)[:, None] * BLOCK + rows[None, :])
    s = tl.dot(q, k)  # [BLOCK, 16] x [32, BLOCK]: the inner dimensions differ
    tl.store(O + rows[:, None] * BLOCK + rows[None, :], s.to(tl.float16))


def attention(q, k, v, *, causal, scale):
    out = torch.empty(q.shape[2], q.shape[2], dtype=q.dtype, device=q.device)
    _scores[(1,)](q, k, out, BLOCK=16)
    return q
