"""scripts/timing_probe.py without a GPU: its shapes are the suites', and
its splitting of profiler activities and of ncu's CSV into calls."""

import itertools
import os
import pathlib
import sys
import tomllib

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))

import flashcore_worker as core  # noqa: E402
import timing_probe as probe  # noqa: E402

SUITES = pathlib.Path(__file__).resolve().parents[2] / "suites"


def suite_shapes(name):
    """The (batch, heads, seq, head_dim, dtype, causal) cases of a suite's sweeps."""
    suite = tomllib.loads((SUITES / f"{name}.toml").read_text())
    shapes = []
    for sweep in suite["sweeps"]:
        keys = ("batch", "heads", "seq_q", "head_dim", "dtype", "causal")
        shapes += itertools.product(*(sweep[k] for k in keys))
    return sorted(shapes)


@pytest.mark.parametrize("name, shapes", [("seed", probe.SEED_SHAPES), ("llm", probe.LLM_SHAPES)])
def test_probe_shapes_are_the_suites(name, shapes):
    assert sorted(shapes) == suite_shapes(name)


def test_split_runs_drops_the_leading_sleep_of_each_sample():
    sample = lambda t: [("sleep", t, 400, 7), ("Memset (Device)", t + 500, 1, 7), ("attn", t + 510, 7, 7)]
    activities = sample(1000) + sample(0)
    runs = probe.split_runs(activities, 2, skip=1)
    assert [[a[0] for a in run] for run in runs] == [["Memset (Device)", "attn"]] * 2
    assert [probe.idle_between(run) for run in runs] == [9, 9]
    with pytest.raises(ValueError, match="do not split into runs of 2"):
        probe.split_runs(activities[:-1], 2)


def test_kernels_only_leave_memsets_and_copies_out():
    assert [probe.is_kernel(a) for a in [("Memset (Device)",), ("Memcpy DtoD (Device -> Device)",), ("attn",)]] == [
        False, False, True]


def test_hot_batch_is_the_workers_former_rule():
    for ns in (0, 1_000, 7_400, 30_000, 100_000, 500_000):
        assert probe.hot_batch(ns) == core.hot_batch(ns)


NCU_CSV = """==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"1","1","python3","h","attn_b","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","2,000"
"0","1","python3","h","attn_a","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","7.50"
"2","1","python3","h","attn_a","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","7.70"
"3","1","python3","h","tri","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.006"
"""


def test_ncu_rows_are_summed_per_call_in_launch_order():
    kernels = probe.parse_ncu_csv(NCU_CSV)
    assert kernels == [("attn_a", 7500.0), ("attn_b", 2000.0), ("attn_a", 7700.0), ("tri", 6000.0)]
    plan = [{"calls": 1, "kernels_per_call": 2}, {"calls": 2, "kernels_per_call": 0}, {"calls": 2, "kernels_per_call": 1}]
    # 1 call of 2 kernels, a row with no kernels, then 2 calls of 1 kernel.
    figures, note = probe.assign_ncu(kernels, plan)
    assert figures == [9500.0, None, (7700.0 + 6000.0) / 2] and note == ""
    figures, note = probe.assign_ncu(kernels[:3], plan)
    assert figures == [None] * 3 and note == "ncu profiled 3 kernels, the plan launches 4"


def test_table_shows_every_column_and_the_batch():
    row = {"kernel": "sdpa", "shape": "B1 H8 S512 D64 fp16", "batch": 14, "mhz": 1980.0,
           **{c: 1000.0 * (i + 1) for i, c in enumerate(probe.COLUMNS)}}
    row["ncu"] = None
    lines = probe.format_table([row], cold=False).splitlines()
    assert lines[0] == "# hot L2; µs per call"
    assert lines[1].split()[2:] == probe.COLUMNS + ["MHz"]
    assert lines[2].split() == ["sdpa", "B1", "H8", "S512", "D64", "fp16", "1.00", "2.00", "3.00", "4.00",
                                "5.00[14]", "6.00", "7.00", "8.00", "9.00", "10.00", "-", "1980"]
