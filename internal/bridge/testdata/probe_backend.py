"""A backend for the bridge's own tests: torch's math attention on the
CPU, plus variants that misbehave on purpose so the Go side's handling of
crashes, hangs, errors and refusals can be tested against a real worker,
and rmsnorm variants for the worker's path of ops other than attention."""

import os
import sys
import time

import torch

import flashcore_worker as core

CRASH_MARKER = "probe crash marker 4242"


class Backend:
    version = "probe-1"
    build = "test"

    def __init__(self, device):
        self.device = device

    def variants(self):
        caps = core.capabilities(("fp32", "fp16"))
        names = ("math", "untouched", "crash", "hang", "oom", "refuse", "raise")
        attention = [{"name": name, "capabilities": caps} for name in names]
        # gpu is math that declares it needs a GPU: on a CPU the bridge must
        # refuse it before the worker sees the request.
        attention.append({"name": "gpu", "capabilities": core.capabilities(("fp32", "fp16"), needs_gpu=True)})
        rmsnorm = [{"name": name, "ops": ["rmsnorm"], "capabilities": caps} for name in ("rmsnorm", "rmsnorm-untouched")]
        return attention + rmsnorm

    def prepare_op(self, case):
        """rmsnorm into a buffer the core poisons: y = x / sqrt(mean(x²) +
        eps) · weight in fp32, or nothing at all for rmsnorm-untouched."""
        x, weight = case.inputs["x"], case.inputs["weight"]
        out = torch.empty(case.outputs[0].dims, dtype=x.dtype, device=case.device)
        if case.variant == "rmsnorm-untouched":
            return core.Kernel(lambda: out, output=out)

        def run():
            xf = x.float()
            out.copy_(xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + core.RMSNORM_EPS) * weight.float())
            return out

        return core.Kernel(run, facts={"probe": "yes"}, output=out)

    def prepare(self, case):
        if case.variant == "crash":
            print(f"Traceback (most recent call last):\nRuntimeError: {CRASH_MARKER}", file=sys.stderr, flush=True)
            os._exit(7)
        if case.variant == "hang":
            time.sleep(600)
        if case.variant == "oom":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 80.00 GiB")
        if case.variant == "refuse":
            raise core.Unsupported("probe refuses this case", "because the test asked")
        if case.variant == "raise":
            raise ValueError("probe raised")
        out = torch.empty(case.shape.q_shape, dtype=case.q.dtype, device=case.device)
        if case.variant == "untouched":  # never writes its output
            return core.Kernel(lambda: out, output=out)

        def run():
            group = case.shape.heads // case.shape.kv_heads
            k = case.k.float().repeat_interleave(group, 1)
            v = case.v.float().repeat_interleave(group, 1)
            scores = case.q.float() @ k.transpose(-1, -2) * case.shape.scale
            if case.shape.causal:
                rows = torch.arange(case.shape.seq_q, device=case.device)[:, None]
                cols = torch.arange(case.shape.seq_k, device=case.device)[None, :]
                scores = scores.masked_fill(cols > rows, float("-inf"))
            out.copy_(torch.softmax(scores, -1) @ v)
            return out

        return core.Kernel(run, facts={"probe": "yes"}, output=out)
