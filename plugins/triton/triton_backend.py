"""The triton backend: FlashCore bench's own FlashAttention forward kernel
(triton_attention.py) and backward pass (triton_attention_bwd.py),
autotuned on a GPU.

Where to start: Backend.prepare allocates the output buffer the forward
kernel writes into (the core poisons it before the checked run) and runs the
case once, which autotunes it; the chosen tile configuration goes into the
facts. Backend.prepare_op does the same for attention's modes "bwd" (dQ, dK
and dV from Q, K, V, O, dO and the forward's log-sum-exp: only the backward
kernels run) and "fwd+bwd" (the forward, storing its log-sum-exp, then the
backward), which the core hands over as an OpCase.

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

import torch

if not torch.cuda.is_available():
    # Must be set before triton is imported: it selects the interpreter.
    os.environ["TRITON_INTERPRET"] = "1"

import triton  # noqa: E402

import flashcore_worker as core  # noqa: E402
import triton_attention  # noqa: E402
import triton_attention_bwd  # noqa: E402

# Interpreter limits: a case of this size takes seconds, not minutes.
INTERPRETER_MAX_SEQ_LEN = 256
INTERPRETER_MAX_ELEMENTS = 1 << 16
# Attention's modes: the forward alone, the backward alone, both in one call.
MODES = ("fwd", "bwd", "fwd+bwd")
# Each mode's inputs and outputs by name, in the op's order.
MODE_INPUTS = {"fwd": ("q", "k", "v"), "bwd": ("q", "k", "v", "o", "do", "lse"), "fwd+bwd": ("q", "k", "v", "do")}
MODE_OUTPUTS = {"fwd": ("o",), "bwd": ("dq", "dk", "dv"), "fwd+bwd": ("o", "dq", "dk", "dv")}


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


def tunables():
    """The kernel's launch parameters as the variant's tunables (see
    triton_attention.TUNABLES): "auto" is the default, the autotuner."""
    return [{"name": name, "values": list(values), "default": "auto",
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
        if self.interpreted:
            description = (f"own FlashAttention forward and backward under Triton's CPU interpreter (no GPU here): "
                           f"slow, so limited to seq len {INTERPRETER_MAX_SEQ_LEN} and "
                           f"{INTERPRETER_MAX_ELEMENTS} elements per tensor, one fixed {self._interpreter_config()} "
                           f"forward and {triton_attention_bwd.interpreter_config()} backward; "
                           f"no bf16 (the interpreter misreads it)")
            caps = attention_capabilities(("fp16", "fp32"), head_dims=(64, 128),
                                          max_seq_len=INTERPRETER_MAX_SEQ_LEN, max_elements=INTERPRETER_MAX_ELEMENTS)
            # No tunables: the interpreter ignores num_warps and num_stages,
            # and checking every tile choice in it would take many minutes.
            return [{"name": "triton", "description": description, "capabilities": caps}]
        description = ("own FlashAttention forward (online softmax) and FlashAttention-2-style backward in Triton, "
                       "autotuned per shape; the tunables set the forward's launch (a bwd case refuses fixed ones)")
        caps = attention_capabilities(("fp16", "bf16", "fp32"), head_dims=(64, 128), needs_gpu=True)
        return [{"name": "triton", "description": description, "capabilities": caps, "tunables": tunables()}]

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
        if case.op != core.ATTENTION:
            raise ValueError(f"the triton backend runs attention only, not {case.op}")
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
