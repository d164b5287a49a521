#!/usr/bin/env python3
"""Compare flashcore's kernel times with Nsight Compute's, kernel by kernel.

Usage:
    ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum \
        --target-processes all -k regex:KERNEL --csv --log-file ncu.csv \
        flashcore run --suite S --backends B --out profiled.json
    flashcore run --suite S --backends B --out timed.json      # unprofiled
    ncu_crosscheck.py --ncu ncu.csv --results timed.json --kernel-regex KERNEL \
        --backend B [--label LABEL] --case CASE --mode hot

The profiled run only supplies ncu's durations; flashcore's own figure comes
from an unprofiled run, because ncu serialises and replays kernels. Agreement
means |flashcore - ncu| <= 5% of ncu, or <= 1 us (ncu adds about 1 us of
overhead on tiny kernels). Exit status 0 when they agree, 1 when not.
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import re
import statistics
import sys

TOLERANCE_REL = 0.05
TOLERANCE_ABS_NS = 1000.0
_UNIT_NS = {"ns": 1.0, "nsecond": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}


def parse_ncu_csv(text: str, kernel_regex: str) -> list[float]:
    """Durations in ns of the kernels whose name matches kernel_regex.

    ncu's --csv output may be preceded by its own log lines (==PROF==), so
    reading starts at the header row that names "Kernel Name".
    """
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if '"Kernel Name"' in line), None)
    if start is None:
        return []
    pattern = re.compile(kernel_regex)
    durations = []
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        if not pattern.search(row.get("Kernel Name", "")):
            continue
        value = float(row["Metric Value"].replace(",", ""))
        durations.append(value * _UNIT_NS[row.get("Metric Unit", "ns").strip()])
    return durations


def flashcore_median_ns(results: dict, backend: str, label: str | None, case: str, mode: str) -> float:
    """The median kernel time flashcore recorded for one row and L2 mode."""
    for row in results["results"]:
        if row["backend"] != backend or row["case_id"] != case:
            continue
        if label and row["label"] != label:
            continue
        for timing in row.get("timings") or []:
            if timing["l2"] == mode:
                return float(timing["kernel"]["median_ns"])
    raise LookupError(f"no {mode} timing for backend {backend} label {label} case {case}")


def agree(flashcore_ns: float, ncu_ns: float) -> bool:
    diff = abs(flashcore_ns - ncu_ns)
    return diff <= TOLERANCE_REL * ncu_ns or diff <= TOLERANCE_ABS_NS


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ncu", required=True, help="ncu --csv log file")
    p.add_argument("--results", required=True, help="flashcore results JSON of an unprofiled run")
    p.add_argument("--kernel-regex", required=True)
    p.add_argument("--backend", required=True)
    p.add_argument("--label")
    p.add_argument("--case", required=True)
    p.add_argument("--mode", default="hot", choices=["hot", "cold"])
    a = p.parse_args(argv)
    with open(a.ncu, encoding="utf-8", errors="replace") as f:
        durations = parse_ncu_csv(f.read(), a.kernel_regex)
    if not durations:
        print(f"{a.backend} {a.case}: ncu recorded no kernel matching {a.kernel_regex!r}")
        return 1
    with open(a.results, encoding="utf-8") as f:
        ours = flashcore_median_ns(json.load(f), a.backend, a.label, a.case, a.mode)
    theirs = statistics.median(durations)
    ok = agree(ours, theirs)
    print(f"{a.label or a.backend:28s} {a.case:32s} {a.mode:4s} flashcore {ours/1e3:9.2f} us  "
          f"ncu {theirs/1e3:9.2f} us (n={len(durations)})  diff {100*(ours-theirs)/theirs:+6.1f}%  "
          f"{'AGREE' if ok else 'DISAGREE'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
