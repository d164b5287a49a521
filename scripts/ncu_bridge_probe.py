#!/usr/bin/env python3
"""Run the bridges' kernels at the seed shape (B1 H8 S512 D64 fp16) in a
plain loop, for Nsight Compute to time: PyTorch's default SDPA dispatch and
our Triton kernel (plugins/triton/triton_attention.py, passed as argv[1]).

The bridges start their Python worker from a Go plugin, and profilers that
follow child processes through libc's exec cannot follow Go's; this script
runs the same kernels on the same shape directly under ncu instead:

    ncu --profile-from-start off --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv --log-file ncu-bridges.csv \
        python3 ncu_bridge_probe.py triton_attention.py "BLOCK_M=64 BLOCK_N=64 warps=4 stages=3"

argv[2] is the Triton config the plugin's autotuner chose for that shape
(its result's "config" fact), so ncu times the same kernel; warm-up happens
before cudaProfilerStart, so ncu times only the 30 calls of each after it.
"""
import importlib.util
import sys

import torch
import torch.nn.functional as F


def main(triton_path, triton_config):
    q, k, v = (torch.randn(1, 8, 512, 64, dtype=torch.float16, device="cuda") for _ in range(3))
    spec = importlib.util.spec_from_file_location("triton_attention", triton_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = torch.empty_like(q)
    for _ in range(10):  # warm-up; the first Triton call autotunes
        F.scaled_dot_product_attention(q, k, v)
        module.attention(q, k, v, out, causal=False, config=triton_config)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for _ in range(30):
        F.scaled_dot_product_attention(q, k, v)
    for _ in range(30):
        module.attention(q, k, v, out, causal=False, config=triton_config)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
