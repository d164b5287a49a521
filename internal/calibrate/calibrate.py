"""Measures the peaks a roofline is drawn against, with torch.

Run by `flashcore calibrate` as: python calibrate.py DEVICE COPY_MIB GEMM_N REPEATS
where DEVICE is "cuda" or "cpu". Prints one JSON object on stdout.

Bandwidth: a device-to-device copy of COPY_MIB MiB (dst.copy_(src)),
counting the bytes read and the bytes written. Compute: an N x N x N
matrix product, 2*N^3 FLOPs, in fp16 and bf16 on a GPU (tensor cores) and
fp32 on a CPU. Each figure is the best of REPEATS timed calls after two
warm-up calls: a peak is what the device can reach, so the fastest call is
the estimate, not the median.
"""

import json
import sys
import time

import torch


def timed_cuda(fn, repeats):
    fn()
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / 1e3)
    return best


def timed_cpu(fn, repeats):
    fn()
    fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def driver_version():
    try:
        with open("/proc/driver/nvidia/version") as f:
            first = f.readline()
        for word in first.split():
            if word.count(".") >= 1 and word.replace(".", "").isdigit():
                return word
    except OSError:
        pass
    return ""


def main():
    device, copy_mib, gemm_n, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    out = {"torch": torch.__version__}
    if device == "cuda":
        if not torch.cuda.is_available():
            print(json.dumps({"error": "torch sees no CUDA device"}))
            return
        props = torch.cuda.get_device_properties(0)
        out["name"] = props.name
        out["uuid"] = str(getattr(props, "uuid", ""))
        out["driver"] = driver_version()
        timed = timed_cuda
        dtypes = [torch.float16, torch.bfloat16]
    else:
        torch.manual_seed(0)
        out["threads"] = torch.get_num_threads()
        timed = timed_cpu
        dtypes = [torch.float32]

    n = copy_mib * (1 << 20)
    src = torch.empty(n, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    src.fill_(1)
    seconds = timed(lambda: dst.copy_(src), repeats)
    out["copy_bytes"] = 2 * n
    out["copy_seconds"] = seconds
    del src, dst

    out["gemm_n"] = gemm_n
    out["gemm"] = {}
    for dtype in dtypes:
        a = torch.randn(gemm_n, gemm_n, device=device).to(dtype)
        b = torch.randn(gemm_n, gemm_n, device=device).to(dtype)
        c = torch.empty(gemm_n, gemm_n, device=device, dtype=dtype)
        seconds = timed(lambda: torch.mm(a, b, out=c), repeats)
        out["gemm"][str(dtype).removeprefix("torch.")] = seconds
        del a, b, c
    print(json.dumps(out))


if __name__ == "__main__":
    main()
