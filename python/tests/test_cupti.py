"""CUPTI kernel time (flashcore_cupti) without a GPU: grouping device
activities into calls, the L2 flush excluded by its stream, the mapping of
profiled windows to the stopping rule's samples, and the fallback to events
behind a sleep. A fake device stands in for torch.cuda and torch.profiler:
it records the activities each call launches, as CUPTI would."""

import contextlib
import os
import types

import pytest

import flashcore_cupti as cupti
import flashcore_worker as core

A = cupti.Activity


def acts(*specs, stream=1, start=0, gap=100):
    """Activities back to back from start: specs are (name, duration ns)."""
    out, t = [], start
    for name, ns in specs:
        out.append(A(name, t, ns, stream))
        t += ns + gap
    return out


# ---------------------------------------------------------------- grouping


def test_hot_window_splits_into_equal_calls_in_start_order():
    window = acts(("memset", 700), ("attn", 7300), ("memset", 800), ("attn", 7400))
    groups = cupti.group_calls(list(reversed(window)), 2)
    assert cupti.call_times(groups) == [8000, 8200]
    assert cupti.activity_medians(groups) == [("memset", 750), ("attn", 7350)]


@pytest.mark.parametrize("window, calls, reason", [
    ([], 3, "no device activity"),
    (acts(("attn", 1), ("attn", 1), ("attn", 1)), 2, "3 device activities over 2 calls"),
    (acts(("memset", 1), ("attn", 1), ("attn", 1), ("memset", 1)), 2, "calls launched different device work"),
])
def test_hot_window_that_does_not_fit_is_an_attribution_error(window, calls, reason):
    with pytest.raises(cupti.AttributionError, match=reason):
        cupti.group_calls(window, calls)


def test_cold_window_excludes_the_flush_by_stream_not_by_name():
    # The flush's kernel has the same name as the call's: only its stream tells.
    window = acts(("fill", 30_000), ("fill", 5_000), ("attn", 7_000), stream=1)
    window[0] = A("fill", 0, 30_000, 9)
    window += [A("fill", 50_000, 20_000, 9), A("fill", 70_100, 10_000, 9),  # a flush of two activities
               A("fill", 90_000, 4_000, 1), A("attn", 95_000, 8_000, 1)]
    groups = cupti.group_calls(window, 2, flush_streams={9})
    assert cupti.call_times(groups) == [12_000, 12_000]
    assert [a.stream for g in groups for a in g] == [1, 1, 1, 1]


@pytest.mark.parametrize("window, calls, reason", [
    (acts(("attn", 5)) + acts(("fill", 9), stream=9, start=100), 1, "before the first L2 flush"),
    (acts(("fill", 9), stream=9) + acts(("attn", 5), start=100), 2, "1 L2 flushes .* over 2 calls"),
    ([A("fill", 0, 9, 9), A("attn", 20, 1, 1), A("fill", 50, 9, 9)], 2, r"2 L2 flushes \(1 with no call activity"),
])
def test_cold_window_that_does_not_fit_is_an_attribution_error(window, calls, reason):
    with pytest.raises(cupti.AttributionError, match=reason):
        cupti.group_calls(window, calls, flush_streams={9})


def test_device_activities_keep_device_work_only():
    def event(name, device, annotation=False):
        return types.SimpleNamespace(name=lambda: name, device_type=lambda: device, start_ns=lambda: 10,
                                     duration_ns=lambda: 5, device_resource_id=lambda: 7,
                                     is_user_annotation=lambda: annotation)

    events = [event("cudaLaunchKernel", "cpu"), event("attn", "cuda"), event("mine", "cuda", annotation=True)]
    assert cupti.device_activities(events, "cuda") == [A("attn", 10, 5, 7)]


# ---------------------------------------------------------------- windows


@pytest.mark.parametrize("previous, taken, min_samples, max_samples, host_ns, want", [
    (0, 0, 20, 2000, 40_000, 20),            # first window: min_samples
    (20, 20, 20, 2000, 40_000, 40),          # then doubling
    (160, 300, 20, 2000, 40_000, 256),       # capped at WINDOW_MAX_CALLS
    (0, 0, 10, 2000, 20_000_000, 5),         # 20 ms calls: about 100 ms of host time, never below CHECK_EVERY
    (0, 0, 1, 2000, 40_000, 6),              # the first never below FIRST_NOISE_CHECK
    (6, 6, 1, 2000, 40_000, 12),             # then doubling
    (40, 1990, 20, 2000, 40_000, 10),        # never past max_samples
    (0, 0, 0, 0, 0, 1),                      # zeros: one sample, as the stopping rule takes
])
def test_next_window_calls(previous, taken, min_samples, max_samples, host_ns, want):
    assert cupti.next_window_calls(previous, taken, min_samples, max_samples, host_ns) == want


def measurement(**kw):
    base = dict(warmup_runs=0, warmup_time_ns=0, min_samples=20, max_samples=2000, target_noise=0.0,
                time_cap_ns=0, l2="hot", call_samples=0)
    base.update(kw)
    return core.Measurement(**base)


@pytest.mark.parametrize("m, want_taken, want_windows", [
    (measurement(min_samples=20, max_samples=30), 30, 2),      # 20, then 10 (what max_samples leaves)
    (measurement(min_samples=7, max_samples=7), 7, 1),
    (measurement(min_samples=3, max_samples=100, target_noise=1.0), 6, 1),  # noise needs 6 samples: the first window holds them
])
def test_windows_feed_the_stopping_rule_unchanged(m, want_taken, want_windows):
    served = []

    def run_window(calls):
        served.append(calls)
        return [1000 + i for i in range(calls)]

    windows = cupti.WindowedSamples(run_window, m.min_samples, m.max_samples, host_ns_per_call=40_000)
    taken = core.collect_samples(m, windows.sample, warm_up=lambda: None)
    assert len(taken) == want_taken >= m.min_samples
    assert windows.windows == want_windows and windows.taken == want_taken
    assert sum(served) >= want_taken


def test_a_window_that_loses_calls_is_an_attribution_error():
    windows = cupti.WindowedSamples(lambda calls: [1] * (calls - 1), 5, 10, 1000)
    with pytest.raises(cupti.AttributionError, match="window of 6 calls gave 5 times"):
        windows.sample()


# ---------------------------------------------------------------- sampler


class FakeStream:
    def __init__(self, ident):
        self.ident = ident
        self.waited_on = []

    def wait_stream(self, other):
        self.waited_on.append(other.ident)


class FakeDevice:
    """torch.cuda and torch.profiler as the sampler uses them: every launch
    records its activities on the current stream, and a profiled window
    returns what was launched inside it."""

    def __init__(self, call_work, flush_work=(("fill", 30_000),)):
        self.call_work, self.flush_work = call_work, flush_work
        self.now, self.launched, self.profiled_windows = 0, [], 0
        self._streams = [FakeStream(1)]
        self.current = self._streams[0]
        self.cuda = types.SimpleNamespace(Stream=self._new_stream, current_stream=lambda: self.current,
                                          stream=self._using, synchronize=lambda: None)
        self.profiler = types.SimpleNamespace(record_function=self._range)
        self.host_events, self.host_now, self.corr = [], 0, 100

    @contextlib.contextmanager
    def _range(self, name):
        self.host_now += 10
        start = self.host_now
        yield
        self.host_now += 10
        self.host_events.append(cupti.ProfiledEvent(name, False, True, start, self.host_now, 1, 0))

    def _new_stream(self):
        self._streams.append(FakeStream(len(self._streams) + 1))
        return self._streams[-1]

    @contextlib.contextmanager
    def _using(self, stream):
        previous, self.current = self.current, stream
        yield
        self.current = previous

    def launch(self, work):
        for name, ns in work:
            self.corr += 1
            self.host_now += 1
            self.host_events.append(cupti.ProfiledEvent("cudaLaunchKernel", False, False, self.host_now,
                                                        self.host_now + 1, self.corr, 0))
            self.host_events.append(cupti.ProfiledEvent(name, True, False, self.now, self.now + ns, self.corr, 0))
            self.launched.append(A(name, self.now, ns, self.current.ident))
            self.now += ns + 1_000

    def call(self):
        self.launch(self.call_work)

    def flush(self):
        self.launch(self.flush_work)

    def profile(self, _torch, body, host=False):
        self.profiled_windows += 1
        self.launched, self.host_events = [], []
        body()
        return (self.launched, self.host_events) if host else self.launched


def test_sampler_hot_sums_each_calls_activities():
    gpu = FakeDevice([("memset", 800), ("attn", 7_300)])
    sampler = cupti.CuptiSampler(gpu, gpu.call, False, gpu.flush, profile=gpu.profile)
    sampler.prepare(min_samples=10, max_samples=100)
    times = core.collect_samples(measurement(min_samples=10, max_samples=100), sampler.sample,
                                 warm_up=sampler.warm_up)
    assert times == [8_100] * 100  # target_noise 0 never settles: max_samples
    facts = sampler.report()
    assert facts["kernels"] == "memset (0.80 µs); attn (7.30 µs)"
    assert facts["cupti_windows"].endswith("100 used")
    assert gpu.profiled_windows == 1 + sampler._samples.windows  # the probe window, then the sampling windows


def test_sampler_cold_flushes_on_its_own_stream_and_leaves_it_out():
    # Same name for the flush and the call's kernel: only identity can tell them apart.
    gpu = FakeDevice([("elementwise", 5_000)], flush_work=[("elementwise", 40_000)])
    sampler = cupti.CuptiSampler(gpu, gpu.call, True, gpu.flush, profile=gpu.profile)
    sampler.prepare(min_samples=5, max_samples=5)
    times = core.collect_samples(measurement(min_samples=5, max_samples=5), sampler.sample, warm_up=sampler.warm_up)
    assert times == [5_000] * 5
    flush_stream = sampler._flush_stream
    assert flush_stream.ident != 1 and flush_stream.waited_on[-1] == 1  # the flush waits for the previous call
    assert sampler.report()["l2_flush"].startswith("on its own stream")


@pytest.mark.parametrize("cold", [False, True])
def test_sampler_reference_times_the_sampled_calls_by_correlation(cold):
    gpu = FakeDevice([("memset", 800), ("attn", 7_300)])
    sampler = cupti.CuptiSampler(gpu, gpu.call, cold, gpu.flush, profile=gpu.profile, reference=True)
    sampler.prepare(min_samples=10, max_samples=12)
    times = core.collect_samples(measurement(min_samples=10, max_samples=12), sampler.sample,
                                 warm_up=sampler.warm_up)
    facts = sampler.report()
    assert [int(t) for t in facts["reference_ns"].split()] == times == [8_100] * 12
    assert facts["reference_kernels"] == "memset (0.80 µs); attn (7.30 µs)"
    assert "correlation" in facts["reference_method"]


def test_sampler_reference_that_cannot_attribute_says_why():
    gpu = FakeDevice([("attn", 7_300)])
    real_profile = gpu.profile

    def orphaned(torch, body, host=False):
        if not host:
            return real_profile(torch, body)
        activities, events = real_profile(torch, body, host=True)
        return activities, [e for e in events if e.name != "cudaLaunchKernel"]

    sampler = cupti.CuptiSampler(gpu, gpu.call, False, gpu.flush, profile=orphaned, reference=True)
    sampler.prepare(min_samples=5, max_samples=5)
    times = core.collect_samples(measurement(min_samples=5, max_samples=5), sampler.sample, warm_up=sampler.warm_up)
    assert times == [7_300] * 5  # the figure itself stands
    facts = sampler.report()
    assert "reference_ns" not in facts
    assert "has no launching host event" in facts["reference_error"]


def test_sampler_with_no_flush_activity_is_unavailable():
    gpu = FakeDevice([("attn", 5_000)], flush_work=[])
    sampler = cupti.CuptiSampler(gpu, gpu.call, True, gpu.flush, profile=gpu.profile)
    with pytest.raises(cupti.CuptiUnavailable, match="no device activity for the L2 flush"):
        sampler.prepare(5, 5)


# ---------------------------------------------------------------- method selection


class FakeEventsTimer:
    method = "cuda-events+sleep"

    def __init__(self):
        self.samples = 0

    def prepare_sampling(self, fn, cold):
        return {"calls_per_sample": "3"}

    def kernel_sample(self, fn, cold):
        self.samples += 1
        return 9_500

    def reset_sample_counts(self):
        pass


class BrokenSampler:
    """A CUPTI sampler that fails in prepare, or after `works` samples."""

    method = "cupti"

    def __init__(self, works=None):
        self.works = works

    def prepare(self, min_samples, max_samples):
        if self.works is None:
            raise cupti.CuptiUnavailable("torch.profiler failed: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED")
        return {}

    def warm_up(self):
        pass

    def sample(self):
        if self.works == 0:
            raise cupti.AttributionError("7 device activities over 3 calls")
        self.works -= 1
        return 8_000

    def finish_block(self):
        pass

    def report(self):
        return {"kernel_method": "CUPTI"}


@pytest.mark.parametrize("sampler, want_method, want_fallback", [
    (None, "cuda-events+sleep", None),                                        # the CPU path has no sampler
    (BrokenSampler(works=10 ** 6), "cupti", None),
    (BrokenSampler(), "cuda-events+sleep", "torch.profiler failed: RuntimeError: CUPTI_ERROR_NOT_INITIALIZED"),
    (BrokenSampler(works=12), "cuda-events+sleep", "7 device activities over 3 calls"),  # fails mid-sampling
])
def test_kernel_times_falls_back_to_events_and_says_why(sampler, want_method, want_fallback):
    m = measurement(min_samples=20, max_samples=20)
    timer, facts = FakeEventsTimer(), {}
    times, method, blocks = core.kernel_times(m, lambda: None, False, timer, sampler, facts)
    assert method == want_method
    assert blocks is None  # one placement
    assert len(times) == 20  # min_samples honoured whichever method produced them
    assert facts.get("cupti_fallback") == want_fallback
    assert set(times) == ({8_000} if method == "cupti" else {9_500})
    assert ("calls_per_sample" in facts) == (method != "cupti")


def test_cupti_cross_check_reports_the_mean_when_calls_cannot_be_told_apart(monkeypatch):
    monkeypatch.setattr(cupti, "profile_window", lambda torch, body: acts(("a", 1_000), ("b", 2_000), ("c", 3_000)))
    times, activities, note = core.cupti_call_times(None, lambda: None, calls=2)
    assert times == [3_000] and activities == []
    assert note == "3 device activities over 2 calls: reported the mean only"


def test_cupti_cross_check_without_device_activity_is_empty(monkeypatch):
    monkeypatch.setattr(cupti, "profile_window", lambda torch, body: [])
    assert core.cupti_call_times(None, lambda: None, calls=2) == ([], [], "the profiler recorded no device activity")


def test_profile_window_without_cuda_activity_is_unavailable():
    import torch
    from torch.profiler import ProfilerActivity

    if ProfilerActivity.CUDA in torch.profiler.supported_activities():
        pytest.skip("this torch offers CUDA activity")
    with pytest.raises(cupti.CuptiUnavailable, match="no CUDA activity"):
        cupti.profile_window(torch, lambda: None)


# ---------------------------------------------------------------- reference


def _host(name, start, end, corr, annotation=False):
    return cupti.ProfiledEvent(name, False, annotation, start, end, corr, 0)


def _runtime(name, start, corr, linked):
    return cupti.ProfiledEvent(name, False, False, start, start + 1, corr, linked)


def _device(name, start, dur, corr, linked):
    return cupti.ProfiledEvent(name, True, False, start, start + dur, corr, linked)


def test_reference_attributes_device_work_to_the_range_that_launched_it():
    # Two calls; call 1's kernel runs on the device before call 0's memset
    # finishes its queue: device order does not decide, the launching op does.
    events = [
        _host("call 0", 100, 200, 1, annotation=True),
        _host("aten::sdpa", 110, 190, 2),
        _runtime("cudaMemsetAsync", 120, 900, 2),
        _runtime("cudaLaunchKernel", 130, 901, 2),
        _host("call 1", 300, 400, 3, annotation=True),
        _runtime("cuLaunchKernelEx", 310, 902, 0),  # a Triton launch: a driver call linked to no op
        _host("aten::empty", 50, 60, 902),  # a host op whose id happens to equal that correlation
        _host("aten::fill_", 250, 260, 4),  # the L2 flush, between the calls
        _runtime("cudaLaunchKernel", 255, 903, 4),
        _device("Memset (Device)", 1000, 700, 900, 2),
        _device("fill_kernel", 1800, 5000, 903, 4),
        _device("attention_kernel", 1700, 7000, 901, 2),
        _device("attn_fwd", 9000, 6000, 902, 0),
        cupti.ProfiledEvent("gpu_user_annotation", True, True, 1000, 8700, 1, 1),
    ]
    groups = cupti.attribute_by_correlation(events, ["call 0", "call 1"])
    assert [[a.name for a in g] for g in groups] == [["Memset (Device)", "attention_kernel"], ["attn_fwd"]]
    assert [sum(a.end_ns - a.start_ns for a in g) for g in groups] == [7700, 6000]


@pytest.mark.parametrize("events, reason", [
    ([_host("call 0", 0, 10, 1, annotation=True)], "no host range for 1 of 2 calls"),
    ([_host("call 0", 0, 10, 1, annotation=True), _host("call 1", 20, 30, 2, annotation=True),
      _device("k", 50, 5, 900, 77)], "has no launching host event"),
])
def test_reference_that_cannot_attribute_is_an_error(events, reason):
    with pytest.raises(cupti.AttributionError, match=reason):
        cupti.attribute_by_correlation(events, ["call 0", "call 1"])


@pytest.mark.parametrize("sampler, want_method", [
    (None, "cuda-events+sleep"),
    (BrokenSampler(works=10 ** 6), "cupti"),
    (BrokenSampler(works=12), "cuda-events+sleep"),  # CUPTI fails in the second block: all over, by events
])
def test_kernel_times_moves_the_buffers_between_placements(sampler, want_method):
    m = measurement(min_samples=20, max_samples=20, placements=4)
    moves = []
    times, method, blocks = core.kernel_times(m, lambda: None, False, FakeEventsTimer(), sampler, {}, moves.append)
    assert method == want_method
    assert blocks == [5, 5, 5, 5] and len(times) == 20
    assert moves[-3:] == [1, 2, 3]


def test_sampler_counts_every_block_and_its_reference():
    gpu = FakeDevice([("memset", 800), ("attn", 7_300)])
    sampler = cupti.CuptiSampler(gpu, gpu.call, False, gpu.flush, profile=gpu.profile, reference=True)
    m = measurement(min_samples=10, max_samples=10, placements=2)
    times, blocks = core.collect_placed_samples(m, lambda bm: (
        sampler.prepare(bm.min_samples, bm.max_samples),
        core.collect_samples(bm, sampler.sample, warm_up=sampler.warm_up),
        sampler.finish_block())[1], lambda placement: None)
    assert blocks == [5, 5]
    facts = sampler.report()
    assert facts["cupti_windows"].endswith("10 used")
    windows = int(facts["cupti_windows"].split()[0])
    assert gpu.profiled_windows == 1 + windows  # one probe, in the first block only
    assert [int(t) for t in facts["reference_ns"].split()] == times == [8_100] * 10


def test_profiler_leaves_torch_compile_unimported():
    """A window's profiler must not import torch.compile's stack: the
    wrapper torch.profiler.profile does, through hasattr(torch,
    "_inductor"), at a second of every worker's start. A fresh
    interpreter, since this one may have imported it already."""
    import subprocess
    import sys

    script = (
        "import sys, torch, flashcore_cupti as c\n"
        "with c.kineto_profiler(torch, cpu=True, cuda=False) as p:\n"
        "    torch.ones(4).add_(1)\n"
        "assert any(e.name() == 'aten::add_' for e in p.kineto_results.events()), 'the profiler saw no add_'\n"
        "print('torch._inductor' in sys.modules, 'torch._dynamo' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(cupti.__file__))
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr
