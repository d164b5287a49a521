"""The python-file backend: one user's .py file served as a FlashCore bench
backend, with no Go to write.

Where to start: ``Backend`` loads the file named by $FLASHCORE_PYTHON_FILE
(the python-file plugin sets it) with ``load_kernel_file``, and serves it as
one variant named $FLASHCORE_BACKEND_NAME. The file defines one or more of

    def attention(q, k, v, *, causal: bool, scale: float) -> torch.Tensor
    def attention_backward(q, k, v, o, do, lse, *, causal: bool, scale: float) -> (dq, dk, dv)
    def attention_forward_backward(q, k, v, do, *, causal: bool, scale: float) -> (o, dq, dk, dv)
    def rmsnorm(x, weight, *, eps: float) -> torch.Tensor
    def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal: bool, scale: float) -> torch.Tensor
    def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal: bool,
                         scale: float) -> torch.Tensor

attention's causal masking is top-left aligned (query row i sees keys j <=
i), and attention() may take the keywords ``causal_align=`` ("top-left" or
"bottom-right": query row i at key position Sk - Sq + i), ``window_left=``,
``window_right=`` and ``softcap=`` (ATTENTION_OPTIONS): each is passed only
when the case sets it away from its default, and a case that sets one is a
skip for an attention() that does not take it (the forward alone; the
backward functions take none). attention with q [B, H, Sq, D] and k, v
[B, H_kv, Sk, D], rmsnorm with x
[rows, cols] and weight [cols], decode (a paged KV cache) with q [B, q_len,
H, D], k_cache and v_cache [num_pages, page_size, H_kv, D], block_table [B,
max_pages] and cache_seqlens [B] (int32), on the worker's device; the
variant offers the ops whose functions the file defines. decode's causal
masking is bottom-right aligned, and it may take the keywords
``window_left=`` and ``softcap=`` (DECODE_OPTIONS): a case that sets one away
from its default is a skip for a decode() without it. attention_varlen serves
the op varlen (sequences packed end to end): q [total_q, H, D], k and v
[total_k, H_kv, D], cu_seqlens_q and cu_seqlens_k [B + 1] (int32), and
max_seqlen_q, max_seqlen_k the longest sequences (Python ints); causal is
bottom-right aligned, and it may take ``window_left=``, ``window_right=``
and ``softcap=`` (VARLEN_OPTIONS), likewise. The three attention functions
are its modes (ATTENTION_FUNCTIONS): ``attention`` the forward (mode fwd),
``attention_backward`` the backward alone (mode bwd: o and do [B, H, Sq,
D] in q's dtype, lse [B, H, Sq] fp32, the natural log of each query row's
softmax denominator with the scale applied, o and lse from the host's
reference forward; it returns dq like q and dk, dv like k), and
``attention_forward_backward`` both in one call, as training runs them
(mode fwd+bwd); the variant's capabilities list the modes whose functions
the file defines. The file may define ``capabilities()`` (a dict of
CAPABILITY_DEFAULTS' keys), ``TUNABLES`` (name -> list of values; every
function then takes ``config=``) and ``setup(shape)``, called outside the
timed region of an attention case of any mode (``shape.mode`` says which).
The worker core (flashcore_worker.py) does everything else: loading and
hashing the inputs, poisoning, the measurement contract, errors.

A file that cannot be loaded makes the backend unavailable with a reason
that names the file and the line (``FileUnavailable``); worker_main.py
reports it as is.
"""

import hashlib
import importlib.util
import inspect
import math
import os
import platform
import sys
import traceback
import types

import flashcore_triton_interpreter
import flashcore_worker as core

FILE_ENV = "FLASHCORE_PYTHON_FILE"
NAME_ENV = "FLASHCORE_BACKEND_NAME"

SIGNATURE = "attention(q, k, v, *, causal, scale)"
BACKWARD_SIGNATURE = "attention_backward(q, k, v, o, do, lse, *, causal, scale)"
FORWARD_BACKWARD_SIGNATURE = "attention_forward_backward(q, k, v, do, *, causal, scale)"
RMSNORM_SIGNATURE = "rmsnorm(x, weight, *, eps)"
DECODE_SIGNATURE = "decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal, scale)"
VARLEN_SIGNATURE = ("attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, "
                    "causal, scale)")

# The functions a file may define, by op (ops/ in Go; `flashcore list
# --ops` prints each op's contract): the signature and the keywords the
# worker passes.
OP_FUNCTIONS = {
    "attention": (SIGNATURE, ("causal", "scale")),
    "rmsnorm": (RMSNORM_SIGNATURE, ("eps",)),
    "decode": (DECODE_SIGNATURE, ("causal", "scale")),
    "varlen": (VARLEN_SIGNATURE, ("causal", "scale")),
}
# The function's name where it is not the op's.
OP_FUNCTION_NAMES = {"varlen": "attention_varlen"}

# decode's inputs, in the op's order (ops/decode in Go).
DECODE_INPUTS = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens")
# The keywords decode() may take besides causal and scale: keyword -> (the
# mask it applies, as capabilities name it (core.MASKS), the case's axis
# value that means none, and the type it is passed as). A file whose
# decode() takes one declares the mask; a case that sets the axis away
# from that value is a skip for one that does not.
DECODE_OPTIONS = {
    "window_left": ("window", "-1", int),
    "softcap": ("softcap", "0", float),
}

# varlen's inputs, in the op's order (ops/varlen in Go), and the keywords
# attention_varlen() may take besides causal and scale, as DECODE_OPTIONS.
# window_left and window_right are one mask, "window": a function that
# takes either declares it, and a case that sets the other is a skip.
VARLEN_INPUTS = ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_k")
VARLEN_OPTIONS = {
    "window_left": ("window", "-1", int),
    "window_right": ("window", "-1", int),
    "softcap": ("softcap", "0", float),
}

# The keywords attention() may take besides causal and scale, as
# DECODE_OPTIONS: dense attention's masks (its forward alone).
# causal_align "bottom-right" is the mask "bottom-right"; it is passed, and
# needed, only where it moves the mask (Sq != Sk, causal or a window).
ATTENTION_OPTIONS = {
    "causal_align": ("bottom-right", core.TOP_LEFT, str),
    "window_left": ("window", "-1", int),
    "window_right": ("window", "-1", int),
    "softcap": ("softcap", "0", float),
}

# Attention's functions by mode (core.MODES): the function's name, its
# signature, the keywords the worker passes, its inputs (the case's named
# tensors, in order) and its outputs (in order). A file offers attention
# in the modes whose functions it defines.
ATTENTION_FUNCTIONS = {
    core.FWD: ("attention", SIGNATURE, ("causal", "scale"), ("q", "k", "v"), ("o",)),
    core.BWD: ("attention_backward", BACKWARD_SIGNATURE, ("causal", "scale"),
               ("q", "k", "v", "o", "do", "lse"), ("dq", "dk", "dv")),
    core.FWD_BWD: ("attention_forward_backward", FORWARD_BACKWARD_SIGNATURE, ("causal", "scale"),
                   ("q", "k", "v", "do"), ("o", "dq", "dk", "dv")),
}
# Which input each output is like (its dims, dtype and device), and the
# layout errors name.
_OUTPUT_LIKE = {"o": ("q", "[B, H, Sq, D]"), "dq": ("q", "[B, H, Sq, D]"), "dk": ("k", "[B, H_kv, Sk, D]"),
                "dv": ("v", "[B, H_kv, Sk, D]")}

# What a file that defines no capabilities() is assumed to run: everything.
# The harness checks every output, so a shape the kernel gets wrong is a
# FAIL row that says so; declare the limits and those cases become skips.
# dtypes and needs_gpu apply to every op the file defines; head_dims,
# causal, non_causal and gqa to attention, decode and varlen; the other keys
# are attention's.
CAPABILITY_DEFAULTS = {
    "dtypes": ("fp16", "bf16", "fp32"),
    "head_dims": (),  # any
    "causal": True,  # causal masking (top-left aligned) supported
    "non_causal": True,  # unmasked attention supported
    "gqa": True,  # H_kv < H (grouped-query heads)
    "unequal_lengths": True,  # Sq != Sk
    "max_seq_len": 0,  # 0: no limit
    "seq_multiple": 1,  # Sq and Sk must be multiples of it
    "needs_gpu": False,
}

_DTYPE_NAMES = {"fp16": "fp16", "float16": "fp16", "half": "fp16", "bf16": "bf16", "bfloat16": "bf16",
                "fp32": "fp32", "float32": "fp32", "float": "fp32"}


class FileUnavailable(Exception):
    """The file cannot be served. ``unavailable`` is the whole reason, which
    worker_main.py passes on to the host unchanged."""

    def __init__(self, reason):
        super().__init__(reason)
        self.unavailable = reason


# ---------------------------------------------------------------- loading


def use_triton_interpreter(device):
    """Where there is no GPU, a Triton kernel can only run under Triton's
    CPU interpreter, which triton.jit chooses when the file is imported: so
    the worker sets TRITON_INTERPRET=1 before the import, unless the user
    set it either way. Under the interpreter triton.autotune runs one
    configuration without timing (flashcore_triton_interpreter), since its
    benchmarking needs a GPU driver."""
    if device.type != "cuda":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    if flashcore_triton_interpreter.interpreting():
        flashcore_triton_interpreter.install()


def load_module(path):
    """Imports the file at path as a module. Its folder goes on sys.path, so
    it can import modules that sit beside it."""
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem not in sys.modules and stem.isidentifier() else f"flashcore_user_{abs(hash(path))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise FileUnavailable(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and triton.jit look modules up by name
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        traceback.print_exc(file=sys.stderr)
        raise FileUnavailable(f"{where(exc, path)}: import failed: {last_line(exc)}") from exc
    return module


def last_line(exc):
    """The last line of the exception as Python prints it."""
    return traceback.format_exception_only(type(exc), exc)[-1].strip()


def where(exc, path):
    """path:line of the innermost point of exc's traceback in path (the line
    of a syntax error), or path alone."""
    if isinstance(exc, SyntaxError) and exc.filename == path and exc.lineno:
        return f"{path}:{exc.lineno}"
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__) if frame.filename == path]
    return f"{path}:{lines[-1]}" if lines else path


class KernelFile:
    """What a loaded file offers, checked: its function for each op
    (``functions``, in OP_FUNCTIONS' order), its attention function for
    each mode (``attention_modes``, in ATTENTION_FUNCTIONS' order), the ops
    it offers (``ops``), its capabilities, its tunables and its setup."""

    def __init__(self, path, module):
        self.path = path
        self.module = module
        self.functions = {}
        for op in OP_FUNCTIONS:
            fn = module_function(module, path, function_name(op))
            if fn is not None:
                self.functions[op] = fn
        self.attention_modes = {}
        for mode, (name, *_) in ATTENTION_FUNCTIONS.items():
            fn = module_function(module, path, name)
            if fn is not None:
                self.attention_modes[mode] = fn
        if not self.functions and not self.attention_modes:
            backward = " or ".join(ATTENTION_FUNCTIONS[m][0] for m in (core.BWD, core.FWD_BWD))
            raise FileUnavailable(f"{path} defines no function {' or '.join(s for s, _ in OP_FUNCTIONS.values())}"
                                  f" (nor {backward})")
        # The ops offered, in OP_FUNCTIONS' order: attention in any mode.
        self.ops = [op for op in OP_FUNCTIONS
                    if op in self.functions or (op == "attention" and self.attention_modes)]
        self.attention = self.functions.get("attention")
        self.rmsnorm = self.functions.get("rmsnorm")
        self.decode = self.functions.get("decode")
        self.varlen = self.functions.get("varlen")
        self.setup = module_function(module, path, "setup")
        self.tunables = parse_tunables(getattr(module, "TUNABLES", None), path)
        self.takes_out_by_op = {op: self._check_keywords(op, fn) for op, fn in self.functions.items()}
        for mode, fn in self.attention_modes.items():
            if mode != core.FWD:
                name, signature, keywords, _, _ = ATTENTION_FUNCTIONS[mode]
                self._check_keywords(name, fn, signature, keywords)
        self.takes_out = self.takes_out_by_op.get("attention", False)
        # The optional keywords attention() takes (ATTENTION_OPTIONS), in order.
        self.attention_options = ()
        if self.attention is not None:
            params = self._parameters(self.attention, "attention")
            self.attention_options = tuple(k for k in ATTENTION_OPTIONS if accepts(params, k))
        # The optional keywords decode() takes (DECODE_OPTIONS), in order.
        self.decode_options = ()
        if self.decode is not None:
            params = self._parameters(self.decode, "decode")
            self.decode_options = tuple(k for k in DECODE_OPTIONS if accepts(params, k))
        # The optional keywords attention_varlen() takes (VARLEN_OPTIONS), in order.
        self.varlen_options = ()
        if self.varlen is not None:
            params = self._parameters(self.varlen, function_name("varlen"))
            self.varlen_options = tuple(k for k in VARLEN_OPTIONS if accepts(params, k))
        self.setup_takes_config = self.setup is not None and accepts(self._parameters(self.setup, "setup"), "config")
        self.capabilities = parse_capabilities(self._call_capabilities(), path)

    @property
    def function_names(self):
        """The names of the functions the file defines, in the order ops
        and modes are listed."""
        names = [ATTENTION_FUNCTIONS[mode][0] for mode in self.attention_modes]
        return names + [function_name(op) for op in self.functions if op != "attention"]

    def _check_keywords(self, name, fn, signature=None, keywords=None):
        """Raises unless fn takes the keywords the worker passes to it (an
        op's function by default); returns whether it takes out=."""
        if signature is None:
            signature, keywords = OP_FUNCTIONS[name]
            name = function_name(name)
        params = self._parameters(fn, name)
        for keyword in keywords + (("config",) if self.tunables else ()):
            if not accepts(params, keyword):
                extra = " (it defines TUNABLES)" if keyword == "config" else ""
                raise FileUnavailable(f"{self.path}: {name}{inspect.signature(fn)} takes no keyword "
                                      f"{keyword!r}{extra}: define {signature[:-1]}"
                                      f"{', config' if self.tunables else ''})")
        return "out" in params

    def _parameters(self, fn, name):
        try:
            return inspect.signature(fn).parameters
        except (TypeError, ValueError) as exc:
            raise FileUnavailable(f"{self.path}: cannot read the signature of {name}: {exc}") from exc

    def _call_capabilities(self):
        fn = module_function(self.module, self.path, "capabilities")
        if fn is None:
            return {}
        try:
            return fn()
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            raise FileUnavailable(f"{where(exc, self.path)}: capabilities() failed: {last_line(exc)}") from exc


def load_kernel_file(path):
    """Loads and checks the file at path; raises FileUnavailable."""
    if not os.path.isfile(path):
        raise FileUnavailable(f"{path}: no such file")
    return KernelFile(path, load_module(path))


def function_name(op):
    """The name of the function a file defines for op."""
    return OP_FUNCTION_NAMES.get(op, op)


def module_function(module, path, name):
    """module.name when it is callable, None when absent."""
    fn = getattr(module, name, None)
    if fn is not None and not callable(fn):
        raise FileUnavailable(f"{path}: {name} is a {type(fn).__name__}, not a function")
    return fn


def accepts(params, keyword):
    """Whether a function with these parameters can be called with keyword=."""
    param = params.get(keyword)
    if param is not None:
        return param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY)
    return any(p.kind == p.VAR_KEYWORD for p in params.values())


def parse_capabilities(caps, path):
    """capabilities()'s dict over CAPABILITY_DEFAULTS, checked key by key."""
    if not isinstance(caps, dict):
        raise FileUnavailable(f"{path}: capabilities() returned {type(caps).__name__}, want a dict")
    unknown = sorted(set(caps) - set(CAPABILITY_DEFAULTS))
    if unknown:
        raise FileUnavailable(f"{path}: capabilities() returned unknown key {unknown[0]!r} "
                              f"(known: {', '.join(CAPABILITY_DEFAULTS)})")
    out = dict(CAPABILITY_DEFAULTS)
    for key, value in caps.items():
        out[key] = _capability(key, value, path)
    return out


def _capability(key, value, path):
    def bad(want):
        return FileUnavailable(f"{path}: capabilities()[{key!r}] is {value!r}, want {want}")

    default = CAPABILITY_DEFAULTS[key]
    if key == "dtypes":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise bad('a list such as ["fp16", "bf16"]')
        names = [_DTYPE_NAMES.get(str(d).removeprefix("torch.")) for d in value]
        if not names or None in names:
            raise bad('a non-empty list of "fp16", "bf16", "fp32" (or torch dtypes)')
        return tuple(dict.fromkeys(names))
    if key == "head_dims":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise bad("a list of ints (empty for any)")
        dims = list(value)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in dims):
            raise bad("a list of positive ints (empty for any)")
        return tuple(dims)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise bad("True or False")
        return value
    low = 1 if key == "seq_multiple" else 0
    if value is None and key == "max_seq_len":
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise bad(f"an int of at least {low}")
    return value


def parse_tunables(tunables, path):
    """TUNABLES as {name: {str(value): value}}, in the file's order; the
    first value of each is its default."""
    if tunables is None:
        return {}
    if not isinstance(tunables, dict):
        raise FileUnavailable(f"{path}: TUNABLES is a {type(tunables).__name__}, want a dict of name -> list of values")
    out = {}
    for name, values in tunables.items():
        if not isinstance(name, str) or not name:
            raise FileUnavailable(f"{path}: TUNABLES has the name {name!r}, want a non-empty string")
        if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__") or not list(values):
            raise FileUnavailable(f"{path}: TUNABLES[{name!r}] is {values!r}, want a non-empty list of values")
        by_text = {}
        for value in values:
            text = str(value)
            if text in by_text:
                raise FileUnavailable(f"{path}: TUNABLES[{name!r}] lists {text!r} twice")
            by_text[text] = value
        out[name] = by_text
    return out


# ---------------------------------------------------------------- serving


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_results(result, told, outputs, inputs):
    """Raises when a function (told) that returns several tensors returned
    something the host cannot check: not a tuple or list of as many, or one
    of them not like its input (_OUTPUT_LIKE). outputs are the names of
    what it returns, in order; inputs the case's tensors by name."""
    names = ", ".join(outputs)
    if not isinstance(result, (tuple, list)):
        raise TypeError(f"{told} returned {type(result).__name__}, want a tuple ({names})")
    if len(result) != len(outputs):
        raise ValueError(f"{told} returned {len(result)} values, want {len(outputs)} ({names})")
    for value, name in zip(result, outputs):
        like, layout = _OUTPUT_LIKE[name]
        check_result(value, f"{told}'s {name}", inputs[like].shape, layout, inputs[like], like, None)


def check_output(result, case, out, path):
    """Raises when attention() returned something the host cannot check."""
    check_result(result, f"attention() in {path}", case.shape.q_shape, "[B, H, Sq, D]", case.q, "q", out)


def check_result(result, told, dims, layout, like, like_name, out):
    """Raises when a function (told) returned something the host cannot
    check: not a tensor, or not of dims (layout names them) and of the
    dtype and device of its input like_name; or, given out=, another
    tensor than out."""
    import torch

    if not isinstance(result, torch.Tensor):
        raise TypeError(f"{told} returned {type(result).__name__}, want a torch.Tensor {layout}")
    if tuple(result.shape) != tuple(dims):
        raise ValueError(f"{told} returned shape {tuple(result.shape)}, want {tuple(dims)} ({layout}, as {like_name})")
    if result.dtype != like.dtype:
        raise ValueError(f"{told} returned {result.dtype}, want {like.dtype} ({like_name}'s dtype)")
    if result.device != like.device:
        raise ValueError(f"{told} returned a tensor on {result.device}, want {like.device} ({like_name}'s device)")
    if out is not None and result.data_ptr() != out.data_ptr():
        raise ValueError(f"{told} takes out= but returned another tensor: write into out and return it")


def at_user_line(exc, path):
    """exc, its traceback cut after the innermost frame in the user's file,
    so the error the host shows points at the user's line rather than into
    torch or triton. The full traceback is printed first (it goes to the
    plugin's stderr, whose tail the row keeps)."""
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    last = max((i for i, e in enumerate(entries) if e.tb_frame.f_code.co_filename == path), default=None)
    if last is None or last == len(entries) - 1:
        return exc
    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    trimmed = None
    for entry in reversed(entries[:last + 1]):
        trimmed = types.TracebackType(trimmed, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return exc.with_traceback(trimmed)


class Backend:
    """One variant, named as the backend, running the file's functions:
    attention through prepare, every other op through prepare_op."""

    def __init__(self, device):
        import torch

        path = os.environ.get(FILE_ENV, "")
        if not path:
            raise FileUnavailable(f"${FILE_ENV} names no file: the python-file plugin runs the file a suite names")
        self.device = device
        self.path = os.path.abspath(path)
        self.name = os.environ.get(NAME_ENV) or os.path.splitext(os.path.basename(path))[0]
        use_triton_interpreter(device)
        self.file = load_kernel_file(self.path)
        self.sha256 = sha256_of(self.path)
        self.version = str(getattr(self.file.module, "__version__", "") or f"sha256:{self.sha256[:12]}")
        self.build = (f"{self.path} (sha256 {self.sha256[:12]}), python {platform.python_version()}, "
                      f"torch {torch.__version__}")
        if device.type == "cuda":
            self.build += f", CUDA {torch.version.cuda}"

    def variants(self):
        caps = self.file.capabilities
        capabilities = core.capabilities(
            caps["dtypes"], causal=caps["causal"], non_causal=caps["non_causal"],
            grouped_query_heads=caps["gqa"], unequal_seq_lens=caps["unequal_lengths"],
            head_dims=caps["head_dims"], max_seq_len=caps["max_seq_len"], needs_gpu=caps["needs_gpu"],
            seq_multiple=caps["seq_multiple"], modes=tuple(self.file.attention_modes) or (core.FWD,),
            masks=tuple(dict.fromkeys(ATTENTION_OPTIONS[k][0] for k in self.file.attention_options)))
        tunables = [{"name": name, "values": list(values), "default": next(iter(values)),
                     "description": f"TUNABLES[{name!r}] of {os.path.basename(self.path)}"}
                    for name, values in self.file.tunables.items()]
        variant = {"name": self.name, "description": self._description(), "capabilities": capabilities}
        ops = list(self.file.ops)
        if ops != ["attention"]:  # no list means attention alone, as before ops
            variant["ops"] = ops
        op_capabilities = {}
        if self.file.decode is not None:
            op_capabilities["decode"] = self._decode_capabilities()
        if self.file.varlen is not None:
            op_capabilities["varlen"] = self._varlen_capabilities()
        if op_capabilities:
            variant["op_capabilities"] = op_capabilities
        if tunables:
            variant["tunables"] = tunables
        return [variant]

    def _decode_capabilities(self):
        """decode's capabilities: the file's dtypes, head dims, grouped-query
        heads, causal and non-causal, and GPU need, and the masks of the
        optional keywords its decode() takes."""
        caps = self.file.capabilities
        masks = [DECODE_OPTIONS[k][0] for k in self.file.decode_options]
        return core.op_capabilities(caps["dtypes"], needs_gpu=caps["needs_gpu"], head_dims=caps["head_dims"],
                                    grouped_query_heads=caps["gqa"], causal=caps["causal"],
                                    non_causal=caps["non_causal"], masks=masks)

    def _varlen_capabilities(self):
        """varlen's capabilities: as decode's, with the masks of the optional
        keywords attention_varlen() takes (window_left= or window_right=:
        the window)."""
        caps = self.file.capabilities
        masks = list(dict.fromkeys(VARLEN_OPTIONS[k][0] for k in self.file.varlen_options))
        return core.op_capabilities(caps["dtypes"], needs_gpu=caps["needs_gpu"], head_dims=caps["head_dims"],
                                    grouped_query_heads=caps["gqa"], causal=caps["causal"],
                                    non_causal=caps["non_causal"], masks=masks)

    def _description(self):
        doc = inspect.getdoc(self.file.module) or ""
        names = [f"{name}()" for name in self.file.function_names]
        functions = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        text = doc.splitlines()[0] if doc else f"{functions} of {os.path.basename(self.path)}"
        multiple = self.file.capabilities["seq_multiple"]
        if multiple > 1:
            text += f"; Sq and Sk must be multiples of {multiple} (other cases are skipped)"
        return text

    def prepare(self, case):
        if self.file.attention is None:
            raise ValueError(f"{self.path} defines no {SIGNATURE}")  # the bridge refuses attention first
        gap = self._seq_gap(case.shape)
        if gap:
            raise core.Unsupported(f"{self.name}: {gap}")
        config = self._config(case.tunables)
        self._setup(case, config)
        out = None
        if self.file.takes_out:
            import torch

            out = torch.empty(case.shape.q_shape, dtype=case.q.dtype, device=case.device)
        kwargs = {"causal": case.shape.causal, "scale": case.shape.scale, **self._mask_keywords(case.shape)}
        run = self._runner(self.file.attention, (case.q, case.k, case.v), kwargs, config, out)
        first = self._first_call(run, "attention")
        check_output(first, case, out, self.path)
        facts = self._facts(config, out, "attention")
        if case.shape.mask_keywords():
            facts["keywords"] = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        return core.Kernel(run, facts=facts, output=out)

    def _mask_keywords(self, shape):
        """The mask keywords attention() gets (ATTENTION_OPTIONS): those the
        case sets away from their defaults. A case that sets one attention()
        does not take is Unsupported (the bridge skips it first, from the
        capabilities' masks), but causal_align where it moves nothing."""
        kwargs = {}
        for keyword, value in shape.mask_keywords().items():
            mask, none, kind = ATTENTION_OPTIONS[keyword]
            if keyword in self.file.attention_options:
                kwargs[keyword] = value
            elif keyword != "causal_align" or shape.aligned:
                default = repr(none) if kind is str else none
                raise core.Unsupported(f"{self.name}: attention() takes no {keyword}= ({mask} mask), and the case "
                                       f"sets {keyword} {value:g}" if kind is float else
                                       f"{self.name}: attention() takes no {keyword}= ({mask} mask), and the case "
                                       f"sets {keyword} {value}",
                                       f"define attention(..., {keyword}={default}) to run such cases")
        return kwargs

    def prepare_op(self, case):
        """Attention's backward modes (prepare_backward), decode
        (prepare_decode), or rmsnorm: the file's rmsnorm(x, weight, eps=)
        on the case, into an output the harness allocates when the
        function takes out=."""
        if case.op == core.ATTENTION:
            return self.prepare_backward(case)
        if case.op == "decode":
            return self.prepare_decode(case)
        if case.op == "varlen":
            return self.prepare_varlen(case)
        fn = self.file.functions.get(case.op)
        if case.op != "rmsnorm" or fn is None:
            raise ValueError(f"{self.path} defines no function for op {case.op}")  # the bridge refuses it first
        config = self._config(case.tunables)
        x, weight = case.inputs["x"], case.inputs["weight"]
        out = None
        if self.file.takes_out_by_op[case.op]:
            import torch

            out = torch.empty(case.outputs[0].dims, dtype=x.dtype, device=case.device)
        run = self._runner(fn, (x, weight), {"eps": core.RMSNORM_EPS}, config, out)
        first = self._first_call(run, case.op)
        check_result(first, f"rmsnorm() in {self.path}", case.outputs[0].dims, "[rows, cols]", x, "x", out)
        return core.Kernel(run, facts=self._facts(config, out, case.op), output=out)

    def prepare_decode(self, case):
        """decode: the file's decode(q, k_cache, v_cache, block_table,
        cache_seqlens, causal=, scale=) on the case, with window_left= and
        softcap= where it takes them, into an output the harness allocates
        when it takes out=. A case that sets window_left or softcap away
        from its default is Unsupported for a decode() that does not take
        it (the bridge skips it first, from the capabilities' masks)."""
        fn = self.file.decode
        if fn is None:
            raise ValueError(f"{self.path} defines no {DECODE_SIGNATURE}")  # the bridge refuses the op first
        q = case.inputs["q"]
        kwargs = {"causal": str(case.params.get("causal", "true")).lower() == "true",
                  "scale": 1 / math.sqrt(q.shape[-1])}
        for keyword, (mask, none, kind) in DECODE_OPTIONS.items():
            text = str(case.params.get(keyword, none))
            value = kind(text)
            if keyword in self.file.decode_options:
                kwargs[keyword] = value
            elif value != kind(none):
                raise core.Unsupported(f"{self.name}: decode() takes no {keyword}= ({mask} mask), and the case sets "
                                       f"{keyword} {text}", f"define decode(..., {keyword}={none}) to run such cases")
        config = self._config(case.tunables)
        out = None
        if self.file.takes_out_by_op["decode"]:
            import torch

            out = torch.empty(case.outputs[0].dims, dtype=q.dtype, device=case.device)
        run = self._runner(fn, tuple(case.inputs[n] for n in DECODE_INPUTS), kwargs, config, out)
        first = self._first_call(run, "decode")
        check_result(first, f"decode() in {self.path}", case.outputs[0].dims, "[B, q_len, H, D]", q, "q", out)
        facts = self._facts(config, out, "decode")
        facts["keywords"] = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        return core.Kernel(run, facts=facts, output=out)

    def prepare_varlen(self, case):
        """varlen: the file's attention_varlen(q, k, v, cu_seqlens_q,
        cu_seqlens_k, max_seqlen_q, max_seqlen_k, causal=, scale=) on the
        case, with window_left=, window_right= and softcap= where it takes
        them (a case that sets one it does not take is Unsupported), into
        an output the harness allocates when it takes out=. max_seqlen_q
        and max_seqlen_k are the params seq_q and seq_k (the longest
        sequences), else read from the cu_seqlens."""
        fn = self.file.varlen
        if fn is None:
            raise ValueError(f"{self.path} defines no {VARLEN_SIGNATURE}")  # the bridge refuses the op first
        q = case.inputs["q"]
        kwargs = {"causal": str(case.params.get("causal", "true")).lower() == "true",
                  "scale": 1 / math.sqrt(q.shape[-1])}
        for keyword, (mask, none, kind) in VARLEN_OPTIONS.items():
            text = str(case.params.get(keyword, none))
            value = kind(text)
            if keyword in self.file.varlen_options:
                kwargs[keyword] = value
            elif value != kind(none):
                raise core.Unsupported(f"{self.name}: attention_varlen() takes no {keyword}= ({mask} mask), and "
                                       f"the case sets {keyword} {text}",
                                       f"define attention_varlen(..., {keyword}={none}) to run such cases")
        cu_q, cu_k = case.inputs["cu_seqlens_q"], case.inputs["cu_seqlens_k"]
        max_q = int(case.params.get("seq_q") or int((cu_q[1:] - cu_q[:-1]).max()))
        max_k = int(case.params.get("seq_k") or max(max_q, int((cu_k[1:] - cu_k[:-1]).max())))
        config = self._config(case.tunables)
        out = None
        if self.file.takes_out_by_op["varlen"]:
            import torch

            out = torch.empty(case.outputs[0].dims, dtype=q.dtype, device=case.device)
        args = tuple(case.inputs[n] for n in VARLEN_INPUTS) + (max_q, max_k)
        run = self._runner(fn, args, kwargs, config, out)
        first = self._first_call(run, "attention_varlen")
        check_result(first, f"attention_varlen() in {self.path}", case.outputs[0].dims, "[total_q, H, D]", q, "q",
                     out)
        facts = self._facts(config, out, "attention_varlen")
        facts["keywords"] = ", ".join(f"{k}={v}" for k, v in kwargs.items())
        facts["max_seqlen"] = f"q {max_q}, k {max_k}"
        return core.Kernel(run, facts=facts, output=out)

    def prepare_backward(self, case):
        """Attention in mode bwd (attention_backward on q, k, v, o, do and
        lse) or fwd+bwd (attention_forward_backward on q, k, v and do). The
        function allocates what it returns: no out= is passed, since a
        backward kernel that accumulates dK and dV needs them zeroed, not
        poisoned."""
        s = case.shape
        fn = self.file.attention_modes.get(s.mode)
        name, signature, _, inputs, outputs = ATTENTION_FUNCTIONS[s.mode]
        if fn is None:
            raise ValueError(f"{self.path} defines no {signature}")  # the bridge refuses the mode first
        gap = self._seq_gap(s)
        if gap:
            raise core.Unsupported(f"{self.name}: {gap}")
        config = self._config(case.tunables)
        self._setup(case, config)
        run = self._runner(fn, tuple(case.inputs[n] for n in inputs), {"causal": s.causal, "scale": s.scale},
                           config, None)
        first = self._first_call(run, name)
        check_results(first, f"{name}() in {self.path}", outputs, case.inputs)
        facts = self._facts(config, None, name)
        facts["function"] = f"{name}() of {os.path.basename(self.path)}"
        if s.mode == core.BWD:
            facts["backward_inputs"] = "the host's o and lse (its fp64 reference forward; o rounded to the dtype)"
        return core.Kernel(run, facts=facts)

    def _first_call(self, run, op):
        """The case's first call, in Prepare: NotImplementedError there
        refuses the case."""
        try:
            return run()
        except NotImplementedError as refused:
            raise core.Unsupported(f"{self.name}: {refused or f'{op}() raised NotImplementedError'}") from refused

    def _seq_gap(self, shape):
        multiple = self.file.capabilities["seq_multiple"]
        if multiple > 1 and (shape.seq_q % multiple or shape.seq_k % multiple):
            return f"Sq {shape.seq_q} and Sk {shape.seq_k} must be multiples of {multiple}"
        return None

    def _config(self, chosen):
        """The values of every tunable: the suite's choice, else the first."""
        config = {}
        for name, values in self.file.tunables.items():
            text = chosen.get(name)
            if text is not None and text not in values:
                raise ValueError(f"tunable {name}: value {text!r} not in TUNABLES (allowed: {', '.join(values)})")
            config[name] = values[text] if text is not None else next(iter(values.values()))
        unknown = sorted(set(chosen) - set(self.file.tunables))
        if unknown:
            raise ValueError(f"unknown tunable {unknown[0]!r}: {os.path.basename(self.path)} defines "
                             f"{', '.join(self.file.tunables) or 'no TUNABLES'}")
        return config

    def _setup(self, case, config):
        if self.file.setup is None:
            return
        kwargs = {"config": config} if self.file.tunables and self.file.setup_takes_config else {}
        try:
            self.file.setup(case.shape, **kwargs)
        except NotImplementedError as refused:
            raise core.Unsupported(f"{self.name}: {refused or 'setup() raised NotImplementedError'}") from refused
        except Exception as exc:
            raise at_user_line(exc, self.path)

    def _runner(self, fn, args, kwargs, config, out):
        """One call of the file's function fn on args, as the timed region
        calls it. The try costs nothing unless it raises."""
        path = self.path
        kwargs = dict(kwargs)
        if self.file.tunables:
            kwargs["config"] = config
        if out is not None:
            kwargs["out"] = out

        def run():
            try:
                return fn(*args, **kwargs)
            except NotImplementedError:
                raise
            except Exception as exc:
                raise at_user_line(exc, path)

        return run

    def _facts(self, config, out, op):
        facts = {"file": self.path, "file_sha256": self.sha256}
        if config:
            facts["config"] = ", ".join(f"{name}={value}" for name, value in config.items())
        if out is not None:
            facts["output_poison"] = f"applied: {op}(out=) writes the buffer the harness poisons"
        elif op in OP_FUNCTIONS or op in OP_FUNCTION_NAMES.values():
            facts["output_poison"] = f"not applied: {op}() allocates its output; the returned tensor is written"
        else:  # a backward function, of several outputs
            facts["output_poison"] = f"not applied: {op}() allocates its outputs; the returned tensors are written"
        return facts
