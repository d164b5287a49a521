"""Kernel time from CUPTI, through torch.profiler: the Python bridges'
primary kernel-time method on a CUDA GPU (docs/measurement.md).

Where to start: ``CuptiSampler`` is what the worker uses. Its pipeline:

1. ``prepare``: check that the profiler offers CUDA activity; in cold mode,
   profile one L2 flush alone, launched on a stream of its own, to learn the
   profiler's id of that stream (the flush's activities are later excluded
   by that identity, never by their names); profile a few calls to learn the
   host time of one call, which sizes the windows.
2. ``sample``: the stopping rule (``collect_samples``) asks for one sample at
   a time; ``WindowedSamples`` answers from the calls of a profiled window,
   running the next window when the last one is used up. A window holds
   many calls, because starting and stopping the profiler costs
   milliseconds.
3. Each window's device activities are sorted by start and grouped into
   calls by ``group_calls``; one call's sample is the summed duration of its
   kernels, memsets and copies.

Anything that stops CUPTI from giving a sample (no CUDA activity, an error
inside the profiler, no device activity, activities that cannot be told
apart call by call) raises ``CuptiUnavailable`` with the reason; the worker
then falls back to CUDA events behind a sleep and records the reason.

Like flashcore_worker, this module imports only the standard library at load
time, so the grouping and the window rule are testable without torch.
"""

import collections
import dataclasses
import time

# The stopping rule evaluates the noise at FIRST_NOISE_CHECK samples, then
# every CHECK_EVERY: windows hold at least CHECK_EVERY calls, the first at
# least FIRST_NOISE_CHECK, so a steady block of few samples needs one.
from flashcore_sampling import CHECK_EVERY, FIRST_NOISE_CHECK
# How many calls the first profiled window of prepare() holds.
PROBE_CALLS = 3
# A window lasts about WINDOW_HOST_NS of host time, and holds at most
# WINDOW_MAX_CALLS calls: the calls a window holds beyond what the stopping
# rule takes are wasted, and a window may overrun the time cap by its length.
WINDOW_HOST_NS = 100_000_000
WINDOW_MAX_CALLS = 256


class CuptiUnavailable(Exception):
    """CUPTI cannot give kernel times here; str() says why."""


class AttributionError(CuptiUnavailable):
    """A window's device activities cannot be told apart call by call."""


@dataclasses.dataclass(frozen=True)
class Activity:
    """One device activity (kernel, memset or copy) as CUPTI recorded it.
    stream is the profiler's id of the stream it ran on."""

    name: str
    start_ns: int
    duration_ns: int
    stream: int


# ---------------------------------------------------------------- grouping


def group_calls(activities, calls, flush_streams=frozenset()):
    """The device activities of each of `calls` calls, in order.

    Without flush streams (hot mode) every activity belongs to a call, and
    every call must launch the same device work: the activities, sorted by
    start, split into `calls` equal runs whose names repeat. With flush
    streams (cold mode) the window holds a flush before each call: an
    activity on a flush stream opens the next call, and the activities up to
    the next flush are that call's. Raises AttributionError when the
    activities do not fit."""
    ordered = sorted(activities, key=lambda a: a.start_ns)
    if not ordered:
        raise AttributionError("the profiler recorded no device activity")
    if flush_streams:
        return _group_after_flushes(ordered, calls, frozenset(flush_streams))
    return _group_equal_runs(ordered, calls)


def _group_equal_runs(ordered, calls):
    if len(ordered) % calls:
        raise AttributionError(f"{len(ordered)} device activities over {calls} calls")
    per_call = len(ordered) // calls
    groups = [ordered[i:i + per_call] for i in range(0, len(ordered), per_call)]
    first = _names(groups[0])
    for i, group in enumerate(groups[1:], 2):
        if _names(group) != first:
            raise AttributionError(f"calls launched different device work: call 1 {list(first)}, "
                                   f"call {i} {list(_names(group))}")
    return groups


def _group_after_flushes(ordered, calls, flush_streams):
    groups, in_flush = [], False
    for activity in ordered:
        if activity.stream in flush_streams:
            if not in_flush:
                groups.append([])
            in_flush = True
            continue
        in_flush = False
        if not groups:
            raise AttributionError(f"device activity {activity.name!r} ran before the first L2 flush")
        groups[-1].append(activity)
    empty = sum(1 for g in groups if not g)
    if len(groups) != calls or empty:
        raise AttributionError(f"{len(groups)} L2 flushes ({empty} with no call activity after them) "
                               f"over {calls} calls")
    return groups


def _names(group):
    return tuple(a.name for a in group)


def call_times(groups):
    """Each call's summed device time in ns."""
    return [sum(a.duration_ns for a in group) for group in groups]


def activity_medians(groups):
    """One call's device activities as (name, median ns over the calls).
    When calls differ, the first call's activities, as recorded."""
    first = _names(groups[0])
    if any(_names(g) != first for g in groups):
        return [(a.name, a.duration_ns) for a in groups[0]]
    return [(name, _median(sorted(g[k].duration_ns for g in groups))) for k, name in enumerate(first)]


def _median(ordered):
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


# ---------------------------------------------------------------- windows


def next_window_calls(previous, taken, min_samples, max_samples, host_ns_per_call):
    """How many calls the next profiled window holds. The first holds
    min_samples (the least the stopping rule takes) and at least
    FIRST_NOISE_CHECK, each later one twice the one before, so a run needs
    few windows and wastes at most about half its calls; every window at
    least CHECK_EVERY calls, at most WINDOW_MAX_CALLS, at most about
    WINDOW_HOST_NS of host time, and never more than the samples the
    stopping rule may still take."""
    want = max(min_samples, FIRST_NOISE_CHECK) if previous == 0 else 2 * previous
    by_time = max(WINDOW_HOST_NS // max(int(host_ns_per_call), 1), CHECK_EVERY)
    left = max(max(max_samples, min_samples, 1) - taken, 1)
    return max(1, min(want, by_time, WINDOW_MAX_CALLS, left))


class WindowedSamples:
    """Maps profiled windows to the stopping rule's samples: sample()
    returns the next call's time of the current window, and runs the next
    window (run_window(calls) -> per-call ns) when it is used up. The
    stopping rule itself is unchanged, so min_samples, max_samples, the
    noise target and the time cap mean what they mean for every backend;
    calls left in the last window when it stops are simply not used."""

    def __init__(self, run_window, min_samples, max_samples, host_ns_per_call):
        self._run_window = run_window
        self._min, self._max = min_samples, max_samples
        self.host_ns_per_call = host_ns_per_call
        self._pending = collections.deque()
        self.taken = self.windows = self.calls = self._previous = 0

    def sample(self):
        if not self._pending:
            calls = next_window_calls(self._previous, self.taken, self._min, self._max, self.host_ns_per_call)
            times = self._run_window(calls)
            if len(times) != calls:
                raise AttributionError(f"a window of {calls} calls gave {len(times)} times")
            self._pending.extend(times)
            self._previous = calls
            self.windows += 1
            self.calls += calls
        self.taken += 1
        return self._pending.popleft()


# ---------------------------------------------------------------- profiler


def device_activities(events, device_type_cuda):
    """The device activities among torch.profiler's kineto events: CUDA
    events that are not user annotations (kernels, memsets, copies)."""
    out = []
    for e in events:
        if e.device_type() != device_type_cuda or e.is_user_annotation():
            continue
        out.append(Activity(e.name(), int(e.start_ns()), int(e.duration_ns()), int(e.device_resource_id())))
    return out


def kineto_profiler(torch, cpu, cuda):
    """The profiler a window runs under: torch.autograd.profiler.profile
    on kineto, which torch.profiler.profile wraps. Not the wrapper: its
    start asks hasattr(torch, "_inductor"), which imports torch.compile's
    whole stack (torch._inductor, torch._dynamo, sympy), about a second of
    a worker's start that only flex-attention's compiles need (measured on
    an H100 with torch 2.11; docs/measurement.md)."""
    from torch.autograd import profiler

    return profiler.profile(use_cpu=cpu, use_device="cuda" if cuda else None, use_kineto=True)


def profile_window(torch, body, host=False):
    """Runs body() under the profiler (kineto_profiler) with CUDA activity,
    synchronised before and after, and returns its device activities; with
    host, CPU activity is recorded too and the return is (activities,
    events), the events as ProfiledEvent for attribute_by_correlation. An
    error of the profiler raises CuptiUnavailable; an error of body()
    propagates."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity

    if ProfilerActivity.CUDA not in torch.profiler.supported_activities():
        raise CuptiUnavailable("torch.profiler offers no CUDA activity (torch built without CUPTI)")
    torch.cuda.synchronize()
    failed = None
    try:
        with kineto_profiler(torch, cpu=host, cuda=True) as prof:
            try:
                body()
                torch.cuda.synchronize()
            except Exception as exc:  # the kernel's own error, raised below, not a profiler failure
                failed = exc
        events = prof.kineto_results.events()
    except Exception as exc:  # anything the profiler raises means: no CUPTI figures here
        if failed is None:
            raise CuptiUnavailable(f"torch.profiler failed: {type(exc).__name__}: {exc}") from exc
    if failed is not None:
        raise failed
    device = device_activities(events, DeviceType.CUDA)
    if not host:
        return device
    return device, [ProfiledEvent(e.name(), e.device_type() == DeviceType.CUDA, bool(e.is_user_annotation()),
                                  int(e.start_ns()), int(e.end_ns()), int(e.correlation_id()),
                                  int(e.linked_correlation_id())) for e in events]


def start_profiler(torch):
    """Starts torch.profiler's CUPTI once, around one tiny kernel, and
    returns the seconds it took (0.0 where CUPTI is unavailable). The first
    profiler session of a process costs seconds (measured on an H100 with
    torch 2.11: the first Run of each Python worker spent 4.5 to 5.5 s in
    its warm-up, later Runs 0.1 s). The worker calls this as it starts,
    while the host starts every plugin at once, so that no row's warm-up
    pays it."""
    start = time.perf_counter()
    try:
        buffer = torch.zeros(1, device="cuda")
        profile_window(torch, lambda: buffer.add_(1), host=True)
    except CuptiUnavailable:
        return 0.0
    return time.perf_counter() - start


class CuptiSampler:
    """Kernel times of one Run from CUPTI (see the module doc).

    fn runs one call; flush writes the L2 flush buffer on the current stream
    (cold mode runs it on a stream of its own, ordered with the calls by
    stream waits, so its activities have their own stream id).

    With reference (flashcore verify-timing), the sampling windows also
    record host activity and run each call in its own record_function
    range, and every call is timed a second way, by correlation
    (attribute_by_correlation): the reference for the very calls the
    samples came from, so the two differ only if one attribution is
    wrong, never because the device changed speed between them."""

    method = "cupti"

    def __init__(self, torch, fn, cold, flush, profile=profile_window, reference=False):
        self.torch, self.fn, self.cold, self.flush = torch, fn, cold, flush
        self._profile = profile
        self.reference = reference
        self._reference_times = []
        self._reference_groups = None
        self._reference_error = ""
        self._flush_stream = torch.cuda.Stream() if cold else None
        self._flush_streams = frozenset()
        self._samples = None
        self._groups = None
        self.host_ns_per_call = 0
        # Blocks (one per placement of the buffers) finished so far: their
        # windows, calls and samples, and the reference times of the calls
        # they used.
        self._done = [0, 0, 0]
        self._used_reference = []
        self._block_reference_start = 0
        self._block_open = False

    def prepare(self, min_samples, max_samples):
        """Starts a block of samples: learns the flush's stream (once) and
        one call's host time; raises CuptiUnavailable when CUPTI cannot time
        these calls. Call finish_block() when the block's samples are in."""
        if self.cold and not self._flush_streams:
            self._flush_streams = self._find_flush_streams()
        if not self.host_ns_per_call:
            # The first block's probe: one call's host time sizes the
            # windows, and it stays that after a move (the same calls on
            # other buffers), so later blocks need no probe of their own.
            self.window(PROBE_CALLS)
        def sample_window(calls):
            return self.window(calls, reference=self.reference)

        self._block_reference_start = len(self._reference_times)
        self._block_open = True
        self._samples = WindowedSamples(sample_window, min_samples, max_samples, self.host_ns_per_call)
        return {}

    def finish_block(self):
        """Counts the block prepare() started: its windows, its calls, the
        samples it used and their reference times. report() finishes a
        block left open."""
        if not self._block_open:
            return
        self._block_open = False
        s = self._samples
        start = self._block_reference_start
        self._used_reference.extend(self._reference_times[start:start + s.taken])
        self._done = [self._done[0] + s.windows, self._done[1] + s.calls, self._done[2] + s.taken]

    def _find_flush_streams(self):
        activities = self._profile(self.torch, self._flush_on_own_stream)
        if not activities:
            raise CuptiUnavailable("the profiler recorded no device activity for the L2 flush")
        return frozenset(a.stream for a in activities)

    def _flush_on_own_stream(self):
        compute = self.torch.cuda.current_stream()
        self._flush_stream.wait_stream(compute)
        with self.torch.cuda.stream(self._flush_stream):
            self.flush()
        compute.wait_stream(self._flush_stream)

    def _calls(self, calls, names=None):
        """calls calls, each after a flush in cold mode, and with names each
        inside its own record_function range (the flush outside it)."""
        for i in range(calls):
            if self.cold:
                self._flush_on_own_stream()
            if names is None:
                self.fn()
                continue
            with self.torch.profiler.record_function(names[i]):
                self.fn()

    def window(self, calls, reference=False):
        """Profiles `calls` calls and returns each one's device time in ns.
        With reference, the calls are also timed by correlation
        (attribute_by_correlation) and kept for report()."""
        names = [f"{REFERENCE_RANGE} {len(self._reference_times) + i}" for i in range(calls)] if reference else None
        host = {}

        def body():
            start = time.perf_counter_ns()
            self._calls(calls, names)
            self.torch.cuda.synchronize()
            host["ns"] = time.perf_counter_ns() - start

        if reference:
            activities, events = self._profile(self.torch, body, host=True)
        else:
            activities = self._profile(self.torch, body)
        self._groups = group_calls(activities, calls, self._flush_streams)
        self.host_ns_per_call = host.get("ns", 0) / calls
        if reference:
            self._keep_reference(events, names)
        return call_times(self._groups)

    def _keep_reference(self, events, names):
        try:
            groups = attribute_by_correlation(events, names)
        except AttributionError as why:
            self._reference_error = self._reference_error or str(why)
            return
        self._reference_times.extend(sum(e.end_ns - e.start_ns for e in g) for g in groups)
        self._reference_groups = [[Activity(e.name, e.start_ns, e.end_ns - e.start_ns, 0) for e in g] for g in groups]

    def warm_up(self):
        """One untimed call (after a flush in cold mode), waited for."""
        self._calls(1)
        self.torch.cuda.synchronize()

    def sample(self):
        return self._samples.sample()

    def report(self):
        """Facts about the windows and the activities of one call."""
        self.finish_block()
        windows, calls, taken = self._done
        facts = {
            "kernel_method": "CUPTI (torch.profiler): each call's kernels, memsets and copies, summed",
            "cupti_windows": f"{windows} windows, {calls} calls profiled, {taken} used",
            "kernels": describe_activities(activity_medians(self._groups)),
        }
        if self.cold:
            facts["l2_flush"] = "on its own stream, excluded by the profiler's stream id"
        if self.reference:
            facts.update(self._reference_facts(taken))
        return facts

    def _reference_facts(self, taken):
        """The verify-timing reference of the calls the samples came from."""
        if self._reference_error:
            return {"reference_error": self._reference_error}
        times = self._used_reference
        if len(times) < taken or not any(times):
            return {"reference_error": f"correlation attributed {len(times)} of the {taken} sampled calls"}
        return {
            "reference_method": "CUPTI via torch.profiler, the sampled calls again: each call in its own "
                                "record_function range, device activities attributed by correlation",
            "reference_ns": " ".join(str(int(t)) for t in times),
            "reference_kernels": describe_activities(activity_medians(self._reference_groups)),
        }


def describe_activities(medians):
    """The "kernels" fact: names with their durations."""
    return "; ".join(f"{name} ({ns / 1000:.2f} µs)" for name, ns in medians)


# ---------------------------------------------------------------- reference
#
# flashcore verify-timing checks the figure above against a CUPTI reference
# computed another way from the same calls (CuptiSampler with reference):
# each call runs inside its own record_function range, and a device activity
# belongs to the call whose range holds the CUDA API call that launched it,
# by CUPTI's correlation of the two. No ordering of the device timeline, no
# equal split into calls.

REFERENCE_RANGE = "flashcore reference call"


@dataclasses.dataclass(frozen=True)
class ProfiledEvent:
    """One kineto event, as much of it as the reference needs. correlation
    is the event's own id; linked is, for device activities, the id of the
    host op that launched it."""

    name: str
    on_device: bool
    user_annotation: bool
    start_ns: int
    end_ns: int
    correlation: int
    linked: int


def attribute_by_correlation(events, range_names):
    """Each named call's device activities, by correlation: a device
    activity belongs to the range (on the host) that holds the CUDA API
    call that launched it (the host event of the same CUPTI correlation id,
    named cuda* or cu*), else the host op it is linked to. Activities
    launched outside every range (an L2 flush between calls) belong to no
    call. Returns one list of ProfiledEvent per name, in order, each by
    start; raises AttributionError when a range is missing or a device
    activity has no launching host event in the profile."""
    ranges = {}
    api_start, op_start = {}, {}
    for e in events:
        if e.on_device:
            continue
        if e.user_annotation:
            if e.name in range_names:
                ranges[e.name] = (e.start_ns, e.end_ns)
        elif e.name.startswith("cu"):  # a CUDA runtime or driver API call: CUPTI's correlation ids
            api_start.setdefault(e.correlation, e.start_ns)
        if e.linked == 0 and not e.name.startswith("cu"):  # a host op: the ids device activities link to
            op_start.setdefault(e.correlation, e.start_ns)
    missing = [n for n in range_names if n not in ranges]
    if missing:
        raise AttributionError(f"the profiler recorded no host range for {len(missing)} of {len(range_names)} calls")
    spans = sorted((start, end, name) for name, (start, end) in ranges.items())
    per_call = {name: [] for name in range_names}
    for e in events:
        if not e.on_device or e.user_annotation:
            continue
        launched = api_start.get(e.correlation)
        if launched is None and e.linked:
            launched = op_start.get(e.linked)
        if launched is None:
            raise AttributionError(f"device activity {e.name!r} has no launching host event in the profile "
                                   f"(correlation {e.correlation}, linked {e.linked})")
        for start, end, name in spans:
            if start <= launched <= end:
                per_call[name].append(e)
                break
    return [sorted(per_call[name], key=lambda a: a.start_ns) for name in range_names]
