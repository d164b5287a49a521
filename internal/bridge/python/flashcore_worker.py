"""The shared core of FlashCore bench's Python workers.

Where to start: ``serve`` is the worker's loop. The Go bridge
(internal/bridge) starts ``worker_main.py``, which imports torch and one
backend module (the plugin's own, e.g. ``sdpa_backend``), then calls
``serve``. Every request is answered in turn:

1. ``describe``: the device and the backend's variants.
2. ``prepare``: load the inputs from the host's files (attention's
   forward: Q, K and V of a shape; attention's backward and any other op:
   its named tensors), hash the bytes loaded, and let the backend build a
   ``Kernel`` (``prepare`` for attention's forward, ``prepare_op`` for
   attention's backward modes and for other ops), which may answer
   ``Unsupported``. Capabilities and tunables are not checked here: the
   bridge checks every request against the variant's declared
   capabilities for its op and its tunables in Go, with the host's own
   checks (ops.Unsupported, sdk.ResolveTunables), before it reaches the
   worker.
3. ``fetch``: poison the kernel's output buffers (when it owns them), run
   once, write each output file.
4. ``run``: the measurement contract (docs/measurement.md): warm-up and the
   stopping rule of ``sdk.CollectSamples``, replicated exactly here, for
   kernel time; then host-inclusive call time; then the cross-check. On a
   GPU the kernel time comes from CUPTI through torch.profiler
   (flashcore_cupti) and the cross-check from CUDA events behind a sleep;
   where CUPTI cannot time the calls, the two swap and a fact says why.
5. ``release``: forget the case.

The concerns live in modules of their own, each loadable without torch:
framing (flashcore_protocol), the stopping rule and placements
(flashcore_sampling), loading and writing tensors (flashcore_tensors),
timers (flashcore_timing) and the device's description
(flashcore_device). This module holds the cases and the worker, and
re-exports the names backends and tests reach as ``flashcore_worker.X``.
"""

import contextlib
import dataclasses
import math
import os
import re
import sys
import traceback

import flashcore_cupti as cupti

# Re-exported: backends and tests reach every name through this module.
from flashcore_device import cpu_flush_bytes, describe_device, device_peaks, pick_device  # noqa: F401
from flashcore_protocol import (  # noqa: F401
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    ProtocolError,
    diagnostic,
    read_frame,
    write_frame,
)
from flashcore_sampling import (  # noqa: F401
    CHECK_EVERY,
    PHASE_CALLS,
    PHASE_CROSS_CHECK,
    PHASE_OUTPUT,
    PHASES_FACT,
    STOP_TIME_CAP,
    Measurement,
    PhaseClock,
    StayPut,
    block_measurement,
    collect_placed_samples,
    collect_samples,
    median_sorted,
    placements,
    relative_noise,
    spacer_bytes,
    take_samples,
    wall_clock_call_samples,
)
from flashcore_tensors import (  # noqa: F401
    DTYPE_SIZES,
    POISON_BYTE,
    TensorFile,
    as_tensors,
    check_outputs,
    load_inputs,
    load_tensors,
    poison,
    torch_dtype,
    write_tensor,
)
from flashcore_timing import (  # noqa: F401
    CROSS_CHECK_CALLS,
    CudaTimer,
    WallClockTimer,
    cupti_call_times,
    hot_batch,
    kernel_times,
    nvml_sm_clock_mhz,
)

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

# The op a request names when it names none (sdk.PrepareRequest.Op).
ATTENTION = "attention"
# Attention's modes: the axis "mode" of its cases (params["mode"], and
# sdk.Shape's "mode"). FWD is the forward alone (Q, K and V in, O out,
# through the backend's prepare); BWD the backward alone (Q, K, V, O, dO
# and LSE in, dQ, dK and dV out) and FWD_BWD the forward then the backward
# in one call (Q, K, V and dO in, O, dQ, dK and dV out), both through the
# backend's prepare_op as an OpCase with named tensors. A request that
# names no mode is FWD.
FWD = "fwd"
BWD = "bwd"
FWD_BWD = "fwd+bwd"
MODES = (FWD, BWD, FWD_BWD)
# Masks beyond plain and causal a variant may apply (sdk.MaskWindow,
# sdk.MaskSoftcap, sdk.MaskBottomRight): a sliding window, logit
# soft-capping, and dense attention's causal mask and window aligned to
# the bottom-right corner.
MASKS = ("window", "softcap", "bottom-right")
# Dense attention's alignments (its axis causal_align, ops/mask in Go):
# query row i at key position i (PyTorch's is_causal; the default), or at
# seq_k - seq_q + i (FlashAttention >= 2.1).
TOP_LEFT = "top-left"
BOTTOM_RIGHT = "bottom-right"
# Dense attention's mask axes and their defaults: a case's params leave
# an axis out at its default.
MASK_DEFAULTS = {"causal_align": TOP_LEFT, "window_left": -1, "window_right": -1, "softcap": 0.0}
# rmsnorm's epsilon, added to the mean square: ops/rmsnorm.Eps in Go (a
# bridge test holds the two equal). The host sends no eps, since it is
# part of the op's definition, not an axis.
RMSNORM_EPS = 1e-6


# ---------------------------------------------------------------- cases


class Unsupported(Exception):
    """Raised by a backend that will not run a case: the row is a skip."""

    def __init__(self, summary, detail=""):
        super().__init__(summary)
        self.summary = summary
        self.detail = detail


@dataclasses.dataclass(frozen=True)
class Shape:
    """sdk.Shape. Tensors are [batch, heads, seq, head_dim]. mode is
    attention's mode (MODES): what a call computes, not the tensors' sizes.

    The mask fields are dense attention's mask axes (MASK_DEFAULTS, mode
    FWD alone), from the request's params: causal_align places query row i
    at key position i (TOP_LEFT) or seq_k - seq_q + i (BOTTOM_RIGHT), and
    the causal cut and the sliding window (window_left, window_right; -1
    is no bound) are measured from there; softcap, above 0, caps each
    scaled score s to softcap * tanh(s / softcap). A row that sees no key
    is zeros."""

    batch: int
    heads: int
    kv_heads: int
    seq_q: int
    seq_k: int
    head_dim: int
    causal: bool
    dtype: str
    mode: str = FWD
    causal_align: str = TOP_LEFT
    window_left: int = -1
    window_right: int = -1
    softcap: float = 0.0

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
            mode=s.get("mode") or FWD,
        )

    @classmethod
    def from_params(cls, p):
        """The shape of attention's axes in canonical text (an OpCase's
        params: "batch": "2", "causal": "true", ...)."""
        shape = cls.from_json({**p, "causal": str(p.get("causal", "false")).lower() == "true"})
        return shape.with_masks(p)

    def with_masks(self, p):
        """The shape with the mask axes of params p (text, as a request's
        params hold them); an absent axis is its default."""
        align = p.get("causal_align") or TOP_LEFT
        if align not in (TOP_LEFT, BOTTOM_RIGHT):
            raise ValueError(f"causal_align {align!r} is not {TOP_LEFT} or {BOTTOM_RIGHT}")
        return dataclasses.replace(self, causal_align=align, window_left=int(p.get("window_left", -1)),
                                   window_right=int(p.get("window_right", -1)), softcap=float(p.get("softcap", 0)))

    @property
    def bottom_right(self):
        """Whether the mask sits at the bottom-right corner."""
        return self.causal_align == BOTTOM_RIGHT

    @property
    def windowed(self):
        return self.window_left >= 0 or self.window_right >= 0

    @property
    def aligned(self):
        """Whether the alignment changes which keys a row sees: bottom-right,
        seq_q != seq_k, and a causal cut or a window."""
        return self.bottom_right and self.seq_q != self.seq_k and (self.causal or self.windowed)

    @property
    def masked(self):
        """Whether the case has a mask beyond top-left causal: one a kernel
        that takes only is_causal cannot apply."""
        return self.aligned or self.windowed or self.softcap > 0

    @property
    def masks(self):
        """The masks the case needs a variant to declare (MASKS)."""
        return tuple(m for m, needed in (("bottom-right", self.aligned), ("window", self.windowed),
                                         ("softcap", self.softcap > 0)) if needed)

    @property
    def key_offset(self):
        """Query row i's key position minus i: seq_k - seq_q bottom-right,
        0 top-left."""
        return self.seq_k - self.seq_q if self.bottom_right else 0

    def mask_keywords(self):
        """The mask axes set away from their defaults, as keywords:
        causal_align (text), window_left, window_right (ints), softcap (a
        float); empty for a case with none."""
        return {name: getattr(self, name) for name, default in MASK_DEFAULTS.items()
                if getattr(self, name) != default}

    def mask_mod(self):
        """The case's mask as a FlexAttention mask_mod(b, h, q_idx, kv_idx):
        whether query row q_idx sees key kv_idx (broadcast index tensors
        work too). Softcap is no part of it (a score_mod)."""
        offset, causal, left, right = self.key_offset, self.causal, self.window_left, self.window_right

        def mask_mod(b, h, q_idx, kv_idx):
            pos = q_idx + offset
            seen = kv_idx >= 0
            if causal:
                seen = seen & (kv_idx <= pos)
            if left >= 0:
                seen = seen & (kv_idx >= pos - left)
            if right >= 0:
                seen = seen & (kv_idx <= pos + right)
            return seen

        return mask_mod

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
        text += " causal" if self.causal else ""
        text += " bottom-right" if self.bottom_right else ""
        if self.windowed:
            text += f" window {self.window_left},{self.window_right}"
        text += f" softcap {self.softcap:g}" if self.softcap else ""
        return text + (f" {self.mode}" if self.mode != FWD else "")


def capabilities(dtypes, causal=True, non_causal=True, grouped_query_heads=True,
                 unequal_seq_lens=True, head_dims=(), max_seq_len=0, max_elements=0,
                 needs_gpu=False, seq_multiple=1, modes=(FWD,), masks=()):
    """An sdk.Capabilities as JSON. modes are the attention modes (MODES)
    the variant runs; the host reads an absent or empty list as FWD alone.
    masks are the masks (MASKS) it applies beyond top-left causal, in the
    forward."""
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"mode {unknown[0]!r} is not one of {', '.join(MODES)}")
    unknown = [m for m in masks if m not in MASKS]
    if unknown:
        raise ValueError(f"mask {unknown[0]!r} is not one of {', '.join(MASKS)}")
    caps = {
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
        "modes": list(modes),
    }
    if masks:
        caps["masks"] = list(masks)
    return caps


def op_capabilities(dtypes, max_elements=0, needs_gpu=False, head_dims=(), grouped_query_heads=False,
                    causal=False, non_causal=False, masks=()):
    """An sdk.Capabilities as JSON for an op other than attention: an entry
    of a variant's "op_capabilities", or the "capabilities" of a variant
    whose one op is not attention. Every op reads dtypes, max_elements and
    needs_gpu; the attention-like ops (decode, varlen) also read head_dims
    (empty: any), grouped_query_heads, causal, non_causal and masks (MASKS
    the variant applies beyond plain and causal)."""
    unknown = [m for m in masks if m not in MASKS]
    if unknown:
        raise ValueError(f"mask {unknown[0]!r} is not one of {', '.join(MASKS)}")
    caps = {"dtypes": list(dtypes), "max_elements": max_elements, "needs_gpu": needs_gpu}
    if head_dims:
        caps["head_dims"] = list(head_dims)
    if grouped_query_heads:
        caps["grouped_query_heads"] = True
    if causal:
        caps["causal"] = True
    if non_causal:
        caps["non_causal"] = True
    if masks:
        caps["masks"] = list(masks)
    return caps


@dataclasses.dataclass
class Case:
    """One prepared attention case as a backend sees it: inputs already on
    the device."""

    case_id: str
    variant: str
    shape: Shape
    tunables: dict
    device: object  # torch.device
    q: object
    k: object
    v: object

    def moved(self):
        """The case on copies of its inputs (a new placement)."""
        return dataclasses.replace(self, q=self.q.clone(), k=self.k.clone(), v=self.v.clone())


@dataclasses.dataclass
class OpCase:
    """One prepared case of an op other than attention, or of attention in
    mode BWD or FWD_BWD, as a backend's prepare_op sees it: ``op`` names it
    (ops/ in Go), ``params`` are its axis values in canonical text ("4096",
    "fp16"), ``inputs`` its input tensors by name on the device, in the
    op's order, and ``outputs`` the TensorFile of each output, in the op's
    order (their dims and dtypes say what run() must return).

    For attention, ``shape`` is the case's Shape (its mode included):

    - BWD: inputs q [B, H, Sq, D], k and v [B, H_kv, Sk, D], o and do
      [B, H, Sq, D] (the case's dtype) and lse [B, H, Sq] (fp32; the
      natural log of each query row's softmax denominator, scale
      included); outputs dq, dk, dv. o and lse are the host's fp64
      reference forward (o rounded to the dtype), the same for every
      backend; run() does the backward alone.
    - FWD_BWD: inputs q, k, v, do; outputs o, dq, dk, dv, one call running
      the forward and then the backward.
    """

    case_id: str
    variant: str
    op: str
    params: dict
    tunables: dict
    device: object  # torch.device
    inputs: dict
    outputs: list
    shape: Shape = None  # attention's; None for other ops

    @property
    def mode(self):
        """Attention's mode (MODES); FWD for other ops."""
        return self.shape.mode if self.shape is not None else FWD

    def int(self, axis):
        """The value of an integer axis."""
        return int(self.params[axis])

    def moved(self):
        """The case on copies of its inputs (a new placement)."""
        return dataclasses.replace(self, inputs={name: t.clone() for name, t in self.inputs.items()})


class Kernel:
    """What a backend's prepare returns: one runnable call of the op.

    run() computes the op once and returns the output tensor (for an op
    with several outputs, a tuple of them in the op's order). When the
    kernel writes into buffers it owns, they are ``output`` (a tensor, or a
    tuple for several) and the core poisons them before the checked run;
    when the library allocates its own result (torch SDPA), ``output`` is
    None and the result is written as returned. session() is entered
    around every fetch and run (SDPA uses it to pin the backend once,
    outside the timed region)."""

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
    shape: Shape  # attention's; None for other ops
    output_path: str  # the first output's file
    case_id: str = ""
    label: str = ""
    calls: int = 0
    inputs: object = None  # the Case or OpCase the kernel was prepared from
    op: str = ATTENTION
    outputs: list = dataclasses.field(default_factory=list)  # TensorFile of each output (every OpCase)

    @property
    def attention_forward(self):
        """Whether this is attention's forward: one output, written to a
        path (sdk.Tensors' Output); every other case names its outputs
        (TensorFile), as an OpCase does."""
        return self.op == ATTENTION and (self.shape is None or self.shape.mode == FWD)

    @property
    def what(self):
        """The op (and attention's mode, where not the forward), as errors
        about its outputs name it."""
        if self.shape is not None and self.shape.mode != FWD:
            return f"{self.op} {self.shape.mode}"
        return self.op


def attention_shape(params):
    """The Shape of an attention prepare request: its "shape" (sdk.Shape),
    else, where that is absent or zero, its params (the op's axes as text).
    The mode is that of the params (the op's axis "mode"), else the
    shape's, else FWD; the masks are the params' (Shape.with_masks)."""
    axes = params.get("params") or {}
    given = params.get("shape") or {}
    shape = Shape.from_json(given) if given.get("batch") else Shape.from_params(axes)
    mode = axes.get("mode") or shape.mode
    if mode not in MODES:
        raise ValueError(f"attention mode {mode!r} is not one of {', '.join(MODES)}")
    return dataclasses.replace(shape.with_masks(axes), mode=mode)


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
    are not, so ncu profiles the op's call alone."""

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


def _recording(run):
    """run wrapped to remember what its latest call returned, and a getter
    for it. The remembered tensor is the timed output the host checks."""
    holder = [None]

    def recorded():
        holder[0] = run()
        return holder[0]

    return recorded, lambda: holder[0]


def autograd_run(forward, leaves, grad_output, mode):
    """Attention's backward modes through autograd, for a backend whose
    forward is differentiable (pytorch-sdpa, flash-attn-4).
    forward(*leaves) is its forward on leaves that require grad and returns
    the output, in the layout of the leaves; grad_output is dO in that
    layout.

    - BWD: the forward's graph is built once here, and each call is
      torch.autograd.grad(out, leaves, dO, retain_graph=True), the
      backward alone; it returns the grads.
    - FWD_BWD: each call runs the forward and then the grad; it returns
      (out, *grads).

    Returns (run, what the timed call is, for the facts)."""
    import torch

    if mode == BWD:
        out = forward(*leaves)

        def run():
            return torch.autograd.grad(out, leaves, grad_output, retain_graph=True)

        return run, ("the backward alone: the forward's graph is built once in Prepare, and each call is "
                     "torch.autograd.grad(out, (q, k, v), do, retain_graph=True)")
    if mode == FWD_BWD:
        def run():
            out = forward(*leaves)
            grads = torch.autograd.grad(out, leaves, grad_output)
            return (out.detach(), *grads)

        return run, "the forward and the backward, in one call"
    raise ValueError(f"attention mode {mode} has no backward")


# ---------------------------------------------------------------- worker


class Worker:
    """Answers the host's requests for one backend.

    A backend is an object with ``version``, ``build``, ``variants()`` (a
    list of sdk.Variant as JSON), ``prepare(case) -> Kernel`` for
    attention's forward and, when a variant lists other ops or attention
    modes besides FWD, ``prepare_op(case) -> Kernel`` for an OpCase."""

    def __init__(self, backend, device):
        self.backend = backend
        self.device = device
        self.cases = {}
        self._timer = None
        self._spacer = None  # the spacer in front of the current placement (_mover)
        self._host_ns_per_call = 0  # one call's host time in the last Run's CUPTI windows
        self._variants = {v["name"]: v for v in backend.variants()}
        # CUPTI's first session costs seconds: paid here, while the host
        # starts every plugin at once, rather than in a row's warm-up.
        # Under a profiler (ncu) CUPTI is the profiler's.
        self.profiler_start_s = 0.0
        if device.type == "cuda" and not under_profiler():
            import torch

            self.profiler_start_s = cupti.start_profiler(torch)

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
        # The bridge has checked the tunables (sdk.ResolveTunables) and the
        # capabilities in Go before the request got here.
        tunables = params.get("tunables") or {}
        op = params.get("op") or ATTENTION
        shape = attention_shape(params) if op == ATTENTION else None
        if shape is not None and shape.mode == FWD:
            (q, k, v), loaded = load_inputs(params["files"], shape, self.device)
            case = Case(case_id, variant["name"], shape, tunables, self.device, q, k, v)
            outputs, output_path = [], params["files"]["Output"]
        else:
            # Every other op, and attention's backward modes: named tensors
            # in and out, built by the backend's prepare_op.
            inputs, loaded = load_tensors([TensorFile.from_json(t) for t in params.get("inputs") or ()], self.device)
            outputs = [TensorFile.from_json(t) for t in params.get("outputs") or ()]
            if not outputs:
                raise ValueError(f"op {op}: the request names no output file")
            case = OpCase(case_id, variant["name"], op, dict(params.get("params") or {}), tunables, self.device,
                          inputs, outputs, shape)
            output_path = outputs[0].path
        try:
            kernel = self._build(case)
        except Unsupported as refused:
            return {"loaded_sha256": loaded, "diagnostics": [diagnostic("unsupported", refused.summary, refused.detail)]}
        label = row_label(variant["name"], tunables)
        self.cases[case_id] = PreparedCase(kernel, getattr(case, "shape", None), output_path, case_id, label,
                                           inputs=case, op=op, outputs=outputs)
        return {"loaded_sha256": loaded, "facts": kernel.facts}

    def _build(self, case):
        """The backend's kernel for case: prepare for attention's forward,
        prepare_op for its backward modes and for any other op."""
        if isinstance(case, Case):
            return self.backend.prepare(case)
        prepare_op = getattr(self.backend, "prepare_op", None)
        if prepare_op is None:
            # The bridge refuses an op (or a mode) a variant does not list;
            # a variant that lists one its module cannot build is the
            # module's bug.
            listed = f"attention mode {case.mode}" if case.op == ATTENTION else f"op {case.op}"
            raise ValueError(f"variant {case.variant} lists {listed}, but its backend has no prepare_op")
        return prepare_op(case)

    def _case(self, params):
        case = self.cases.get(params["case_id"])
        if case is None:
            raise KeyError(f"case {params['case_id']!r} is not prepared")
        return case

    def fetch(self, params):
        case = self._case(params)
        kernel = case.kernel
        with kernel.session():
            for buffer in as_tensors(kernel.output):
                poison(buffer)
            out = kernel.run()
            self._synchronize()
        if not case.attention_forward:
            for f, tensor in zip(case.outputs, check_outputs(out, case.outputs, f"{case.what} of {case.label}")):
                write_tensor(f.path, tensor)
            return {}
        if tuple(out.shape) != case.shape.q_shape:
            raise ValueError(f"output shape {tuple(out.shape)}, want {case.shape.q_shape}")
        write_tensor(case.output_path, out)
        return {}

    def run(self, params):
        phases = PhaseClock()
        case = self._case(params)
        kernel = case.kernel
        m = Measurement.from_json(params.get("measurement") or {})
        cold = m.l2 == "cold"
        timer = self.timer()
        output_path = params.get("output") or ""
        timed = self._timed_outputs(case, params)
        run, last_output = _recording(lambda: case.kernel.run())
        profiled = under_profiler() and self.device.type == "cuda"
        if profiled:
            import torch

            run = nvtx_marked(run, case, torch.cuda.nvtx)
        with kernel.session():
            if timed:
                for buffer in as_tensors(kernel.output):
                    poison(buffer)
            before = timer.device_state()
            facts = {}
            move = self._mover(case, poison_output=bool(timed)) if self.device.type == "cuda" else None
            try:
                kernel_times, method, blocks = self._kernel_times(m, run, cold, facts, profiled, move, phases)
            finally:
                self._spacer = None
            clock, timer_facts, diagnostics = timer.sampling_report()
            call_times = self._call_times(m, kernel_times, method, run, cold)
            phases.mark(PHASE_CALLS)
            after = timer.device_state()
            cross = [] if profiled or m.no_cross_check else self._cross_check(case.kernel, method, cold, facts)
            phases.mark(PHASE_CROSS_CHECK)
            if timed:
                # The cross-check calls ran after the timed ones: write what
                # the last timed call returned (or left in the kernel's buffer).
                self._synchronize()
                if case.attention_forward:
                    write_tensor(output_path, last_output())
                else:
                    outputs = check_outputs(last_output(), case.outputs, f"{case.what} of {case.label}")
                    for f, tensor in zip(timed, outputs):
                        write_tensor(f.path, tensor)
                phases.mark(PHASE_OUTPUT)
        facts.update(timer_facts)
        if profiled:
            facts["cross_check_note"] = "left out: the worker ran under a profiler, which holds CUPTI"
        elif m.no_cross_check:
            facts["cross_check_note"] = "left out: the request asked for the timed calls alone"
        if cold:
            facts["l2_flush_bytes"] = str(timer.flush_bytes)
        facts[PHASES_FACT] = phases.encode()
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

    def _call_times(self, m, kernel_times, method, run, cold):
        """m.call_samples host-inclusive call times. Where the kernel times
        are wall-clock times of whole calls (a CPU), they are the same
        measure: the last of them serve (wall_clock_call_samples)."""
        timer = self.timer()
        if method == WallClockTimer.method:
            return wall_clock_call_samples(kernel_times, m.call_samples, lambda: timer.call_sample(run, cold))
        return [timer.call_sample(run, cold) for _ in range(m.call_samples)]

    def _timed_outputs(self, case, params):
        """Where Run writes the outputs of its last timed call: for
        attention's forward, the request's output path; for other ops (and
        attention's backward modes), its outputs (every output, in the op's
        order), else the first output at its output path. Empty when the
        host asked for none."""
        output_path = params.get("output") or ""
        if case.attention_forward:
            return [output_path] if output_path else []
        timed = [TensorFile.from_json(t) for t in params.get("outputs") or ()]
        if timed:
            if len(timed) != len(case.outputs):
                raise ValueError(f"run names {len(timed)} timed outputs, the case has {len(case.outputs)}")
            return timed
        return [dataclasses.replace(case.outputs[0], path=output_path)] if output_path else []

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
                moved = old.moved()
                kernel = self._build(moved)
            except torch.cuda.OutOfMemoryError as why:
                raise StayPut(str(why)) from why
            if poison_output:
                for buffer in as_tensors(kernel.output):
                    poison(buffer)
            case.inputs, case.kernel = moved, kernel
            self._spacer = spacer

        return move

    def _kernel_times(self, m, run, cold, facts, profiled, move=None, phases=None):
        sampler = None
        if profiled:
            facts["cupti_fallback"] = "the worker runs under a profiler, which holds CUPTI"
        elif self.device.type == "cuda":
            import torch

            sampler = cupti.CuptiSampler(torch, run, cold, self.timer().flush,
                                         reference=os.environ.get(TIMING_REFERENCE_ENV) == "cupti")
        times = kernel_times(m, run, cold, self.timer(), sampler, facts, move, phases)
        # One call's host time as the CUPTI windows saw it, for the
        # cross-check's first probes (CudaTimer.prepare_sampling).
        self._host_ns_per_call = sampler.host_ns_per_call if sampler is not None and times[1] == sampler.method else 0
        return times

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
        setup = timer.prepare_sampling(kernel.run, cold, self._host_ns_per_call)
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
