"""Does a kernel's speed follow the SM clock? Runs one attention call back
to back in profiled windows, with NVML read every few milliseconds on a
thread beside it, and prints, per window, CUPTI's median device time per
call next to the SM clock, power and clock-event reasons NVML saw during
that window. Needs a CUDA GPU, torch and nvidia-ml-py (pynvml).

    python3 scripts/clock_probe.py --shape 2,16,8192,64 --windows 40 --calls 10
"""

import argparse
import statistics
import threading
import time


def poll_nvml(stop, readings, period_s):
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
    while not stop.is_set():
        readings.append((time.perf_counter_ns(),
                         pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                         pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                         pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
                         reasons(handle)))
        time.sleep(period_s)


def main():
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", default="2,16,8192,64", help="B,H,S,D")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--windows", type=int, default=40)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--idle-ms", type=float, default=20, help="idle time between windows")
    args = parser.parse_args()
    b, h, s, d = (int(x) for x in args.shape.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=args.causal)  # noqa: E731
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    readings, stop = [], threading.Event()
    poller = threading.Thread(target=poll_nvml, args=(stop, readings, 0.002), daemon=True)
    poller.start()
    rows = []
    for w in range(args.windows):
        time.sleep(args.idle_ms / 1000)
        t0 = time.perf_counter_ns()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(args.calls):
                fn()
            torch.cuda.synchronize()
        t1 = time.perf_counter_ns()
        acts = sorted((e.start_ns(), e.duration_ns()) for e in prof.profiler.kineto_results.events()
                      if e.device_type() == DeviceType.CUDA and not e.is_user_annotation())
        per = len(acts) // args.calls
        calls = [sum(dur for _, dur in acts[i * per:(i + 1) * per]) for i in range(args.calls)]
        inside = [r for r in readings if t0 <= r[0] <= t1]
        rows.append((w, statistics.median(calls), min(calls), max(calls), inside))
    stop.set()
    poller.join()
    print(f"shape B{b} H{h} S{s} D{d} causal={args.causal}: per window of {args.calls} calls")
    print("window  median_us  min_us  max_us  sm_mhz(min/med/max)  power_w  temp_c  reasons")
    for w, med, lo, hi, inside in rows:
        if inside:
            clocks = sorted(r[1] for r in inside)
            power = statistics.median(r[2] for r in inside)
            temp = max(r[3] for r in inside)
            reasons = hex(max(r[4] for r in inside))
            clock = f"{clocks[0]}/{clocks[len(clocks) // 2]}/{clocks[-1]}"
        else:
            clock, power, temp, reasons = "-", 0, 0, "-"
        print(f"{w:6d} {med / 1000:10.1f} {lo / 1000:7.1f} {hi / 1000:7.1f}  {clock:>19}  {power:7.0f}  {temp:6d}  {reasons}")


if __name__ == "__main__":
    main()
