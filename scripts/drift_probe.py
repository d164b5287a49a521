"""Where does a kernel's time move between two runs of one build? Times one
attention call in short windows (CUDA events around back-to-back calls)
three ways and prints how far the window medians spread each way:

  time     one allocation, windows spaced --idle-ms apart;
  alloc    a fresh allocation for every window, moved by a random-sized
           tensor kept alive in front of it;
  process  a fresh Python process for every window (torch and the
           kernel's setup start again).

If the 'alloc' or 'process' spread is larger than the 'time' spread, no
number of samples within one process and one allocation can reach the
variation between runs. Needs a CUDA GPU and torch; --triton uses the
project's Triton kernel (plugins/triton/triton_attention.py).

    python3 scripts/drift_probe.py --shape 2,16,8192,128 --windows 30
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time


def make_call(torch, args, pad_mb):
    b, h, s, d = (int(x) for x in args.shape.split(","))
    keep = torch.empty(int(pad_mb * 2**20), dtype=torch.uint8, device="cuda") if pad_mb else None
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    if args.triton:
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, os.path.join(here, "..", "plugins", "triton"))
        import triton_attention
        out = torch.empty_like(q)
        fn = lambda: triton_attention.attention(q, k, v, out, args.causal)  # noqa: E731
    else:
        fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal)  # noqa: E731
    return fn, (keep, q, k, v)


def window(torch, fn, calls):
    """Median device time of one call over calls back-to-back calls."""
    events = [torch.cuda.Event(enable_timing=True) for _ in range(calls + 1)]
    events[0].record()
    for i in range(calls):
        fn()
        events[i + 1].record()
    torch.cuda.synchronize()
    return statistics.median(events[i].elapsed_time(events[i + 1]) * 1000 for i in range(calls))


def spread(xs):
    m = statistics.median(xs)
    return f"median {m:8.1f} us  min {min(xs):8.1f}  max {max(xs):8.1f}  (max-min)/median {100 * (max(xs) - min(xs)) / m:5.2f}%"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="2,16,8192,128", help="B,H,S,D")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--triton", action="store_true")
    p.add_argument("--windows", type=int, default=30)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--idle-ms", type=float, default=50)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--ways", default="time,alloc,process")
    args = p.parse_args()
    import torch

    if args.child:
        fn, _ = make_call(torch, args, 0)
        for _ in range(10):
            fn()
        print(json.dumps([window(torch, fn, args.calls) for _ in range(3)]))
        return
    label = f"{'triton' if args.triton else 'sdpa'} {args.shape}{' causal' if args.causal else ''}"
    ways = args.ways.split(",")
    if "time" in ways:
        fn, _ = make_call(torch, args, 0)
        for _ in range(10):
            fn()
        xs = []
        for _ in range(args.windows):
            time.sleep(args.idle_ms / 1000)
            xs.append(window(torch, fn, args.calls))
        print(f"{label} time:    {spread(xs)}  windows: {' '.join(f'{x:.0f}' for x in xs)}", flush=True)
        del fn
        torch.cuda.empty_cache()
    if "alloc" in ways:
        rng = random.Random(1)
        xs, held = [], []
        for _ in range(args.windows):
            fn, bufs = make_call(torch, args, rng.uniform(1, 512))
            held.append(bufs)
            for _ in range(5):
                fn()
            xs.append(window(torch, fn, args.calls))
            if len(held) > 3:
                held.pop(0)
        print(f"{label} alloc:   {spread(xs)}  windows: {' '.join(f'{x:.0f}' for x in xs)}", flush=True)
        held.clear()
        torch.cuda.empty_cache()
    if "process" in ways:
        xs, inner = [], []
        n = max(args.windows // 5, 3)
        for _ in range(n):
            out = subprocess.run([sys.executable, __file__, "--child", "--shape", args.shape, "--calls", str(args.calls)]
                                 + (["--causal"] if args.causal else []) + (["--triton"] if args.triton else []),
                                 capture_output=True, text=True, check=True).stdout
            w = json.loads(out.strip().splitlines()[-1])
            inner.append(max(w) / min(w) - 1)
            xs.append(statistics.median(w))
        print(f"{label} process: {spread(xs)}  (within a process at most {100 * max(inner):.2f}%)  "
              f"processes: {' '.join(f'{x:.0f}' for x in xs)}", flush=True)


if __name__ == "__main__":
    main()
