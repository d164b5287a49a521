#!/usr/bin/env python3
"""Where does kernel time come from? A probe of the timing methods of the
Python bridges on a CUDA GPU, at the shapes of suites/seed.toml and
suites/llm.toml, for PyTorch SDPA (default dispatch) and the project's
Triton kernel (plugins/triton/triton_attention.py). It needs torch (and
triton for the Triton rows), nothing of FlashCore bench itself:

    python3 scripts/timing_probe.py                       # seed and llm shapes, both kernels, hot
    python3 scripts/timing_probe.py --shapes seed --cold  # cold L2 at the seed shapes too
    python3 scripts/timing_probe.py --ncu                 # and Nsight Compute's figure per call

For every (kernel, shape) it measures, in µs per call (median over --calls
calls or samples):

  cupti       CUPTI (torch.profiler) summed device durations of one call,
              calls in a plain Python loop: the bridges' primary method.
  kern        the same, kernels only (no memsets or copies): what ncu sees.
  b2b         CUPTI sum per call for calls queued behind a sleep, so they
              run back to back on the device.
  gap         the device idle time per call in that back-to-back run
              (span of the run minus summed durations, over the calls).
  ev-batch    CUDA events behind torch.cuda._sleep, a batch of back-to-back
              calls per sample divided by the batch (the bridges' former
              hot-mode method); the batch size follows in brackets.
  ev-1        the same with one call per sample.
  ev-1+prof   ev-1 taken while the profiler runs (does CUPTI change it?).
  cupti@ev    CUPTI sum per call inside that ev-1 run (the kernel after a
              sleep: does the neighbourhood change its duration?).
  lead        device time from the end of the sleep kernel to the start of
              the call's first activity, in that run.
  inner       device idle time between the activities of one call (SDPA's
              memset and kernel), in that run.
  ncu         gpu__time_duration.sum summed over one call's kernels, ncu
              --clock-control none, --cache-control none (hot) or all (cold).
  MHz         NVML's SM clock after the row (0 without pynvml).

ev-1 - cupti@ev ≈ lead + inner + the end event's own latency; cupti@ev
against cupti and b2b says whether the kernel itself runs slower after a
sleep (clocks, caches); ev-1+prof against ev-1 is the profiler's own effect
on device time; kern against ncu is CUPTI against Nsight Compute. With
--json the rows are written as JSON too.

The script runs itself under ncu for the ncu column (--ncu-child, with
--profile-from-start off: only the timed calls are profiled, and each
Triton row runs the configuration its autotuner chose in the parent).
"""

import argparse
import importlib.util
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The kernel in a checkout, or beside this script in a dist/ folder.
TRITON_KERNEL = next((p for p in (ROOT / "plugins" / "triton" / "triton_attention.py",
                                  pathlib.Path(__file__).with_name("triton_attention.py")) if p.exists()),
                     ROOT / "plugins" / "triton" / "triton_attention.py")

# (batch, heads, seq, head_dim, dtype, causal), as the suites sweep them.
SEED_SHAPES = [(1, 8, 512, 64, d, c) for d in ("fp16", "bf16") for c in (False, True)]
LLM_SHAPES = (
    [(b, h, s, d, "fp16", c) for b, h, s in ((16, 16, 512), (8, 16, 1024), (4, 16, 2048))
     for d in (64, 128) for c in (False, True)]
    + [(4, 16, 2048, 128, "bf16", c) for c in (False, True)]
    + [(b, h, s, d, "fp16", c) for b, h, s in ((2, 16, 4096), (2, 16, 8192), (1, 32, 16384))
       for d in (64, 128) for c in (False, True)]
)
HOT_BATCH_TARGET_NS, HOT_BATCH_MAX = 100_000, 32  # the bridges' former hot batch rule
COLUMNS = ["cupti", "kern", "b2b", "gap", "ev-batch", "ev-1", "ev-1+prof", "cupti@ev", "lead", "inner", "ncu"]


# ---------------------------------------------------------------- pure helpers


def median(values):
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return math.nan
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def shape_label(shape):
    b, h, s, d, dtype, causal = shape
    return f"B{b} H{h} S{s} D{d} {dtype}" + (" causal" if causal else "")


def is_kernel(activity):
    """CUPTI's memsets and copies are named "Memset ..." and "Memcpy ..."."""
    return not activity[0].startswith(("Memset", "Memcpy"))


def split_runs(activities, size, skip=0):
    """activities (name, start, duration, stream), sorted by start, in runs
    of `size` after dropping `skip` leading ones of each run of size+skip."""
    ordered = sorted(activities, key=lambda a: a[1])
    step = size + skip
    if size <= 0 or len(ordered) % step:
        raise ValueError(f"{len(ordered)} activities do not split into runs of {step}")
    return [ordered[i + skip:i + step] for i in range(0, len(ordered), step)]


def idle_between(run):
    """Device time between consecutive activities of a run, summed."""
    return sum(max(0, b[1] - (a[1] + a[2])) for a, b in zip(run, run[1:]))


def hot_batch(single_ns):
    if single_ns <= 0:
        return HOT_BATCH_MAX
    return max(1, min(HOT_BATCH_MAX, -(-HOT_BATCH_TARGET_NS // int(single_ns))))


def parse_ncu_csv(text):
    """gpu__time_duration.sum of every profiled kernel, in ns, in launch order."""
    import csv
    import io

    lines = [line for line in text.splitlines() if line.startswith('"')]
    rows = []
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        scale = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9}[row["Metric Unit"]]
        rows.append((int(row["ID"]), row["Kernel Name"], float(row["Metric Value"].replace(",", "")) * scale))
    return [(name, ns) for _, name, ns in sorted(rows)]


def assign_ncu(kernels, plan):
    """Per plan entry (with "calls" and "kernels_per_call"), the median of
    the per-call summed ncu times; None for all when the counts disagree."""
    want = sum(p["calls"] * p["kernels_per_call"] for p in plan)
    if len(kernels) != want:
        return [None] * len(plan), f"ncu profiled {len(kernels)} kernels, the plan launches {want}"
    out, i = [], 0
    for p in plan:
        k = p["kernels_per_call"]
        calls = [sum(ns for _, ns in kernels[i + c * k:i + (c + 1) * k]) for c in range(p["calls"])]
        out.append(median(calls) if k else None)
        i += p["calls"] * k
    return out, ""


def format_table(rows, cold):
    head = f"{'kernel':<7} {'shape':<28} " + " ".join(f"{c:>9}" for c in COLUMNS) + f" {'MHz':>5}"
    lines = [f"# {'cold' if cold else 'hot'} L2; µs per call", head]
    for r in rows:
        cells = []
        for c in COLUMNS:
            v = r.get(c)
            text = "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v / 1000:.2f}"
            if c == "ev-batch" and v is not None:
                text += f"[{r['batch']}]"
            cells.append(f"{text:>9}")
        lines.append(f"{r['kernel']:<7} {r['shape']:<28} " + " ".join(cells) + f" {r.get('mhz', 0):>5.0f}")
    return "\n".join(lines)


# ---------------------------------------------------------------- on the GPU


class Probe:
    def __init__(self, torch, calls, cold):
        self.torch, self.calls, self.cold = torch, calls, cold
        self.start, self.end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
        props = torch.cuda.get_device_properties(0)
        self.flush_buffer = torch.empty(2 * int(getattr(props, "L2_cache_size", 0) or (50 << 20)),
                                        dtype=torch.uint8, device="cuda")
        self.flush_stream = torch.cuda.Stream()
        self.cycles_per_ns = self._calibrate()

    def _calibrate(self):
        rates = []
        for _ in range(4):
            self.start.record()
            self.torch.cuda._sleep(1_000_000)
            self.end.record()
            self.end.synchronize()
            rates.append(1_000_000 / (self.start.elapsed_time(self.end) * 1e6))
        return median(rates[1:])

    def sleep(self, ns):
        self.torch.cuda._sleep(int(ns * self.cycles_per_ns))

    def flush_on_own_stream(self):
        """The L2 flush on a stream of its own, ordered with the calls, so its
        activities can be left out by stream."""
        compute = self.torch.cuda.current_stream()
        self.flush_stream.wait_stream(compute)
        with self.torch.cuda.stream(self.flush_stream):
            self.flush_buffer.fill_(0xFF)
        compute.wait_stream(self.flush_stream)

    def profiled(self, body):
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        self.torch.cuda.synchronize()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                body()
                self.torch.cuda.synchronize()
        return [(e.name(), e.start_ns(), e.duration_ns(), e.device_resource_id())
                for e in prof.profiler.kineto_results.events()
                if e.device_type() == DeviceType.CUDA and not e.is_user_annotation()]

    def flush_stream_ids(self):
        return {a[3] for a in self.profiled(self.flush_on_own_stream)}

    def cupti_loop(self, fn, flush_ids):
        """Per-call activities of calls in a plain loop (after a flush each, cold)."""
        def body():
            for _ in range(self.calls):
                if self.cold:
                    self.flush_on_own_stream()
                fn()

        activities = [a for a in self.profiled(body) if a[3] not in flush_ids]
        return split_runs(activities, len(activities) // self.calls)

    def back_to_back(self, fn, per_call):
        def body():
            self.sleep(max(5_000_000, 500_000 * self.calls))  # outlasts the queueing of every call
            for _ in range(self.calls):
                fn()

        activities = sorted(self.profiled(body), key=lambda a: a[1])[1:]  # the sleep was launched first
        runs = split_runs(activities, per_call)
        return runs, idle_between(activities) / self.calls

    def events(self, fn, batch, samples):
        """Events behind a sleep around `batch` calls, per call, `samples` times."""
        out = []
        for _ in range(samples):
            self.sleep(400_000)
            if self.cold:
                self.flush_buffer.fill_(0xFF)
            self.start.record()
            for _ in range(batch):
                fn()
            self.end.record()
            self.end.synchronize()
            out.append(self.start.elapsed_time(self.end) * 1e6 / batch)
        return out

    def events_profiled(self, fn, per_call):
        """ev-1 under the profiler: its figures, and the CUPTI view of it."""
        figures = []
        activities = self.profiled(lambda: figures.extend(self.events(fn, 1, self.calls)))
        flushes = 1 if self.cold else 0
        runs = split_runs(activities, per_call, skip=1 + flushes)  # each sample: sleep, (flush,) the call
        ordered = sorted(activities, key=lambda a: a[1])
        step = per_call + 1 + flushes
        leads = [ordered[i + 1 + flushes][1] - (ordered[i + flushes][1] + ordered[i + flushes][2])
                 for i in range(0, len(ordered), step)]
        return figures, runs, leads

    def row(self, kernel, shape, fn):
        flush_ids = self.flush_stream_ids() if self.cold else set()
        loop = self.cupti_loop(fn, flush_ids)
        per_call = len(loop[0])
        r = {"kernel": kernel, "shape": shape_label(shape), "per_call": per_call,
             "activities": [a[0] for a in loop[0]],
             "kernels_per_call": sum(1 for a in loop[0] if is_kernel(a)),
             "cupti": median([sum(a[2] for a in run) for run in loop]),
             "kern": median([sum(a[2] for a in run if is_kernel(a)) for run in loop])}
        if not self.cold:
            runs, gap = self.back_to_back(fn, per_call)
            r["b2b"], r["gap"] = median([sum(a[2] for a in run) for run in runs]), gap
        single = median(self.events(fn, 1, 5))
        r["batch"] = 1 if self.cold else hot_batch(single)
        r["ev-batch"] = median(self.events(fn, r["batch"], self.calls))
        r["ev-1"] = median(self.events(fn, 1, self.calls))
        figures, runs, leads = self.events_profiled(fn, per_call)
        r["ev-1+prof"] = median(figures)
        r["cupti@ev"] = median([sum(a[2] for a in run) for run in runs])
        r["lead"], r["inner"] = median(leads), median([idle_between(run) for run in runs])
        r["mhz"] = nvml_clock(self.torch)
        return r


def nvml_clock(torch):
    try:
        return float(torch.cuda.clock_rate())
    except Exception:  # pynvml missing
        return 0.0


def make_kernels(torch, shape, triton_module, triton_config=None):
    """(name, fn, triton config) for each kernel at shape, warmed up. The
    Triton kernel runs triton_config, else the one its autotuner picks."""
    import torch.nn.functional as F

    b, h, s, d, dtype, causal = shape
    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[dtype]
    q, k, v = (torch.randn(b, h, s, d, dtype=dt, device="cuda") for _ in range(3))
    scale = 1 / math.sqrt(d)
    out = [("sdpa", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale), None)]
    if triton_module is not None:
        o = torch.empty_like(q)
        config = triton_config
        if not config:
            triton_module.attention(q, k, v, o, causal)  # autotunes
            config = triton_module.chosen_config()
        out.append(("triton", lambda: triton_module.attention(q, k, v, o, causal, config=config), config))
    for _, fn, _ in out:
        for _ in range(10):
            fn()
    torch.cuda.synchronize()
    return out


def load_triton(path):
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location("triton_attention", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def ncu_child(plan_path):
    """Under ncu: the plan's calls, and only they, between profiler start and stop."""
    import torch

    plan = json.loads(pathlib.Path(plan_path).read_text())
    module = load_triton(plan["triton"]) if plan["triton"] else None
    for entry in plan["rows"]:
        shape = tuple(entry["shape"])
        triton = module if entry["kernel"] == "triton" else None
        fns = {name: fn for name, fn, _ in make_kernels(torch, shape, triton, entry.get("config"))}
        fn = fns[entry["kernel"]]
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for _ in range(entry["calls"]):
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()


def run_ncu(rows, shapes, calls, cold, triton_path):
    ncu = shutil.which("ncu") or ("/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else None)
    if ncu is None:
        return "ncu not found"
    plan = [{"kernel": r["kernel"], "shape": list(s), "calls": calls, "kernels_per_call": r["kernels_per_call"],
             "config": r.get("config")} for r, s in zip(rows, shapes)]
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = pathlib.Path(tmp, "plan.json")
        plan_path.write_text(json.dumps({"triton": str(triton_path) if triton_path else "", "rows": plan}))
        log = pathlib.Path(tmp, "ncu.csv")
        cmd = [ncu, "--profile-from-start", "off", "--clock-control", "none",
               "--cache-control", "all" if cold else "none", "--metrics", "gpu__time_duration.sum",
               "--csv", "--log-file", str(log), sys.executable, __file__, "--ncu-child", str(plan_path)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not log.exists():
            return f"ncu exited {done.returncode}: {done.stderr.strip()[-400:]}"
        figures, note = assign_ncu(parse_ncu_csv(log.read_text()), plan)
    for r, ns in zip(rows, figures):
        r["ncu"] = ns
    return note


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default="seed,llm", help="seed, llm or both, comma-separated")
    parser.add_argument("--kernels", default="sdpa,triton", help="sdpa, triton or both")
    parser.add_argument("--calls", type=int, default=20, help="calls or samples per figure")
    parser.add_argument("--cold", action="store_true", help="also measure with the L2 flushed before each call")
    parser.add_argument("--ncu", action="store_true", help="add Nsight Compute's figure (runs this script under ncu)")
    parser.add_argument("--triton", default=str(TRITON_KERNEL), help="path of triton_attention.py")
    parser.add_argument("--json", help="write the rows to this file as JSON")
    parser.add_argument("--ncu-child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.ncu_child:
        return ncu_child(args.ncu_child)

    import torch

    if not torch.cuda.is_available():
        sys.exit("timing_probe: needs a CUDA GPU (torch.cuda.is_available() is False)")
    kernels = args.kernels.split(",")
    triton_path = args.triton if "triton" in kernels else None
    module = load_triton(triton_path)
    shapes = [s for name in args.shapes.split(",") for s in {"seed": SEED_SHAPES, "llm": LLM_SHAPES}[name]]
    print(f"# {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"triton {getattr(module, 'triton', None) and module.triton.__version__}, {args.calls} per figure")
    report = {}
    for cold in ([False, True] if args.cold else [False]):
        probe, rows, row_shapes = Probe(torch, args.calls, cold), [], []
        for shape in shapes:
            for name, fn, config in make_kernels(torch, shape, module):
                if name not in kernels:
                    continue
                t0 = time.perf_counter()
                try:
                    row = probe.row(name, shape, fn)
                except ValueError as exc:  # activities that do not split into calls
                    print(f"# {name} {shape_label(shape)}: {exc}")
                    continue
                row["config"], row["seconds"] = config, round(time.perf_counter() - t0, 2)
                rows.append(row)
                row_shapes.append(shape)
            torch.cuda.empty_cache()
        note = run_ncu(rows, row_shapes, args.calls, cold, triton_path) if args.ncu else ""
        print(format_table(rows, cold))
        if note:
            print(f"# ncu: {note}")
        for r in rows:
            print(f"#   {r['kernel']} {r['shape']}: {' + '.join(r['activities'])}"
                  + (f" (config {r['config']})" if r["config"] else ""))
        report["cold" if cold else "hot"] = rows
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
