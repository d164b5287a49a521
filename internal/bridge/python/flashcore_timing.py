"""Kernel, call and cross-check times (docs/measurement.md): wall-clock on
the CPU; on a GPU CUPTI's device durations (flashcore_cupti), with CUDA
events behind a sleep kernel as the fallback and the cross-check.

torch is imported where it is used (or passed in), so this module loads
without it.
"""

import contextlib
import time

import flashcore_cupti as cupti
from flashcore_protocol import diagnostic
from flashcore_sampling import collect_placed_samples, collect_samples, median_sorted
from flashcore_tensors import POISON_BYTE

# The sleep kernel that holds the stream must outlast the host's queueing of
# everything after it. It is at least MIN_SLEEP_NS and at least twice the
# slowest queueing time seen in a probe.
MIN_SLEEP_NS = 100_000
MAX_SLEEP_NS = 20_000_000
SAMPLE_ATTEMPTS = 3
# Hot-mode samples time a batch of back-to-back calls between one event pair
# and divide by the batch, so the event pair's own latency (about 2 µs on an
# H100) is spread over the batch: the batch is sized to last about
# HOT_BATCH_TARGET_NS, at most HOT_BATCH_MAX calls (docs/measurement.md).
HOT_BATCH_TARGET_NS = 100_000
HOT_BATCH_MAX = 32
# The probes that size the batch and the sleep (prepare_sampling): the first
# of each kind behind PROBE_SLEEP_NS, the rest behind PROBE_MARGIN times the
# slowest queueing seen, twice the sampling's own margin.
PROBE_SLEEP_NS = MAX_SLEEP_NS // 4
PROBE_MARGIN = 4
# The cross-check: CUPTI over this many calls where events time the kernel,
# events over this many samples where CUPTI does. Its figure is a median
# set beside the row's: ten samples give one whose 95% interval is their
# 2nd to 9th (twenty cost the default suite on an H100 about 0.3 s more).
CROSS_CHECK_CALLS = 10


class WallClockTimer:
    """CPU timing: no host/device split, both times are wall-clock."""

    method = "wall-clock"

    def __init__(self, flush_bytes):
        self.flush_bytes = flush_bytes
        self._flush_buffer = None

    def flush(self):
        import torch

        if self._flush_buffer is None:
            self._flush_buffer = torch.empty(self.flush_bytes, dtype=torch.uint8)
        self._flush_buffer.fill_(POISON_BYTE)

    def prepare_sampling(self, fn, cold):
        return {}

    def kernel_sample(self, fn, cold):
        if cold:
            self.flush()
        start = time.perf_counter_ns()
        fn()
        return time.perf_counter_ns() - start

    call_sample = kernel_sample

    def sampling_report(self):
        return 0.0, {}, []

    def device_state(self):
        return None


class CudaTimer:
    """GPU kernel time with host launch gaps excluded (docs/measurement.md).

    Per sample the stream gets: a sleep kernel long enough to cover the
    host's queueing of everything after it; the L2 flush in cold mode; the
    start event; the attention; the end event. The interval between the
    events then holds the attention alone, not Python's dispatch. In hot
    mode the attention is called `batch` times back to back between the
    events and the interval divided by the batch, so the events' own
    latency (about 2 µs on an H100) is spread over the batch; cold samples
    are single calls, each after its own flush."""

    method = "cuda-events+sleep"

    def __init__(self, torch, device):
        self.torch = torch
        props = torch.cuda.get_device_properties(device)
        self.flush_bytes = 2 * int(getattr(props, "L2_cache_size", 0) or (50 << 20))
        self._flush_buffer = None
        self.start, self.end, self._mark = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        self.cycles_per_ns = self._calibrate()
        self.sleep_ns = MIN_SLEEP_NS
        self.batch = 1
        self._short = self._retaken = self._samples = 0

    def _calibrate(self):
        """Cycles of torch.cuda._sleep per nanosecond, roughly (it sizes
        sleeps; the clock reported comes from sm_clock_mhz)."""
        cycles = 1_000_000
        rates = []
        for _ in range(5):
            self.start.record()
            self.torch.cuda._sleep(cycles)
            self.end.record()
            self.end.synchronize()
            rates.append(cycles / (self.start.elapsed_time(self.end) * 1e6))
        return median_sorted(sorted(rates[1:]))

    def cycles(self, ns):
        return int(ns * self.cycles_per_ns)

    def flush(self):
        if self._flush_buffer is None:
            self._flush_buffer = self.torch.empty(self.flush_bytes, dtype=self.torch.uint8, device="cuda")
        self._flush_buffer.fill_(POISON_BYTE)

    def prepare_sampling(self, fn, cold, host_ns_per_call=0):
        """Sizes the hot batch from a few single-call probes, then the sleep
        from the queueing times of a few probes of the chosen batch (twice
        the second slowest, sampling_queue).
        The first probe of each kind runs behind a long sleep (PROBE_SLEEP_NS,
        enough for any host's queueing), the others behind PROBE_MARGIN
        times the slowest queueing of their kind so far: eight long sleeps
        took 40 ms of every row's cross-check. Where the caller has seen
        what one call costs the host (host_ns_per_call, the CUPTI windows'
        figure, with the profiler's own cost in it), the first probes too
        sleep PROBE_MARGIN times that: a first probe that still outran its
        sleep is one of three singles, whose median sizes the batch, or a
        batch probe, whose queueing the host's own clock times whatever
        the sleep."""
        self.batch = 1
        self.sleep_ns = probe_sleep(host_ns_per_call) if host_ns_per_call > 0 else PROBE_SLEEP_NS
        singles, slowest = [], 0
        for _ in range(3):
            slowest = max(slowest, self._queue(fn, cold))
            self.end.synchronize()
            singles.append(self.start.elapsed_time(self.end) * 1e6)
            self.sleep_ns = probe_sleep(slowest)
        self.batch = 1 if cold else hot_batch(median_sorted(sorted(singles)))
        self.sleep_ns = probe_sleep(self.batch * host_ns_per_call) if host_ns_per_call > 0 else PROBE_SLEEP_NS
        queued = []
        for _ in range(5):
            queued.append(self._queue(fn, cold))
            self.sleep_ns = probe_sleep(max(queued))
        self.torch.cuda.synchronize()
        self.sleep_ns = min(max(MIN_SLEEP_NS, 2 * sampling_queue(queued)), MAX_SLEEP_NS)
        self.reset_sample_counts()
        return {"sleep_us": f"{self.sleep_ns / 1000:.0f}", "host_queue_us": f"{max(queued) / 1000:.1f}",
                "calls_per_sample": str(self.batch)}

    def reset_sample_counts(self):
        """Forgets the retaken and short samples counted so far."""
        self._short = self._retaken = self._samples = 0

    def _queue(self, fn, cold):
        """Queues one sample; returns how long the host took after the sleep."""
        self.torch.cuda._sleep(self.cycles(self.sleep_ns))
        queue_start = time.perf_counter_ns()
        if cold:
            self.flush()
        self.start.record()
        for _ in range(self.batch):
            fn()
        self.end.record()
        return time.perf_counter_ns() - queue_start

    def kernel_sample(self, fn, cold):
        """One kernel time. A sample whose queueing outlasted the sleep may
        hold a host gap (the device reached the start event before the
        work was queued): it is taken again, up to SAMPLE_ATTEMPTS times,
        and counted as short if it never fits."""
        for _ in range(SAMPLE_ATTEMPTS):
            queued = self._queue(fn, cold)
            self.end.synchronize()
            if queued < self.sleep_ns:
                break
            self._retaken += 1
        else:
            self._short += 1
        self._samples += 1
        return int(round(self.start.elapsed_time(self.end) * 1e6 / self.batch))

    def call_sample(self, fn, cold):
        if cold:
            self.flush()
            self.torch.cuda.synchronize()
        start = time.perf_counter_ns()
        fn()
        self.torch.cuda.synchronize()
        return time.perf_counter_ns() - start

    def sm_clock_mhz(self):
        """The SM clock now, from the slope of sleep cycles over event time:
        a short and a long sleep between events, queued behind a blocker so
        no host gap and no fixed latency enters the difference."""
        short, long = 100_000, 400_000  # ns
        estimates = []
        for _ in range(3):
            self.torch.cuda._sleep(self.cycles(MIN_SLEEP_NS))
            self._mark.record()
            self.torch.cuda._sleep(self.cycles(short))
            self.start.record()
            self.torch.cuda._sleep(self.cycles(long))
            self.end.record()
            self.end.synchronize()
            extra_ms = self.start.elapsed_time(self.end) - self._mark.elapsed_time(self.start)
            if extra_ms > 0:
                estimates.append((self.cycles(long) - self.cycles(short)) / (extra_ms * 1000))
        return median_sorted(sorted(estimates)) if estimates else 0.0

    def device_state(self):
        """sdk.DeviceState now: the SM clock (NVML where pynvml is installed,
        else the sleep-kernel estimate), and NVML's temperature and power
        where it can read them."""
        state = {"sm_clock_mhz": nvml_sm_clock_mhz(self.torch) or self.sm_clock_mhz()}
        for field, read, scale in (("temperature_c", "temperature", 1.0), ("power_w", "power_draw", 1e-3)):
            with contextlib.suppress(Exception):
                state[field] = float(getattr(self.torch.cuda, read)()) * scale
        return {k: v for k, v in state.items() if v and v > 0} or None

    def sampling_report(self):
        """The SM clock seen at the end of sampling, facts and diagnostics.
        The clock is NVML's (torch.cuda.clock_rate) where pynvml is
        installed, else the sleep-kernel estimate; the facts carry both."""
        measured = self.sm_clock_mhz()
        nvml = nvml_sm_clock_mhz(self.torch)
        facts = {"sleep_clock_mhz": f"{measured:.0f}",
                 "sm_clock_source": "NVML (torch.cuda.clock_rate)" if nvml else
                 "sleep kernel: clock64 cycles over CUDA event time"}
        if nvml:
            facts["nvml_sm_clock_mhz"] = f"{nvml:.0f}"
        diagnostics = []
        if self._retaken:
            facts["samples_retaken"] = f"{self._retaken} (host queueing outlasted the sleep)"
        if self._short:
            facts["sleep_short_samples"] = f"{self._short}/{self._samples}"
            if self._short * 20 > self._samples:
                diagnostics.append(diagnostic(
                    "warning", f"host queueing outlasted the {self.sleep_ns / 1000:.0f} µs sleep in "
                    f"{self._short} of {self._samples} samples",
                    "those samples may include host launch gaps"))
        return (nvml or measured), facts, diagnostics


def kernel_times(m, run, cold, timer, sampler, facts, move=None, phases=None):
    """The kernel-time samples of one Run, their method and the samples per
    placement block (None for one). With a CUPTI sampler (on a GPU) the
    samples are CUPTI's; where it cannot time the calls (CuptiUnavailable,
    before or during sampling) the Run starts over with the timer's own
    method (CUDA events behind a sleep) and the fact cupti_fallback says
    why. Either way the stopping rule runs whole in every block, so
    min_samples is honoured. move(placement) moves the case's buffers
    between two blocks (collect_placed_samples); phases, a PhaseClock, is
    marked with each block's warm-up, samples and move."""
    if sampler is not None:
        def cupti_block(bm):
            facts.update(sampler.prepare(bm.min_samples, bm.max_samples))
            block = collect_samples(bm, sampler.sample, warm_up=sampler.warm_up, phases=phases)
            sampler.finish_block()
            return block

        try:
            times, blocks = collect_placed_samples(m, cupti_block, move, phases)
            facts.update(sampler.report())
            timer.reset_sample_counts()
            return times, sampler.method, blocks
        except cupti.CuptiUnavailable as why:
            facts["cupti_fallback"] = str(why)

    def events_block(bm):
        facts.update(timer.prepare_sampling(run, cold))
        return collect_samples(bm, lambda: timer.kernel_sample(run, cold), phases=phases)

    times, blocks = collect_placed_samples(m, events_block, move, phases)
    return times, timer.method, blocks


def probe_sleep(slowest_queue_ns):
    """The sleep in front of a probe after one whose host queueing took
    slowest_queue_ns: PROBE_MARGIN times it, MIN_SLEEP_NS at least,
    PROBE_SLEEP_NS at most."""
    return min(max(MIN_SLEEP_NS, PROBE_MARGIN * slowest_queue_ns), PROBE_SLEEP_NS)


def sampling_queue(queued):
    """The host's queueing a sample's sleep is sized by (twice it), of the
    probes' queueing times: the second slowest. One stall of the host (a
    collection, a preempted thread) is not its pace: on an H100 one probe of
    9.3 ms among ones of about 1 ms made every sample of a flex-attention
    cross-check sleep 18.7 ms. A sample whose queueing still outlasts its
    sleep is taken again (SAMPLE_ATTEMPTS), and counted short if it never
    fits; with a single probe, that probe."""
    ordered = sorted(queued)
    return ordered[-2] if len(ordered) > 1 else ordered[-1]


def hot_batch(single_call_ns):
    """How many back-to-back calls one hot sample times: enough to last
    about HOT_BATCH_TARGET_NS, between 1 and HOT_BATCH_MAX."""
    if single_call_ns <= 0:
        return HOT_BATCH_MAX
    return max(1, min(HOT_BATCH_MAX, -(-HOT_BATCH_TARGET_NS // int(single_call_ns))))


def nvml_sm_clock_mhz(torch):
    """The current SM clock through NVML (torch.cuda.clock_rate), or 0."""
    try:
        return float(torch.cuda.clock_rate())
    except Exception:  # pynvml missing or NVML unavailable
        return 0.0


def cupti_call_times(torch, fn, calls=CROSS_CHECK_CALLS):
    """Times fn by CUPTI through torch.profiler: the summed device durations
    of the kernels (and memsets or copies) of each call. Returns the
    per-call times in ns, one call's device activities as (name, median ns
    over the calls), and a note when the calls could not be told apart (the
    mean per call is returned then) or CUPTI gave nothing."""
    try:
        activities = cupti.profile_window(torch, lambda: [fn() for _ in range(calls)])
        groups = cupti.group_calls(activities, calls)
    except cupti.AttributionError as why:
        if not activities:
            return [], [], str(why)
        total = sum(a.duration_ns for a in activities)
        return [total // calls], [], f"{why}: reported the mean only"
    except cupti.CuptiUnavailable as why:
        return [], [], str(why)
    return cupti.call_times(groups), cupti.activity_medians(groups), ""
