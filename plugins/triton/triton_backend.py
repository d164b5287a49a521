"""The triton backend: FlashCore bench's own FlashAttention forward kernel
(triton_attention.py) and backward pass (triton_attention_bwd.py),
autotuned on a GPU, its split-KV paged decode kernel (triton_decode.py)
for the op "decode", and its packed variable-length prefill kernel
(triton_varlen.py) for the op "varlen".

Where to start: Backend.prepare allocates the output buffer the forward
kernel writes into (the core poisons it before the checked run) and runs the
case once, which autotunes it; the chosen tile configuration goes into the
facts. Backend.prepare_op does the same for attention's modes "bwd" (dQ, dK
and dV from Q, K, V, O, dO and the forward's log-sum-exp: only the backward
kernels run) and "fwd+bwd" (the forward, storing its log-sum-exp, then the
backward), which the core hands over as an OpCase, and for the op "decode"
(q against a paged KV cache through a block table; the number of splits
comes from triton_decode's heuristic) and "varlen" (sequences of different
lengths packed end to end, read through cu_seqlens).

Without a GPU, Triton's interpreter runs the kernel on the CPU with NumPy,
one program at a time: correct but slow, so the variant declares small
limits there and uses one small fixed configuration. Triton 3.6's
interpreter reads bfloat16 tensors as garbage and fails on NumPy >= 2.4
(triton-lang/triton#9171), so in interpreter mode bf16 is not offered and
a too-new NumPy makes the backend unavailable with that reason.
"""

import inspect
import os
import platform

# The worker computes Triton's cache key while torch imports (worker_main,
# warm_compiler_key), on a GPU: this backend's first kernel needs it.
COMPILER = "triton"

import torch  # noqa: E402

if not torch.cuda.is_available():
    # Must be set before triton is imported: it selects the interpreter.
    os.environ["TRITON_INTERPRET"] = "1"

import triton  # noqa: E402

import flashcore_worker as core  # noqa: E402
import triton_attention  # noqa: E402
import triton_attention_bwd  # noqa: E402
import triton_decode  # noqa: E402
import triton_varlen  # noqa: E402
from flashcore_serving import DECODE_INPUTS, VARLEN_INPUTS, Decode, Varlen  # noqa: E402, F401

# Interpreter limits: a case of this size takes seconds, not minutes.
INTERPRETER_MAX_SEQ_LEN = 256
INTERPRETER_MAX_ELEMENTS = 1 << 16
# Attention's modes: the forward alone, the backward alone, both in one call.
MODES = ("fwd", "bwd", "fwd+bwd")
# Each mode's inputs and outputs by name, in the op's order.
MODE_INPUTS = {"fwd": ("q", "k", "v"), "bwd": ("q", "k", "v", "o", "do", "lse"), "fwd+bwd": ("q", "k", "v", "do")}
MODE_OUTPUTS = {"fwd": ("o",), "bwd": ("dq", "dk", "dv"), "fwd+bwd": ("o", "dq", "dk", "dv")}
# The decode op (triton_decode.py): its output (its inputs, in the op's
# order, are flashcore_serving's DECODE_INPUTS).
DECODE = "decode"
DECODE_OUTPUTS = ("o",)
# The head dims decode declares (the kernel takes any power of two from 16)
# and the masks it applies besides causal.
DECODE_HEAD_DIMS = (64, 128)
DECODE_MASKS = ("window", "softcap")
# Under the interpreter decode's time grows with the cache it walks and the
# rows it combines: 2^18 elements per tensor (e.g. 32 pages of 16 slots,
# 4 kv heads, head dim 128) take about a second.
INTERPRETER_DECODE_MAX_ELEMENTS = 1 << 18
# The varlen op (triton_varlen.py): its output (its inputs are
# flashcore_serving's VARLEN_INPUTS), the head dims it declares (the kernel
# takes any power of two from 16) and the masks it applies besides causal
# (window is window_left and window_right).
VARLEN = "varlen"
VARLEN_OUTPUTS = ("o",)
VARLEN_HEAD_DIMS = (64, 128)
VARLEN_MASKS = ("window", "softcap")
# Under the interpreter varlen's time grows with the tokens packed: 2^17
# elements per tensor (e.g. 512 tokens of 4 heads at head dim 64) take a
# few seconds causal.
INTERPRETER_VARLEN_MAX_ELEMENTS = 1 << 17


def check_interpreter_numpy():
    """Refuses NumPy >= 2.4 under Triton's interpreter, which breaks on it."""
    import numpy

    major, minor = (int(part) for part in numpy.__version__.split(".")[:2])
    if (major, minor) >= (2, 4):
        raise RuntimeError(f"Triton {triton.__version__}'s CPU interpreter fails with NumPy {numpy.__version__}; "
                           "install numpy<2.4 (python/requirements.txt pins it)")




def attention_capabilities(dtypes, **limits):
    """core.capabilities for attention in every mode of MODES: through its
    modes parameter where the core has one, else with the "modes" key added."""
    if "modes" in inspect.signature(core.capabilities).parameters:
        return core.capabilities(dtypes, modes=MODES, **limits)
    caps = core.capabilities(dtypes, **limits)
    caps["modes"] = list(MODES)
    return caps


def decode_capabilities(dtypes, head_dims=DECODE_HEAD_DIMS, masks=DECODE_MASKS, **limits):
    """core.op_capabilities for decode (and varlen, with its head dims and
    masks): head dims, grouped-query heads, both masking modes and the
    masks besides causal, through op_capabilities' keyword arguments where
    the core has them, else added by hand."""
    wanted = {"head_dims": list(head_dims), "grouped_query_heads": True, "causal": True, "non_causal": True,
              "masks": list(masks)}
    accepted = inspect.signature(core.op_capabilities).parameters
    caps = core.op_capabilities(dtypes, **{k: v for k, v in wanted.items() if k in accepted}, **limits)
    for key, value in wanted.items():
        caps.setdefault(key, value)
    return caps


def varlen_capabilities(dtypes, **limits):
    """core.op_capabilities for varlen: as decode's, with varlen's head dims
    and masks."""
    return decode_capabilities(dtypes, head_dims=VARLEN_HEAD_DIMS, masks=VARLEN_MASKS, **limits)


def tunables():
    """The forward kernel's launch parameters as the variant's tunables (see
    triton_attention.TUNABLES): "auto" is the default, the autotuner. They
    apply to attention alone: decode and varlen pick their own launch."""
    return [{"name": name, "values": list(values), "default": "auto", "ops": [core.ATTENTION],
             "description": TUNABLE_DESCRIPTIONS[name]} for name, values in triton_attention.TUNABLES.items()]


TUNABLE_DESCRIPTIONS = {
    "BLOCK_M": "query rows per program (auto: the autotuner's choice)",
    "BLOCK_N": "keys per inner-loop block (auto: the autotuner's choice)",
    "num_warps": "warps per program (auto: the autotuner's choice)",
    "num_stages": "software-pipeline stages of the K/V loads (auto: the autotuner's choice)",
}


def refusable(error):
    """Whether a fixed configuration's failure is the configuration's fault
    (too much shared memory, too many registers, a shape Triton's compiler
    rejects) rather than the backend's: such a configuration is refused."""
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"OutOfResources", "CompilationError", "CompileTimeAssertionFailure", "PTXASError"})


class Backend:
    def __init__(self, device):
        self.device = device
        self.interpreted = device.type != "cuda"
        if self.interpreted:
            check_interpreter_numpy()
        self.version = triton.__version__
        self.build = f"python {platform.python_version()}, triton {triton.__version__}, torch {torch.__version__}"
        if self.interpreted:
            self.build += ", TRITON_INTERPRET=1"

    def variants(self):
        """One variant, "triton": attention in every mode (its capabilities),
        decode and varlen (their op_capabilities entries)."""
        ops = [core.ATTENTION, DECODE, VARLEN]
        if self.interpreted:
            description = (f"own FlashAttention forward and backward, split-KV paged decode and varlen prefill "
                           f"under Triton's CPU interpreter (no GPU here): slow, so limited to seq len "
                           f"{INTERPRETER_MAX_SEQ_LEN} and {INTERPRETER_MAX_ELEMENTS} elements per tensor "
                           f"({INTERPRETER_DECODE_MAX_ELEMENTS} for decode, {INTERPRETER_VARLEN_MAX_ELEMENTS} for "
                           f"varlen), one fixed {self._interpreter_config()} forward and "
                           f"{triton_attention_bwd.interpreter_config()} backward, decode BLOCK_N="
                           f"{triton_decode.INTERPRETER_BLOCK_N}, varlen BLOCK_M={triton_varlen.INTERPRETER_BLOCK_M} "
                           f"BLOCK_N={triton_varlen.INTERPRETER_BLOCK_N}; no bf16 (the interpreter misreads it)")
            caps = attention_capabilities(("fp16", "fp32"), head_dims=(64, 128),
                                          max_seq_len=INTERPRETER_MAX_SEQ_LEN, max_elements=INTERPRETER_MAX_ELEMENTS)
            decode = decode_capabilities(("fp16", "fp32"), max_elements=INTERPRETER_DECODE_MAX_ELEMENTS)
            varlen = varlen_capabilities(("fp16", "fp32"), max_elements=INTERPRETER_VARLEN_MAX_ELEMENTS)
            # No tunables: the interpreter ignores num_warps and num_stages,
            # and checking every tile choice in it would take many minutes.
            return [{"name": "triton", "description": description, "ops": ops, "capabilities": caps,
                     "op_capabilities": {DECODE: decode, VARLEN: varlen}}]
        description = ("own FlashAttention forward (online softmax) and FlashAttention-2-style backward in Triton, "
                       "autotuned per shape, split-KV paged decode (flash-decoding) and packed varlen prefill; the "
                       "tunables set the forward's launch (a bwd case refuses fixed ones)")
        caps = attention_capabilities(("fp16", "bf16", "fp32"), head_dims=(64, 128), needs_gpu=True)
        decode = decode_capabilities(("fp16", "bf16", "fp32"), needs_gpu=True)
        varlen = varlen_capabilities(("fp16", "bf16", "fp32"), needs_gpu=True)
        return [{"name": "triton", "description": description, "ops": ops, "capabilities": caps,
                 "op_capabilities": {DECODE: decode, VARLEN: varlen}, "tunables": tunables()}]

    def prepare(self, case):
        out = torch.empty(case.shape.q_shape, dtype=case.q.dtype, device=case.device)
        fixed = triton_attention.fixed_config(case.tunables)

        def run():
            return triton_attention.attention(case.q, case.k, case.v, out, case.shape.causal,
                                              tuned=not self.interpreted, config=fixed)

        try:
            run()  # compiles and, on a GPU, autotunes this case
        except Exception as error:  # noqa: BLE001: a configuration that cannot compile or launch is refused
            if fixed is None or not refusable(error):
                raise
            raise core.Unsupported(f"{fixed} does not compile or launch: {type(error).__name__}",
                                   str(error).strip().splitlines()[0] if str(error).strip() else "") from error
        if fixed:
            config = fixed
        else:
            config = self._interpreter_config() if self.interpreted else triton_attention.chosen_config()
        facts = {"triton": triton.__version__, "config": config, "interpreter": str(self.interpreted).lower()}
        return core.Kernel(run, facts=facts, output=out)

    def prepare_op(self, case):
        """Attention in mode "bwd" or "fwd+bwd" (or "fwd"), as an OpCase:
        allocates the outputs and the scratch (log-sum-exp, Delta), runs the
        case once (compiling and, on a GPU, autotuning it) and returns a
        Kernel whose run() returns the outputs in the op's order."""
        if case.op == DECODE:
            return self._prepare_decode(case)
        if case.op == VARLEN:
            return self._prepare_varlen(case)
        if case.op != core.ATTENTION:
            raise ValueError(f"the triton backend runs attention, decode and varlen only, not {case.op}")
        mode = case.params.get("mode") or "fwd"
        if mode not in MODES:
            raise core.Unsupported(f"attention mode {mode!r} is not one of {', '.join(MODES)}")
        fixed = triton_attention.fixed_config(case.tunables)
        if fixed and mode == "bwd":
            raise core.Unsupported("the tunables set the forward kernel's launch; mode bwd runs the backward "
                                   "alone, which is autotuned only")
        causal = case.params.get("causal", "false") == "true"
        inputs = {name.lower(): tensor for name, tensor in case.inputs.items()}
        missing = [name for name in MODE_INPUTS[mode] if name not in inputs]
        if missing:
            raise ValueError(f"attention {mode}: inputs {', '.join(missing)} missing (have {', '.join(case.inputs)})")
        q, k, v = (inputs[name].contiguous() for name in ("q", "k", "v"))
        dtype = case.params.get("dtype")
        if dtype and q.dtype != core.torch_dtype(dtype):
            raise ValueError(f"q is {q.dtype}, the case's dtype is {dtype}")
        tuned = not self.interpreted
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        delta = triton_attention_bwd.delta_buffer(q)

        def backward(o, do, lse):
            return triton_attention_bwd.backward(q, k, v, o, do, lse, dq, dk, dv, causal, tuned=tuned, delta=delta)

        if mode == "bwd":
            o, do = (inputs[name].contiguous() for name in ("o", "do"))
            lse = inputs["lse"].to(torch.float32).contiguous()
            outputs = {"dq": dq, "dk": dk, "dv": dv}

            def compute():
                backward(o, do, lse)

            function = "triton_attention_bwd.backward"
            kernels = triton_attention_bwd.KERNELS
        else:
            o = torch.empty_like(q)
            lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device) if mode == "fwd+bwd" else None
            do = inputs["do"].contiguous() if mode == "fwd+bwd" else None
            outputs = {"o": o, "dq": dq, "dk": dk, "dv": dv} if mode == "fwd+bwd" else {"o": o}

            def compute():
                triton_attention.attention(q, k, v, o, causal, tuned=tuned, config=fixed, lse=lse)
                if do is not None:
                    backward(o, do, lse)

            function = "triton_attention.attention(lse=...)"
            kernels = ("_attention_forward",)
            if mode == "fwd+bwd":
                function += ", then triton_attention_bwd.backward"
                kernels += triton_attention_bwd.KERNELS
        order = self._output_order(case, mode)
        result = tuple(outputs[name] for name in order)

        def run():
            compute()
            return result

        try:
            run()  # compiles and, on a GPU, autotunes this case
        except Exception as error:  # noqa: BLE001: a configuration that cannot compile or launch is refused
            if fixed is None or not refusable(error):
                raise
            raise core.Unsupported(f"{fixed} does not compile or launch: {type(error).__name__}",
                                   str(error).strip().splitlines()[0] if str(error).strip() else "") from error
        facts = {"triton": triton.__version__, "interpreter": str(self.interpreted).lower(), "mode": mode,
                 "function": function, "kernels": ", ".join(kernels)}
        configs = []
        if mode != "bwd":
            forward = fixed or (self._interpreter_config() if self.interpreted else triton_attention.chosen_config())
            facts["forward_config"] = forward
            configs.append(f"fwd {forward}")
        if mode != "fwd":
            backward_config = (triton_attention_bwd.interpreter_config() if self.interpreted
                               else triton_attention_bwd.chosen_config())
            facts["backward_config"] = backward_config
            configs.append(backward_config)
        facts["config"] = "; ".join(configs)
        return core.Kernel(run, facts=facts, output=result)

    def _prepare_decode(self, case):
        """The decode op: q [B, q_len, H, D] against the paged k_cache and
        v_cache [num_pages, page_size, KVH, D] through block_table [B,
        max_pages] and cache_seqlens [B] (int32). Allocates the output and
        the splits' scratch, runs the case once (compiling it; the number of
        splits is triton_decode's heuristic, fixed from then on) and returns
        a Kernel whose run() returns the output."""
        if len(case.outputs) != len(DECODE_OUTPUTS):
            raise ValueError(f"decode has {len(DECODE_OUTPUTS)} output ({', '.join(DECODE_OUTPUTS)}); "
                             f"the case names {len(case.outputs)}")
        d = Decode.of(case)
        q, k_cache, v_cache = (t.contiguous() for t in (d.q, d.k_cache, d.v_cache))
        block_table, cache_seqlens = (t.to(torch.int32).contiguous() for t in (d.block_table, d.cache_seqlens))
        dtype = case.params.get("dtype")
        if dtype and q.dtype != core.torch_dtype(dtype):
            raise ValueError(f"q is {q.dtype}, the case's dtype is {dtype}")
        if d.head_dim < 16 or d.head_dim & (d.head_dim - 1):
            raise core.Unsupported(f"head dim {d.head_dim}: the decode kernel takes powers of two from 16")
        params = {"causal": d.causal, "scale": d.scale, "window_left": d.window_left, "softcap": d.softcap}
        out = torch.empty_like(q)
        tensors = (q, k_cache, v_cache, block_table, cache_seqlens, out)
        # Compiles and picks the launch; later calls reuse it and the scratch.
        config = triton_decode.decode(*tensors, **params)
        launch = {name: config[key] for name, key in (("num_splits", "num_splits"), ("block_n", "BLOCK_N"),
                                                       ("num_warps", "num_warps"), ("num_stages", "num_stages"))}
        buffers = triton_decode.workspace(q, config["num_splits"]) if config["num_splits"] > 1 else None

        def run():
            triton_decode.decode(*tensors, **params, **launch, workspace_buffers=buffers)
            return out

        kernels = triton_decode.KERNELS if config["num_splits"] > 1 else triton_decode.KERNELS[:1]
        facts = {"triton": triton.__version__, "interpreter": str(self.interpreted).lower(), "op": DECODE,
                 "function": "triton_decode.decode", "kernels": ", ".join(kernels),
                 "config": triton_decode.describe_config(config), "num_splits": str(config["num_splits"]),
                 "block_m": str(config["BLOCK_M"]), "block_n": str(config["BLOCK_N"]),
                 "row_tiles": str(config["row_tiles"]), "precision": config["precision"]}
        return core.Kernel(run, facts=facts, output=out)

    def _prepare_varlen(self, case):
        """The varlen op: q [total_q, H, D] and k, v [total_k, KVH, D],
        sequences packed end to end and delimited by cu_seqlens_q and
        cu_seqlens_k [B + 1] (int32); max_seqlen from the params seq_q and
        seq_k (the longest sequences), checked against the cu_seqlens here,
        outside the timed region. Allocates the output, runs the case once
        (compiling it) and returns a Kernel whose run() returns the output
        [total_q, H, D]."""
        if len(case.outputs) != len(VARLEN_OUTPUTS):
            raise ValueError(f"varlen has {len(VARLEN_OUTPUTS)} output ({', '.join(VARLEN_OUTPUTS)}); "
                             f"the case names {len(case.outputs)}")
        # The longest sequences are the params' (the grid is sized by
        # seq_q), never shorter than the cu_seqlens say (Varlen.of checks,
        # with one sync, in Prepare).
        d = Varlen.of(case)
        q, k, v = (t.contiguous() for t in (d.q, d.k, d.v))
        cu_q, cu_k, max_q, max_k = d.cu_seqlens_q, d.cu_seqlens_k, d.max_seqlen_q, d.max_seqlen_k
        dtype = case.params.get("dtype")
        if dtype and q.dtype != core.torch_dtype(dtype):
            raise ValueError(f"q is {q.dtype}, the case's dtype is {dtype}")
        if d.head_dim < 16 or d.head_dim & (d.head_dim - 1):
            raise core.Unsupported(f"head dim {d.head_dim}: the varlen kernel takes powers of two from 16")
        params = {"causal": d.causal, "scale": d.scale, "window_left": d.window_left,
                  "window_right": d.window_right, "softcap": d.softcap}
        out = torch.empty_like(q)
        tensors = (q, k, v, cu_q, cu_k, max_q, max_k, out)
        # Compiles and picks the launch; later calls reuse it.
        config = triton_varlen.varlen(*tensors, **params)
        launch = {name: config[key] for name, key in (("block_m", "BLOCK_M"), ("block_n", "BLOCK_N"),
                                                       ("num_warps", "num_warps"), ("num_stages", "num_stages"))}

        def run():
            triton_varlen.varlen(*tensors, **params, **launch)
            return out

        facts = {"triton": triton.__version__, "interpreter": str(self.interpreted).lower(), "op": VARLEN,
                 "function": "triton_varlen.varlen", "kernels": ", ".join(triton_varlen.KERNELS),
                 "config": triton_varlen.describe_config(config), "block_m": str(config["BLOCK_M"]),
                 "block_n": str(config["BLOCK_N"]),
                 "grid": f"{config['num_tiles']} query tiles x {q.shape[1]} heads x {cu_q.numel() - 1} sequences "
                         f"(tiles past a sequence's length exit at once)",
                 "max_seqlen": f"q {max_q}, k {max_k}", "precision": config["precision"]}
        return core.Kernel(run, facts=facts, output=out)

    @staticmethod
    def _output_order(case, mode):
        """The outputs' names in the order the case lists them (names
        matched without case), else the op's order."""
        want = MODE_OUTPUTS[mode]
        named = [getattr(f, "name", "").lower() for f in case.outputs]
        if sorted(named) == sorted(want):
            return named
        if len(case.outputs) != len(want):
            raise ValueError(f"attention {mode} has {len(want)} outputs ({', '.join(want)}); "
                             f"the case names {len(case.outputs)}")
        return want

    @staticmethod
    def _interpreter_config():
        return f"BLOCK_M={triton_attention.INTERPRETER_CONFIG['BLOCK_M']} " \
               f"BLOCK_N={triton_attention.INTERPRETER_CONFIG['BLOCK_N']} (interpreter)"
