"""The events+sleep timer's probes (CudaTimer.prepare_sampling): the first
probe of each kind behind a long sleep, the rest behind a margin over the
host's queueing seen so far, against a torch that records what the timer
asks of it."""

import types

import flashcore_timing as timing


class RecordingEvent:
    def record(self):
        pass

    def synchronize(self):
        pass

    def elapsed_time(self, other):
        return 1.0  # ms: 1e6 sleep cycles a ms, one call a ms (a batch of one)


class RecordingTorch:
    """torch.cuda as far as CudaTimer uses it; _sleep records its cycles."""

    def __init__(self):
        self.sleeps = []
        self.cuda = types.SimpleNamespace(
            get_device_properties=lambda device: types.SimpleNamespace(L2_cache_size=50 << 20),
            Event=lambda enable_timing: RecordingEvent(),
            _sleep=self.sleeps.append,
            synchronize=lambda: None,
        )


def probe_sleeps_ns(monkeypatch, host_queue_ns, host_ns_per_call=0):
    """The sleeps prepare_sampling asks for when the host takes
    host_queue_ns to queue a call, by a clock of the test's own, and the
    caller saw host_ns_per_call a call (0: it saw none)."""
    clock = types.SimpleNamespace(now=0)
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter_ns=lambda: clock.now))
    torch = RecordingTorch()
    timer = timing.CudaTimer(torch, 0)
    calibration = len(torch.sleeps)

    def call():
        clock.now += host_queue_ns

    timer.prepare_sampling(call, cold=False, host_ns_per_call=host_ns_per_call)
    # cycles_per_ns is 1: 1e6 cycles took 1 ms
    return [c / timer.cycles_per_ns for c in torch.sleeps[calibration:]], timer


def test_a_fast_host_sleeps_long_once_a_kind(monkeypatch):
    sleeps, timer = probe_sleeps_ns(monkeypatch, 200_000)  # 200 µs of queueing a call
    assert len(sleeps) == 8  # three single calls, five batches
    first_single, first_batch = sleeps[0], sleeps[3]
    assert first_single == first_batch == timing.PROBE_SLEEP_NS
    rest = sleeps[1:3] + sleeps[4:]
    for ns in rest:
        # at least the margin over the 200 µs the host took, and shorter
        assert ns == timing.PROBE_MARGIN * 200_000
    assert sum(sleeps) < 0.5 * 8 * timing.PROBE_SLEEP_NS
    # the sampling's sleep is still twice the slowest batch's queueing
    assert timer.sleep_ns == 2 * 200_000


def test_a_slow_host_keeps_the_long_sleep(monkeypatch):
    sleeps, _ = probe_sleeps_ns(monkeypatch, 2_000_000)  # 2 ms a call: 4 × 2 ms is past the cap
    assert sleeps == [timing.PROBE_SLEEP_NS] * 8


def test_probe_sleep_is_clamped():
    assert timing.probe_sleep(0) == timing.MIN_SLEEP_NS
    assert timing.probe_sleep(50_000) == timing.PROBE_MARGIN * 50_000
    assert timing.probe_sleep(10**9) == timing.PROBE_SLEEP_NS


def test_a_known_host_time_shortens_the_first_probes(monkeypatch):
    # 30 µs of queueing a call; the CUPTI windows saw 50 µs a call
    sleeps, timer = probe_sleeps_ns(monkeypatch, 30_000, host_ns_per_call=50_000)
    first_single, first_batch = sleeps[0], sleeps[3]
    assert first_single == timing.PROBE_MARGIN * 50_000
    assert first_batch == timing.probe_sleep(timer.batch * 50_000)
    assert max(sleeps) < timing.PROBE_SLEEP_NS


def test_one_stalled_probe_does_not_size_every_sleep(monkeypatch):
    """The sampling's sleep is twice the second slowest batch probe's
    queueing: one stall of the host among the five is not its pace (a
    sample that outlasts its sleep is taken again)."""
    clock = types.SimpleNamespace(now=0)
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter_ns=lambda: clock.now))
    timer = timing.CudaTimer(RecordingTorch(), 0)
    # three single probes, then five batches of one call (elapsed_time
    # says a call takes 1 ms, so the batch is one call): the third stalls
    queues = iter([200_000] * 3 + [200_000, 300_000, 9_000_000, 250_000, 200_000])

    def call():
        clock.now += next(queues)

    timer.prepare_sampling(call, cold=False)
    assert timer.batch == 1
    assert timer.sleep_ns == 2 * 300_000


def test_sampling_queue_is_the_second_slowest():
    assert timing.sampling_queue([5]) == 5
    assert timing.sampling_queue([1, 9]) == 1
    assert timing.sampling_queue([3, 1, 9, 2, 4]) == 4
    assert timing.sampling_queue([7, 7, 7]) == 7
