"""The worker's copy of sdk.CollectSamples against the fixture the Go tests
check sdk itself with (internal/bridge/testdata/stopping_rule.json)."""

import json
import math
import pathlib

import pytest

import flashcore_worker as core

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "internal" / "bridge" / "testdata" / "stopping_rule.json"
CASES = json.loads(FIXTURE.read_text())


def as_json_noise(x):
    return -1 if math.isinf(x) else x


@pytest.mark.parametrize("case", CASES["collect"], ids=lambda c: c["name"])
def test_collect_samples_takes_what_go_takes(case):
    samples = iter(case["samples_ns"])
    phases = core.PhaseClock()
    taken = core.collect_samples(core.Measurement.from_json(case["measurement"]), lambda: next(samples), phases=phases)
    assert len(taken) == case["want_taken"]
    assert as_json_noise(core.relative_noise(taken)) == pytest.approx(case["want_noise"], rel=1e-12, abs=0)
    # Why it stopped, as sdk's phases say it (sdk/phases.go).
    assert [name for name, _ in phases.phases] == ["warmup", "sample:" + case["want_stop"]]


@pytest.mark.parametrize("case", CASES["noise"], ids=lambda c: f"n={len(c['samples_ns'])}")
def test_relative_noise_equals_go(case):
    assert as_json_noise(core.relative_noise(case["samples_ns"])) == pytest.approx(case["want"], rel=1e-12, abs=0)


class FakeClock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def test_warm_up_lasts_both_runs_and_time():
    clock, runs = FakeClock(), []

    def sample():
        clock.now += 20_000_000  # 20 ms per run
        runs.append(1)
        return 1000

    m = core.Measurement(warmup_runs=1, warmup_time_ns=50_000_000, min_samples=1, max_samples=1,
                         target_noise=0, time_cap_ns=0)
    core.collect_samples(m, sample, clock=clock)
    assert len(runs) == 3 + 1  # warm-up until 60 ms, then one sample


def test_time_cap_stops_sampling():
    clock = FakeClock()

    def sample():
        clock.now += 1_000_000
        return 1000 + clock.now % 7  # noisy enough never to settle

    m = core.Measurement(warmup_runs=0, warmup_time_ns=0, min_samples=5, max_samples=10_000,
                         target_noise=0, time_cap_ns=30_000_000)
    assert len(core.collect_samples(m, sample, clock=clock)) == 30


def test_median_sorted():
    assert math.isnan(core.median_sorted([]))
    assert core.median_sorted([1, 2, 9]) == 2
    assert core.median_sorted([1, 2, 4, 9]) == 3


def test_hot_batch_spreads_event_latency_over_about_100us():
    import flashcore_worker as fw
    assert fw.hot_batch(7_400) == 14      # a small kernel: 14 calls per sample
    assert fw.hot_batch(30_000) == 4
    assert fw.hot_batch(100_000) == 1     # large kernels are timed one call at a time
    assert fw.hot_batch(500_000) == 1
    assert fw.hot_batch(1_000) == 32      # capped
    assert fw.hot_batch(0) == 32


def test_device_peaks_match_the_go_table():
    import flashcore_worker as fw
    h100 = fw.device_peaks(9, 0, 132, 1980, 2619, 5120)
    assert round(h100["peak_tflops"]) == 1071    # same formula as cudakit/gpu
    assert round(h100["peak_gbps"]) == 3352
    assert fw.device_peaks(7, 5, 40, 1590, 5001, 256)["peak_tflops"] == 0


@pytest.mark.parametrize("given, want", [
    ("GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111", "GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111"),
    ("8a7b6c5d-aaaa-bbbb-cccc-111111111111", "GPU-8a7b6c5d-aaaa-bbbb-cccc-111111111111"),  # torch's spelling
    ("MIG-0f1e2d3c-dddd-eeee-ffff-222222222222", "MIG-0f1e2d3c-dddd-eeee-ffff-222222222222"),
    (None, ""),
])
def test_device_uuid_is_spelt_as_nvidia_smi_does(given, want):
    import flashcore_device

    class Props:
        uuid = given
    assert flashcore_device.device_uuid(Props()) == want


def test_time_cap_is_the_reported_stop():
    clock = FakeClock()

    def sample():
        clock.now += 1_000_000
        return 1_000_000 + clock.now % 3

    m = core.Measurement(warmup_runs=0, warmup_time_ns=0, min_samples=3, max_samples=1000, target_noise=1e-9,
                         time_cap_ns=10_000_000)
    _, stop = core.take_samples(m, sample, clock)
    assert stop == core.STOP_TIME_CAP


def test_phase_clock_encodes_as_sdk_does():
    clock = FakeClock()
    phases = core.PhaseClock(clock)
    clock.now = 51_000_000
    phases.mark("warmup")
    clock.now += 7
    assert phases.encode() == "warmup=51000000 other=7"


def test_wall_clock_call_samples_are_the_last_kernel_samples():
    more = iter([99, 98])
    assert core.wall_clock_call_samples([1, 2, 3, 4], 2, lambda: next(more)) == [3, 4]
    assert core.wall_clock_call_samples([1, 2], 4, lambda: next(more)) == [1, 2, 99, 98]
    assert core.wall_clock_call_samples([1, 2], 0, lambda: 1 / 0) == []
