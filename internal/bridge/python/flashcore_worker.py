"""The shared core of FlashCore bench's Python workers.

Where to start: ``serve`` is the worker's loop. The Go bridge
(internal/bridge) starts ``worker_main.py``, which imports torch and one
backend module (the plugin's own, e.g. ``sdpa_backend``), then calls
``serve``. Every request is answered in turn:

1. ``describe``: the device and the backend's variants.
2. ``prepare``: check the shape against the variant's capabilities, load
   Q, K and V from the host's files, hash the bytes loaded, and let the
   backend build a ``Kernel`` (which may answer ``Unsupported``).
3. ``fetch``: poison the kernel's output buffer (when it owns one), run once,
   write the output file.
4. ``run``: the measurement contract (docs/measurement.md): warm-up and the
   stopping rule of ``sdk.CollectSamples``, replicated exactly here, for
   kernel time; then host-inclusive call time; then the cross-check. On a
   GPU the kernel time comes from CUPTI through torch.profiler
   (flashcore_cupti) and the cross-check from CUDA events behind a sleep;
   where CUPTI cannot time the calls, the two swap and a fact says why.
5. ``release``: forget the case.

The protocol is one JSON object per frame, each frame a 4-byte big-endian
length and the UTF-8 JSON body, on two pipes the host opens for the worker
(not stdout: torch and triton print there). This module imports only the
standard library at load time, so its protocol and statistics are testable
without torch; everything that needs torch imports it where it is used.
"""

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import platform
import re
import struct
import sys
import time
import traceback

import flashcore_cupti as cupti

PROTOCOL_VERSION = 1
_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 64 << 20

# The stopping rule re-evaluates the noise every CHECK_EVERY samples, as
# sdk/sampling.go's checkEvery does.
CHECK_EVERY = 5

POISON_BYTE = 0xFF

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
# The cross-check: CUPTI over this many calls where events time the kernel,
# events over this many samples where CUPTI does.
CROSS_CHECK_CALLS = 20

# Under a profiler (internal/bridge.UnderProfilerEnv set to 1) every call
# runs inside two NVTX push/pop ranges: NVTX_OUTER_RANGE, which ncu's filter
# selects (--nvtx-include "flashcore/"), and the call's own range
# (call_range), which names the row and the call so ncu's kernels can be
# grouped per call (internal/ncu, calls.go).
UNDER_PROFILER_ENV = "FLASHCORE_UNDER_PROFILER"
NVTX_OUTER_RANGE = "flashcore"
# flashcore verify-timing sets this to "cupti" (internal/bridge.TimingReferenceEnv):
# the CUPTI sampler times each sampled call a second way, by correlation
# rather than by device order (flashcore_cupti.CuptiSampler, reference), and
# returns those times as facts.
TIMING_REFERENCE_ENV = "FLASHCORE_TIMING_REFERENCE"


# ---------------------------------------------------------------- protocol


class ProtocolError(Exception):
    """The byte stream is not a sequence of frames."""


def write_frame(stream, message):
    """Writes message as one frame: length, then compact JSON."""
    body = json.dumps(message, separators=(",", ":"), allow_nan=False).encode()
    if len(body) > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {len(body)} bytes exceeds {MAX_FRAME_BYTES}")
    stream.write(_HEADER.pack(len(body)) + body)
    stream.flush()


def read_frame(stream):
    """Reads one frame. Returns None at a clean end of stream."""
    header = _read_exactly(stream, _HEADER.size)
    if header is None:
        return None
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes exceeds {MAX_FRAME_BYTES}")
    body = _read_exactly(stream, length)
    if body is None:
        raise ProtocolError(f"stream ended inside a frame of {length} bytes")
    return json.loads(body)


def _read_exactly(stream, n):
    chunks, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError(f"stream ended after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------- statistics


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
        )


def median_sorted(values):
    """The median of an ascending list (sdk.MedianSorted)."""
    n = len(values)
    if n == 0:
        return math.nan
    if n % 2 == 1:
        return values[n // 2]
    return (values[n // 2 - 1] + values[n // 2]) / 2


def relative_noise(samples):
    """sdk.RelativeNoise: the half-width of the distribution-free 95%
    confidence interval of the median (order statistics at ranks
    n/2 ± 0.98·√n), over the median. +inf below 6 samples."""
    n = len(samples)
    if n < 6:
        return math.inf
    ordered = sorted(float(s) for s in samples)
    half = 0.98 * math.sqrt(n)
    lo = max(math.floor(n / 2 - half), 0)
    hi = min(math.ceil(n / 2 + half), n - 1)
    median = median_sorted(ordered)
    if median <= 0:
        return math.inf
    return (ordered[hi] - ordered[lo]) / 2 / median


def collect_samples(m, sample, clock=time.perf_counter_ns, warm_up=None):
    """sdk.CollectSamples, step for step: warm up until both warmup_runs
    and warmup_time are reached, then sample until min_samples are taken and
    the noise (checked every CHECK_EVERY samples) is below target_noise, or
    max_samples are taken, or time_cap has passed since the first sample.
    sample() returns nanoseconds. A warm-up run calls warm_up() where given
    (an untimed call), else sample()."""
    _warm_up(m, warm_up or sample, clock)
    min_samples = max(m.min_samples, 1)
    max_samples = max(m.max_samples, min_samples)
    samples = []
    start = clock()
    while len(samples) < max_samples:
        samples.append(sample())
        if len(samples) < min_samples:
            continue
        if m.time_cap_ns > 0 and clock() - start >= m.time_cap_ns:
            break
        if len(samples) % CHECK_EVERY == 0 and relative_noise(samples) < m.target_noise:
            break
    return samples


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
        b = dataclasses.replace(b, warmup_runs=max(-(-m.warmup_runs // n), 1), warmup_time_ns=m.warmup_time_ns // n)
    return b


def collect_placed_samples(m, collect_block, move):
    """sdk.CollectPlacedSamples: the samples of placements(m) blocks, with
    move(placement) between two blocks; collect_block(block_measurement)
    takes one block's samples. Returns the samples and the samples per
    block (None for one placement). A move that raises StayPut leaves the
    buffers where they are, and its block's samples count to the block
    before."""
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
        block = collect_block(block_measurement(m, i))
        samples.extend(block)
        if stay:
            blocks[-1] += len(block)
        else:
            blocks.append(len(block))
    return samples, blocks


def spacer_bytes(placement):
    """The spacer allocated in front of placement's buffers: 2 to 64 MiB in
    steps of 2 MiB, as internal/cudabackend's spacerBytes."""
    return (1 + (placement * 13) % 32) * 2 << 20


def _warm_up(m, sample, clock):
    start = clock()
    runs = 0
    while runs < m.warmup_runs or clock() - start < m.warmup_time_ns:
        sample()
        runs += 1


# ---------------------------------------------------------------- cases


class Unsupported(Exception):
    """Raised by a backend that will not run a case: the row is a skip."""

    def __init__(self, summary, detail=""):
        super().__init__(summary)
        self.summary = summary
        self.detail = detail


@dataclasses.dataclass(frozen=True)
class Shape:
    """sdk.Shape. Tensors are [batch, heads, seq, head_dim]."""

    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_k: int
    head_dim: int
    causal: bool
    dtype: str

    @classmethod
    def from_json(cls, s):
        return cls(
            batch=int(s["batch"]),
            heads=int(s["heads"]),
            kv_heads=int(s.get("kv_heads") or s["heads"]),
            seq_q=int(s["seq_q"]),
            seq_k=int(s["seq_k"]),
            head_dim=int(s["head_dim"]),
            causal=bool(s.get("causal", False)),
            dtype=s["dtype"],
        )

    @property
    def q_shape(self):
        return (self.batch, self.heads, self.seq_q, self.head_dim)

    @property
    def kv_shape(self):
        return (self.batch, self.kv_heads, self.seq_k, self.head_dim)

    @property
    def scale(self):
        return 1 / math.sqrt(self.head_dim)

    @property
    def grouped(self):
        return self.kv_heads != self.heads

    def __str__(self):
        heads = f"H{self.heads}" if not self.grouped else f"H{self.heads}/{self.kv_heads}"
        seq = f"S{self.seq_q}" if self.seq_q == self.seq_k else f"S{self.seq_q}x{self.seq_k}"
        text = f"B{self.batch} {heads} {seq} D{self.head_dim} {self.dtype}"
        return text + (" causal" if self.causal else "")


DTYPE_SIZES = {"fp16": 2, "bf16": 2, "fp32": 4}


def torch_dtype(name):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[name]


def capabilities(dtypes, causal=True, non_causal=True, grouped_query_heads=True,
                 unequal_seq_lens=True, head_dims=(), max_seq_len=0, max_elements=0,
                 needs_gpu=False, seq_multiple=1):
    """An sdk.Capabilities as JSON."""
    return {
        "dtypes": list(dtypes),
        "head_dims": list(head_dims),
        "causal": causal,
        "non_causal": non_causal,
        "grouped_query_heads": grouped_query_heads,
        "unequal_seq_lens": unequal_seq_lens,
        "max_seq_len": max_seq_len,
        "max_elements": max_elements,
        "needs_gpu": needs_gpu,
        "seq_multiple": seq_multiple,
    }


def capability_gap(caps, shape, on_gpu):
    """The reason shape falls outside caps, or None when it fits."""
    checks = [
        (caps["needs_gpu"] and not on_gpu, "needs a CUDA GPU; this machine has none"),
        (shape.dtype not in caps["dtypes"], f"dtype {shape.dtype} not supported (supports {', '.join(caps['dtypes'])})"),
        (min(shape.batch, shape.heads, shape.kv_heads, shape.seq_q, shape.seq_k, shape.head_dim) < 1,
         "a dimension is below 1"),
        (shape.heads % max(shape.kv_heads, 1) != 0, f"heads {shape.heads} is not a multiple of kv_heads {shape.kv_heads}"),
        (caps["head_dims"] and shape.head_dim not in caps["head_dims"],
         f"head dim {shape.head_dim} not supported (supports {caps['head_dims']})"),
        (shape.causal and not caps["causal"], "causal masking not supported"),
        (not shape.causal and not caps["non_causal"], "only causal attention supported"),
        (shape.grouped and not caps["grouped_query_heads"], "grouped-query heads not supported"),
        (shape.seq_q != shape.seq_k and not caps["unequal_seq_lens"], "seq_q != seq_k not supported"),
        (caps["max_seq_len"] and max(shape.seq_q, shape.seq_k) > caps["max_seq_len"],
         f"sequence length above {caps['max_seq_len']}"),
        (caps["max_elements"] and max(math.prod(shape.q_shape), math.prod(shape.kv_shape)) > caps["max_elements"],
         f"more than {caps['max_elements']} elements per tensor"),
    ]
    for failed, reason in checks:
        if failed:
            return reason
    return None


@dataclasses.dataclass
class Case:
    """One prepared case as a backend sees it: inputs already on the device."""

    case_id: str
    variant: str
    shape: Shape
    tunables: dict
    device: object  # torch.device
    q: object
    k: object
    v: object


class Kernel:
    """What a backend's prepare returns: one runnable attention.

    run() computes the attention once and returns the output tensor. When
    the kernel writes into a buffer it owns, that buffer is ``output`` and
    the core poisons it before the checked run; when the library allocates
    its own result (torch SDPA), ``output`` is None and the result is written
    as returned. session() is entered around every fetch and run (SDPA uses
    it to pin the backend once, outside the timed region)."""

    def __init__(self, run, facts=None, output=None, session=None):
        self.run = run
        self.facts = dict(facts or {})
        self.output = output
        self._session = session

    def session(self):
        return self._session() if self._session else contextlib.nullcontext()


@dataclasses.dataclass
class PreparedCase:
    """A case the worker holds between prepare and release. label is the
    row's label in tables; calls counts the calls timed so far (their NVTX
    ranges are numbered on across Run requests)."""

    kernel: Kernel
    shape: Shape
    output_path: str
    case_id: str = ""
    label: str = ""
    calls: int = 0
    inputs: object = None  # the Case the kernel was prepared from


def row_label(variant, tunables):
    """The row's label as the host writes it (core/runner, label): the
    variant, then "[k=v,...]" with the keys sorted when it has tunables."""
    if not tunables:
        return variant
    return variant + "[" + ",".join(f"{k}={tunables[k]}" for k in sorted(tunables)) + "]"


def call_range(case_id, label, n):
    """The NVTX range of call n of a row: ncu.CallRange in Go."""
    return f"flashcore call {case_id} {label} #{n}"


def under_profiler():
    return os.environ.get(UNDER_PROFILER_ENV) == "1"


def nvtx_marked(fn, case, nvtx):
    """fn, with each call inside NVTX_OUTER_RANGE and its own call_range.
    Only the call is inside: the sleep and the L2 flush queued around it
    are not, so ncu profiles the attention alone."""

    def marked():
        case.calls += 1
        nvtx.range_push(NVTX_OUTER_RANGE)
        nvtx.range_push(call_range(case.case_id, case.label, case.calls))
        try:
            return fn()
        finally:
            nvtx.range_pop()
            nvtx.range_pop()

    return marked


# ---------------------------------------------------------------- tensors


def load_inputs(files, shape, device):
    """Reads Q, K and V from the host's files and returns them on device,
    with the hex SHA-256 of the bytes loaded, Q then K then V."""
    import numpy
    import torch

    digest = hashlib.sha256()
    dtype = torch_dtype(shape.dtype)
    tensors = []
    for key, dims in (("Q", shape.q_shape), ("K", shape.kv_shape), ("V", shape.kv_shape)):
        path = files[key]
        raw = numpy.fromfile(path, dtype=numpy.uint8)
        want = math.prod(dims) * DTYPE_SIZES[shape.dtype]
        if raw.size != want:
            raise ValueError(f"{path}: {raw.size} bytes, want {want} for {key} of {shape}")
        digest.update(raw)
        tensor = torch.from_numpy(raw).view(dtype).reshape(dims)
        tensors.append(tensor.to(device))
    return tensors, digest.hexdigest()


def poison(tensor):
    """Fills tensor's bytes with POISON_BYTE (a NaN no arithmetic makes)."""
    import torch

    tensor.view(torch.uint8).fill_(POISON_BYTE)


def write_tensor(path, tensor):
    """Writes tensor's raw little-endian bytes to path."""
    import torch

    raw = tensor.detach().contiguous().cpu().view(torch.uint8).numpy()
    raw.tofile(path)


# ---------------------------------------------------------------- timing


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

    def prepare_sampling(self, fn, cold):
        """Sizes the hot batch from a few single-call probes, then the sleep
        from the slowest queueing time of a few probes of the chosen batch."""
        self.sleep_ns = MAX_SLEEP_NS // 4
        self.batch = 1
        singles = []
        for _ in range(3):
            self._queue(fn, cold)
            self.end.synchronize()
            singles.append(self.start.elapsed_time(self.end) * 1e6)
        self.batch = 1 if cold else hot_batch(median_sorted(sorted(singles)))
        queued = [self._queue(fn, cold) for _ in range(5)]
        self.torch.cuda.synchronize()
        self.sleep_ns = min(max(MIN_SLEEP_NS, 2 * max(queued)), MAX_SLEEP_NS)
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


def kernel_times(m, run, cold, timer, sampler, facts, move=None):
    """The kernel-time samples of one Run, their method and the samples per
    placement block (None for one). With a CUPTI sampler (on a GPU) the
    samples are CUPTI's; where it cannot time the calls (CuptiUnavailable,
    before or during sampling) the Run starts over with the timer's own
    method (CUDA events behind a sleep) and the fact cupti_fallback says
    why. Either way the stopping rule runs whole in every block, so
    min_samples is honoured. move(placement) moves the case's buffers
    between two blocks (collect_placed_samples)."""
    if sampler is not None:
        def cupti_block(bm):
            facts.update(sampler.prepare(bm.min_samples, bm.max_samples))
            block = collect_samples(bm, sampler.sample, warm_up=sampler.warm_up)
            sampler.finish_block()
            return block

        try:
            times, blocks = collect_placed_samples(m, cupti_block, move)
            facts.update(sampler.report())
            timer.reset_sample_counts()
            return times, sampler.method, blocks
        except cupti.CuptiUnavailable as why:
            facts["cupti_fallback"] = str(why)

    def events_block(bm):
        facts.update(timer.prepare_sampling(run, cold))
        return collect_samples(bm, lambda: timer.kernel_sample(run, cold))

    times, blocks = collect_placed_samples(m, events_block, move)
    return times, timer.method, blocks


def _recording(run):
    """run wrapped to remember what its latest call returned, and a getter
    for it. The remembered tensor is the timed output the host checks."""
    holder = [None]

    def recorded():
        holder[0] = run()
        return holder[0]

    return recorded, lambda: holder[0]


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


# ---------------------------------------------------------------- device


def pick_device():
    import torch

    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def describe_device(device):
    """sdk.Device as JSON for the device the worker measures on."""
    import torch

    if device.type == "cuda":
        return _describe_gpu(torch, device)
    return {
        "kind": "cpu",
        "name": _cpu_name(),
        "cores": os.cpu_count() or 0,
        "runtime": f"torch {torch.__version__} (CPU, {torch.get_num_threads()} threads)",
    }


def _describe_gpu(torch, device):
    props = torch.cuda.get_device_properties(device)
    runtime = f"torch {torch.__version__}, CUDA {torch.version.cuda}"
    if torch.backends.cudnn.is_available():
        runtime += f", cuDNN {torch.backends.cudnn.version()}"
    out = {
        "kind": "gpu",
        "name": props.name,
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "l2_bytes": int(getattr(props, "L2_cache_size", 0)),
        "memory_bytes": int(props.total_memory),
        "runtime": runtime,
    }
    for field, attr, scale in (("sm_clock_mhz", "clock_rate", 1e-3), ("mem_clock_mhz", "memory_clock_rate", 1e-3),
                               ("mem_bus_width_bits", "memory_bus_width", 1)):
        value = getattr(props, attr, 0)
        if value:
            out[field] = value * scale if scale != 1 else int(value)
    out.update({k: v for k, v in _nvml_maxima(device).items() if v})
    out.update(device_peaks(props.major, props.minor, props.multi_processor_count, out.get("sm_clock_mhz", 0),
                            out.get("mem_clock_mhz", 0), out.get("mem_bus_width_bits", 0)))
    return out


# Dense fp16 tensor-core FLOP per clock per SM, by compute capability: the
# same table as the Go CUDA plugins (internal/gpu), so % of peak means the
# same in every row (A100: 312 TF at 108 SMs and 1410 MHz; L4: 121 TF at 58
# SMs and 2040 MHz; H100 SXM: 989 TF at 132 SMs and 1830 MHz).
DENSE_FP16_FLOP_PER_CLOCK = {(8, 0): 2048, (8, 6): 1024, (8, 9): 1024, (9, 0): 4096}


def device_peaks(major, minor, sms, max_sm_clock_mhz, max_mem_clock_mhz, bus_width_bits):
    """Peak dense fp16 TFLOP/s (SMs x max SM clock x FLOP/clock/SM) and
    memory GB/s (two transfers per memory clock x bus width); 0 if unknown."""
    per_clock = DENSE_FP16_FLOP_PER_CLOCK.get((major, minor), 0)
    return {
        "peak_tflops": sms * max_sm_clock_mhz * 1e6 * per_clock / 1e12,
        "peak_gbps": 2 * max_mem_clock_mhz * 1e6 * bus_width_bits / 8 / 1e9,
    }


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _nvml_maxima(device):
    """Maximum SM and memory clocks and the bus width from NVML, where
    pynvml is installed; an empty dict otherwise."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        return {
            "sm_clock_mhz": float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            "mem_clock_mhz": float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
            "mem_bus_width_bits": int(pynvml.nvmlDeviceGetMemoryBusWidth(handle)),
            "driver": _text(pynvml.nvmlSystemGetDriverVersion()),
        }
    except Exception:  # pynvml missing, NVML unavailable, or an old driver
        return {}


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flush_bytes():
    """Twice the last-level cache, read from sysfs; 64 MiB when unknown."""
    sizes = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    with contextlib.suppress(OSError):
        for index in os.listdir(base):
            with contextlib.suppress(OSError, ValueError), open(f"{base}/{index}/size") as f:
                text = f.read().strip()
                sizes.append(int(text[:-1]) * 1024 if text.endswith("K") else int(text))
    return 2 * max(sizes) if sizes else 64 << 20


# ---------------------------------------------------------------- worker


def tunable_gap(variant, tunables):
    """The reason tunables ask for what variant does not declare, or None."""
    declared = {t["name"]: t.get("values", []) for t in variant.get("tunables") or ()}
    for name in sorted(tunables):
        if name not in declared:
            return f"unknown tunable {name!r} (this variant has: {', '.join(declared) or 'none'})"
        if tunables[name] not in declared[name]:
            return f"tunable {name}: {tunables[name]!r} is not one of {', '.join(declared[name])}"
    return None


def diagnostic(severity, summary, detail=""):
    out = {"severity": severity, "summary": summary}
    if detail:
        out["detail"] = detail
    return out


class Worker:
    """Answers the host's requests for one backend.

    A backend is an object with ``version``, ``build``, ``variants()`` (a
    list of sdk.Variant as JSON) and ``prepare(case) -> Kernel``."""

    def __init__(self, backend, device):
        self.backend = backend
        self.device = device
        self.cases = {}
        self._timer = None
        self._spacer = None  # the spacer in front of the current placement (_mover)
        self._variants = {v["name"]: v for v in backend.variants()}

    def handle(self, method, params):
        handler = {
            "describe": self.describe,
            "prepare": self.prepare,
            "fetch": self.fetch,
            "run": self.run,
            "release": self.release,
        }.get(method)
        if handler is None:
            raise ValueError(f"unknown method {method!r}")
        return handler(params or {})

    def describe(self, _params):
        return {
            "version": self.backend.version,
            "build": self.backend.build,
            "device": describe_device(self.device),
            "variants": list(self._variants.values()),
        }

    def prepare(self, params):
        case_id = params["case_id"]
        self.cases.pop(case_id, None)
        variant = self._variants.get(params["variant"])
        if variant is None:
            raise ValueError(f"unknown variant {params['variant']!r} (have {', '.join(self._variants)})")
        shape = Shape.from_json(params["shape"])
        gap = capability_gap(variant["capabilities"], shape, self.device.type == "cuda")
        gap = gap or tunable_gap(variant, params.get("tunables") or {})
        if gap:
            return {"loaded_sha256": "", "diagnostics": [diagnostic("unsupported", f"{variant['name']}: {gap}")]}
        (q, k, v), loaded = load_inputs(params["files"], shape, self.device)
        case = Case(case_id, variant["name"], shape, params.get("tunables") or {}, self.device, q, k, v)
        try:
            kernel = self.backend.prepare(case)
        except Unsupported as refused:
            return {"loaded_sha256": loaded, "diagnostics": [diagnostic("unsupported", refused.summary, refused.detail)]}
        label = row_label(variant["name"], params.get("tunables") or {})
        self.cases[case_id] = PreparedCase(kernel, shape, params["files"]["Output"], case_id, label, inputs=case)
        return {"loaded_sha256": loaded, "facts": kernel.facts}

    def _case(self, params):
        case = self.cases.get(params["case_id"])
        if case is None:
            raise KeyError(f"case {params['case_id']!r} is not prepared")
        return case

    def fetch(self, params):
        case = self._case(params)
        kernel = case.kernel
        with kernel.session():
            if kernel.output is not None:
                poison(kernel.output)
            out = kernel.run()
            self._synchronize()
        if tuple(out.shape) != case.shape.q_shape:
            raise ValueError(f"output shape {tuple(out.shape)}, want {case.shape.q_shape}")
        write_tensor(case.output_path, out)
        return {}

    def run(self, params):
        case = self._case(params)
        kernel = case.kernel
        m = Measurement.from_json(params.get("measurement") or {})
        cold = m.l2 == "cold"
        timer = self.timer()
        output_path = params.get("output") or ""
        run, last_output = _recording(lambda: case.kernel.run())
        profiled = under_profiler() and self.device.type == "cuda"
        if profiled:
            import torch

            run = nvtx_marked(run, case, torch.cuda.nvtx)
        with kernel.session():
            if output_path and kernel.output is not None:
                poison(kernel.output)
            before = timer.device_state()
            facts = {}
            move = self._mover(case, poison_output=bool(output_path)) if self.device.type == "cuda" else None
            try:
                kernel_times, method, blocks = self._kernel_times(m, run, cold, facts, profiled, move)
            finally:
                self._spacer = None
            clock, timer_facts, diagnostics = timer.sampling_report()
            call_times = [timer.call_sample(run, cold) for _ in range(m.call_samples)]
            after = timer.device_state()
            cross = [] if profiled else self._cross_check(case.kernel, method, cold, facts)
            if output_path:
                # The cross-check calls ran after the timed ones: write what
                # the last timed call returned (or left in the kernel's buffer).
                self._synchronize()
                write_tensor(output_path, last_output())
        facts.update(timer_facts)
        if profiled:
            facts["cross_check_note"] = "left out: the worker ran under a profiler, which holds CUPTI"
        if cold:
            facts["l2_flush_bytes"] = str(timer.flush_bytes)
        return {
            "kernel_times": kernel_times,
            "call_times": call_times,
            "cross_check_times": cross,
            "method": method,
            "sm_clock_mhz": clock,
            "before": before,
            "after": after,
            "diagnostics": diagnostics,
            "facts": facts,
            "kernel_blocks": blocks,
        }

    def _mover(self, case, poison_output):
        """The move between two placements (collect_placed_samples): a
        spacer of another size (spacer_bytes) is allocated, then copies of
        the inputs behind it while the old ones still hold their place; the
        backend prepares the case again on the copies (its output buffer is
        new too, poisoned when the timed output is checked), and the old
        ones are freed. The case keeps the last placement. Where the device
        has no room, the buffers stay put (StayPut)."""
        def move(placement):
            import torch

            old = case.inputs
            try:
                spacer = torch.empty(spacer_bytes(placement), dtype=torch.uint8, device=self.device)
                moved = dataclasses.replace(old, q=old.q.clone(), k=old.k.clone(), v=old.v.clone())
                kernel = self.backend.prepare(moved)
            except torch.cuda.OutOfMemoryError as why:
                raise StayPut(str(why)) from why
            if poison_output and kernel.output is not None:
                poison(kernel.output)
            case.inputs, case.kernel = moved, kernel
            self._spacer = spacer

        return move

    def _kernel_times(self, m, run, cold, facts, profiled, move=None):
        sampler = None
        if profiled:
            facts["cupti_fallback"] = "the worker runs under a profiler, which holds CUPTI"
        elif self.device.type == "cuda":
            import torch

            sampler = cupti.CuptiSampler(torch, run, cold, self.timer().flush,
                                         reference=os.environ.get(TIMING_REFERENCE_ENV) == "cupti")
        return kernel_times(m, run, cold, self.timer(), sampler, facts, move)

    def _cross_check(self, kernel, method, cold, facts):
        """An independent kernel time by the other GPU method: events behind
        a sleep where CUPTI gave the kernel time, CUPTI where events did."""
        if self.device.type != "cuda":
            return []
        if method == cupti.CuptiSampler.method:
            return self._events_cross_check(kernel, cold, facts)
        import torch

        times, activities, note = cupti_call_times(torch, kernel.run)
        if activities:
            facts["kernels"] = cupti.describe_activities(activities)
        if note:
            facts["cross_check_note"] = note
        facts["cross_check_method"] = "CUPTI device durations via torch.profiler, summed per call"
        return times

    def _events_cross_check(self, kernel, cold, facts):
        timer = self.timer()
        setup = timer.prepare_sampling(kernel.run, cold)
        times = [timer.kernel_sample(kernel.run, cold) for _ in range(CROSS_CHECK_CALLS)]
        facts.update({f"cross_check_{k}": v for k, v in setup.items()})
        facts["cross_check_method"] = f"{timer.method}: CUDA events behind torch.cuda._sleep, {len(times)} samples"
        return times

    def release(self, params):
        self.cases.pop(params["case_id"], None)
        if self.device.type == "cuda":
            import torch

            torch.cuda.empty_cache()
        return {}

    def timer(self):
        if self._timer is None:
            if self.device.type == "cuda":
                import torch

                self._timer = CudaTimer(torch, self.device)
            else:
                self._timer = WallClockTimer(cpu_flush_bytes())
        return self._timer

    def _synchronize(self):
        if self.device.type == "cuda":
            import torch

            torch.cuda.synchronize()


def error_payload(exc):
    """The error frame for an exception: kind "oom" for out of memory.

    The first line says what went wrong and where, as rows show only it.
    A Triton compile error's message is "at LINE:COL:", the kernel's source
    and, last, the diagnostic: the diagnostic comes first here, the source
    after it."""
    text = str(exc).strip()
    where = []
    lines = text.splitlines()
    detail = ""
    if len(lines) > 1 and re.fullmatch(r"at \d+:\d+:", lines[0].strip()):
        diagnostic = next(line.strip() for line in reversed(lines) if line.strip())
        where.append(lines[0].strip().rstrip(":") + " of the kernel")
        detail = "\n" + text
        text = diagnostic
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where.append(f"{os.path.basename(last.filename)}:{last.lineno} in {last.name}")
    message = f"{type(exc).__name__}: {text}".strip()
    if where:
        message += f" ({'; '.join(where)})"
    kind = "oom" if _is_out_of_memory(exc) else "error"
    return {"kind": kind, "message": message + detail}


def _is_out_of_memory(exc):
    name = type(exc).__name__
    return name == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def serve(worker, rfile, wfile):
    """Answers frames from rfile on wfile until the host closes rfile."""
    while True:
        request = read_frame(rfile)
        if request is None:
            return
        reply = {"id": request.get("id", 0)}
        try:
            reply["result"] = worker.handle(request.get("method"), request.get("params"))
        except Exception as exc:  # every failure goes back to the host as an error frame
            traceback.print_exc(file=sys.stderr)
            reply["error"] = error_payload(exc)
            if reply["error"]["kind"] == "oom":
                worker.cases.pop((request.get("params") or {}).get("case_id"), None)
                _free_cuda_cache()
        write_frame(wfile, reply)


def _free_cuda_cache():
    with contextlib.suppress(Exception):
        import torch

        torch.cuda.empty_cache()
