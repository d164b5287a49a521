"""The sampling half of the measurement contract (docs/measurement.md), as
sdk/sampling.go has it: warm-up, the stopping rule, the noise of a median,
and samples taken in placements.

Each function names its Go twin; both languages' tests read one fixture
(internal/bridge/testdata/stopping_rule.json) and must take the same
samples. Standard library only.
"""

import dataclasses
import math
import time

# The stopping rule re-evaluates the noise every CHECK_EVERY samples, as
# sdk/sampling.go's checkEvery does.
CHECK_EVERY = 5
# ...and first at FIRST_NOISE_CHECK samples (sdk.FirstNoiseCheck), the
# fewest relative_noise gives an interval for.
FIRST_NOISE_CHECK = 6


@dataclasses.dataclass(frozen=True)
class Measurement:
    """sdk.Measurement as it arrives: durations in nanoseconds."""

    warmup_runs: int = 10
    warmup_time_ns: int = 50_000_000
    min_samples: int = 20
    max_samples: int = 2000
    target_noise: float = 0.005
    time_cap_ns: int = 2_000_000_000
    l2: str = "hot"
    call_samples: int = 20
    placements: int = 1
    # The host's clock batch asks for the timed calls alone: no cross-check
    # calls after them (sdk.Measurement.NoCrossCheck).
    no_cross_check: bool = False

    @classmethod
    def from_json(cls, m):
        return cls(
            warmup_runs=int(m.get("warmup_runs", 0)),
            warmup_time_ns=int(m.get("warmup_time", 0)),
            min_samples=int(m.get("min_samples", 0)),
            max_samples=int(m.get("max_samples", 0)),
            target_noise=float(m.get("target_noise", 0)),
            time_cap_ns=int(m.get("time_cap", 0)),
            l2=m.get("l2") or "hot",
            call_samples=int(m.get("call_samples", 0)),
            placements=int(m.get("placements", 0) or 1),
            no_cross_check=bool(m.get("no_cross_check", False)),
        )


def median_sorted(values):
    """The median of an ascending list (sdk.MedianSorted)."""
    n = len(values)
    if n == 0:
        return math.nan
    if n % 2 == 1:
        return values[n // 2]
    return (values[n // 2 - 1] + values[n // 2]) / 2


def noise_stops(samples, target):
    """sdk.NoiseStops: whether the rule, past min_samples, stops here by
    the noise target (it evaluates the noise at FIRST_NOISE_CHECK samples
    and at every multiple of CHECK_EVERY)."""
    n = len(samples)
    return (n == FIRST_NOISE_CHECK or n % CHECK_EVERY == 0) and relative_noise(samples) < target


def relative_noise(samples):
    """sdk.RelativeNoise: the half-width of the distribution-free 95%
    confidence interval of the median (order statistics at ranks
    n/2 ± 0.98·√n), over the median. +inf below 6 samples."""
    n = len(samples)
    if n < FIRST_NOISE_CHECK:
        return math.inf
    ordered = sorted(float(s) for s in samples)
    half = 0.98 * math.sqrt(n)
    lo = max(math.floor(n / 2 - half), 0)
    hi = min(math.ceil(n / 2 + half), n - 1)
    median = median_sorted(ordered)
    if median <= 0:
        return math.inf
    return (ordered[hi] - ordered[lo]) / 2 / median


# The phases of a Run (sdk/phases.go): the report travels in the Run's
# facts under PHASES_FACT as "name=ns" pairs in order.
PHASES_FACT = "phases"
PHASE_WARMUP = "warmup"
PHASE_SAMPLE = "sample"
PHASE_MOVE = "move"
PHASE_CALLS = "calls"
PHASE_CROSS_CHECK = "cross_check"
PHASE_OUTPUT = "output"
PHASE_OTHER = "other"

# Why a block's sampling stopped (sdk.StopNoise, StopMax, StopTimeCap).
STOP_NOISE = "noise"
STOP_MAX = "max"
STOP_TIME_CAP = "time_cap"


class PhaseClock:
    """sdk.PhaseClock: each mark(name) closes the phase that began at the
    previous mark (or at the clock's start)."""

    def __init__(self, clock=time.perf_counter_ns):
        self._clock = clock
        self._last = clock()
        self.phases = []

    def mark(self, name):
        now = self._clock()
        self.phases.append((name, now - self._last))
        self._last = now

    def encode(self):
        """sdk.EncodePhases of the marked phases and, when it is not
        nothing, the time since the last mark as PHASE_OTHER."""
        phases = list(self.phases)
        rest = self._clock() - self._last
        if rest > 0:
            phases.append((PHASE_OTHER, rest))
        return " ".join(f"{name}={int(ns)}" for name, ns in phases)


def _mark(phases, name):
    if phases is not None:
        phases.mark(name)


def collect_samples(m, sample, clock=time.perf_counter_ns, warm_up=None, phases=None):
    """sdk.CollectSamples, step for step: warm up until both warmup_runs
    and warmup_time are reached, then sample until min_samples are taken and
    the noise (checked every CHECK_EVERY samples) is below target_noise, or
    max_samples are taken, or time_cap has passed since the first sample.
    sample() returns nanoseconds. A warm-up run calls warm_up() where given
    (an untimed call), else sample(). phases, a PhaseClock, is marked with
    the warm-up and with the samples and why they stopped."""
    _warm_up(m, warm_up or sample, clock)
    _mark(phases, PHASE_WARMUP)
    samples, stop = take_samples(m, sample, clock)
    _mark(phases, f"{PHASE_SAMPLE}:{stop}")
    return samples


def take_samples(m, sample, clock=time.perf_counter_ns):
    """Step 2 of collect_samples (sdk's takeSamples): the timed samples,
    and why they stopped (STOP_NOISE, STOP_MAX or STOP_TIME_CAP)."""
    min_samples = max(m.min_samples, 1)
    max_samples = max(m.max_samples, min_samples)
    samples = []
    start = clock()
    while len(samples) < max_samples:
        samples.append(sample())
        if len(samples) < min_samples:
            continue
        if m.time_cap_ns > 0 and clock() - start >= m.time_cap_ns:
            return samples, STOP_TIME_CAP
        if noise_stops(samples, m.target_noise):
            return samples, STOP_NOISE
    return samples, STOP_MAX


def wall_clock_call_samples(kernel, n, sample):
    """sdk.WallClockCallSamples: on a CPU a call sample and a kernel sample
    are the same measure, so the last n kernel samples are the call
    samples; sample() takes more only when there are fewer than n."""
    calls = list(kernel[max(len(kernel) - n, 0):]) if n > 0 else []
    while len(calls) < n:
        calls.append(sample())
    return calls


class StayPut(Exception):
    """Raised by a move when the buffers cannot move (no room on the
    device for a second copy): sampling goes on where they are
    (sdk.ErrStayPut)."""


def placements(m):
    """sdk.Placements: how many blocks m's samples are taken in."""
    return max(min(m.placements, max(m.min_samples, 1)), 1)


def block_measurement(m, i):
    """sdk.BlockMeasurement: block i's share of m (counting from 0)."""
    n = placements(m)
    if n <= 1:
        return m

    def share(total):
        return total // n + (1 if i < total % n else 0)

    lo = max(share(max(m.min_samples, 1)), 1)
    b = dataclasses.replace(m, placements=1, min_samples=lo, time_cap_ns=m.time_cap_ns // n)
    if m.max_samples > 0:
        b = dataclasses.replace(b, max_samples=max(share(m.max_samples), lo))
    if i > 0:
        # After a move: a share of the runs and no time (sdk.BlockMeasurement).
        b = dataclasses.replace(b, warmup_runs=max(-(-m.warmup_runs // n), 1), warmup_time_ns=0)
    return b


def collect_placed_samples(m, collect_block, move, phases=None):
    """sdk.CollectPlacedSamples: the samples of placements(m) blocks, with
    move(placement) between two blocks; collect_block(block_measurement)
    takes one block's samples. Returns the samples and the samples per
    block (None for one placement). A move that raises StayPut leaves the
    buffers where they are, and its block's samples count to the block
    before. phases, a PhaseClock, is marked with each move."""
    n = placements(m)
    if n <= 1 or move is None:
        return collect_block(m), None
    samples, blocks = [], []
    for i in range(n):
        stay = False
        if i > 0:
            try:
                move(i)
            except StayPut:
                stay = True
            _mark(phases, PHASE_MOVE)
        block = collect_block(block_measurement(m, i))
        samples.extend(block)
        if stay:
            blocks[-1] += len(block)
        else:
            blocks.append(len(block))
    return samples, blocks


def spacer_bytes(placement):
    """The spacer allocated in front of placement's buffers: 2 to 64 MiB in
    steps of 2 MiB, as cudakit's spacerBytes."""
    return (1 + (placement * 13) % 32) * 2 << 20


def _warm_up(m, sample, clock):
    start = clock()
    runs = 0
    while runs < m.warmup_runs or clock() - start < m.warmup_time_ns:
        sample()
        runs += 1
