"""Checks and times the triton plugin's backward pass on a GPU: the
forward storing its log-sum-exp, then the backward (autotuned, as the
backend runs them), against a float64 autograd reference at odd shapes,
then kernel times at large ones next to the forward and PyTorch SDPA's
backward (triton.testing.do_bench, hot L2). Needs a CUDA GPU, torch and
triton; exits 1 when an output misses its tolerance.

    python3 scripts/triton_backward_probe.py            # check, then time
    python3 scripts/triton_backward_probe.py --check    # check only
"""

import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plugins", "triton"))
import triton  # noqa: E402
import triton_attention  # noqa: E402
import triton_attention_bwd  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
# Relative to the largest magnitude of the reference (python/tests/helpers.py's).
TOLERANCE = {"fp16": 1e-2, "bf16": 4e-2, "fp32": 1e-4}
# (batch, heads, kv_heads, seq_q, seq_k, head_dim, causal, dtype)
CHECKED = [
    (2, 8, 2, 1000, 1000, 64, True, "fp16"),
    (1, 4, 4, 333, 517, 128, False, "bf16"),
    (1, 4, 1, 517, 333, 64, True, "fp32"),
    (1, 4, 2, 300, 300, 128, True, "fp32"),
]
TIMED = [
    (4, 16, 16, 2048, 2048, 128, False, "fp16"),
    (4, 16, 4, 2048, 2048, 128, True, "fp16"),
    (4, 16, 16, 2048, 2048, 64, True, "bf16"),
]
DEVICE = torch.device("cuda")


def inputs(batch, heads, kv_heads, seq_q, seq_k, head_dim, dtype, seed=0):
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    dims = ((batch, heads, seq_q, head_dim), (batch, kv_heads, seq_k, head_dim),
            (batch, kv_heads, seq_k, head_dim), (batch, heads, seq_q, head_dim))
    return [torch.randn(d, generator=gen, device=DEVICE).to(DTYPES[dtype]) for d in dims]


def reference(q, k, v, do, causal):
    """O, lse, dQ, dK, dV in float64 (top-left causal, GQA)."""
    q, k, v = (t.double().requires_grad_() for t in (q, k, v))
    group = q.shape[1] // k.shape[1]
    scores = q @ k.repeat_interleave(group, 1).transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        above = torch.arange(k.shape[2], device=DEVICE)[None, :] > torch.arange(q.shape[2], device=DEVICE)[:, None]
        scores = scores.masked_fill(above, float("-inf"))
    lse = torch.logsumexp(scores, -1)
    out = torch.softmax(scores, -1) @ v.repeat_interleave(group, 1)
    return (out.detach(), lse.detach(), *torch.autograd.grad(out, (q, k, v), do.double()))


def check():
    failed = 0
    for batch, heads, kv_heads, seq_q, seq_k, head_dim, causal, dtype in CHECKED:
        q, k, v, do = inputs(batch, heads, kv_heads, seq_q, seq_k, head_dim, dtype)
        want = reference(q, k, v, do, causal)
        out, lse = torch.full_like(q, math.nan), torch.full(q.shape[:3], math.nan, device=DEVICE)
        dq, dk, dv = (torch.full_like(t, math.nan) for t in (q, k, v))
        started = time.time()
        triton_attention.attention(q, k, v, out, causal, lse=lse)
        triton_attention_bwd.backward(q, k, v, out, do, lse, dq, dk, dv, causal)
        torch.cuda.synchronize()
        tuning = time.time() - started
        errors = {name: ((got.double() - ref).abs().max() / ref.abs().max()).item()
                  for name, got, ref in zip(("o", "lse", "dq", "dk", "dv"), (out, lse, dq, dk, dv), want)}
        bad = [name for name, e in errors.items() if not e <= TOLERANCE[dtype]]
        failed += bool(bad)
        print(f"{'FAIL' if bad else 'ok  '} B{batch} H{heads}/{kv_heads} S{seq_q}x{seq_k} D{head_dim} {dtype}"
              f"{' causal' if causal else ''}: relative error "
              + " ".join(f"{name} {e:.1e}" for name, e in errors.items())
              + f" (tolerance {TOLERANCE[dtype]:g}); compiled and tuned in {tuning:.1f} s;"
              f" fwd {triton_attention.chosen_config()}; {triton_attention_bwd.chosen_config()}", flush=True)
    return failed


def timing():
    from triton.testing import do_bench

    for batch, heads, kv_heads, seq_q, seq_k, head_dim, causal, dtype in TIMED:
        q, k, v, do = inputs(batch, heads, kv_heads, seq_q, seq_k, head_dim, dtype)
        out, lse, delta = torch.empty_like(q), torch.empty(q.shape[:3], device=DEVICE), triton_attention_bwd.delta_buffer(q)
        dq, dk, dv = (torch.empty_like(t) for t in (q, k, v))
        started = time.time()
        triton_attention.attention(q, k, v, out, causal)
        triton_attention.attention(q, k, v, out, causal, lse=lse)
        triton_attention_bwd.backward(q, k, v, out, do, lse, dq, dk, dv, causal, delta=delta)
        torch.cuda.synchronize()
        tuning = time.time() - started
        forward = do_bench(lambda: triton_attention.attention(q, k, v, out, causal))
        forward_lse = do_bench(lambda: triton_attention.attention(q, k, v, out, causal, lse=lse))
        backward = do_bench(lambda: triton_attention_bwd.backward(q, k, v, out, do, lse, dq, dk, dv, causal,
                                                                  delta=delta))
        qs, ks, vs = (t.detach().requires_grad_() for t in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention(qs, ks, vs, is_causal=causal,
                                                                enable_gqa=kv_heads != heads)
        sdpa_backward = do_bench(lambda: torch.autograd.grad(sdpa, (qs, ks, vs), do, retain_graph=True))
        flops = 4 * batch * heads * seq_q * seq_k * head_dim * (0.5 if causal else 1)
        print(f"B{batch} H{heads}/{kv_heads} S{seq_q} D{head_dim} {dtype}{' causal' if causal else ''}: "
              f"fwd {forward * 1e3:.1f} us, fwd storing lse {forward_lse * 1e3:.1f} us; "
              f"bwd {backward * 1e3:.1f} us ({2.5 * flops / backward / 1e9:.0f} TFLOP/s); "
              f"SDPA bwd {sdpa_backward * 1e3:.1f} us; tuned in {tuning:.1f} s: {triton_attention_bwd.chosen_config()}",
              flush=True)


def main():
    print(f"{torch.cuda.get_device_name()}, triton {triton.__version__}, torch {torch.__version__}", flush=True)
    failed = check()
    if "--check" not in sys.argv[1:]:
        timing()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
