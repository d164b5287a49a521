"""The triton backend: FlashCore bench's own FlashAttention forward kernel
(triton_attention.py), autotuned on a GPU.

Where to start: Backend.prepare allocates the output buffer the kernel
writes into (the core poisons it before the checked run) and runs the case
once, which autotunes it; the chosen tile configuration goes into the facts.

Without a GPU, Triton's interpreter runs the kernel on the CPU with NumPy,
one program at a time: correct but slow, so the variant declares small
limits there and uses one small fixed configuration. Triton 3.6's
interpreter reads bfloat16 tensors as garbage and fails on NumPy >= 2.4
(triton-lang/triton#9171), so in interpreter mode bf16 is not offered and
a too-new NumPy makes the backend unavailable with that reason.
"""

import os
import platform

import torch

if not torch.cuda.is_available():
    # Must be set before triton is imported: it selects the interpreter.
    os.environ["TRITON_INTERPRET"] = "1"

import triton  # noqa: E402

import flashcore_worker as core  # noqa: E402
import triton_attention  # noqa: E402

# Interpreter limits: a case of this size takes seconds, not minutes.
INTERPRETER_MAX_SEQ_LEN = 256
INTERPRETER_MAX_ELEMENTS = 1 << 16


def check_interpreter_numpy():
    """Refuses NumPy >= 2.4 under Triton's interpreter, which breaks on it."""
    import numpy

    major, minor = (int(part) for part in numpy.__version__.split(".")[:2])
    if (major, minor) >= (2, 4):
        raise RuntimeError(f"Triton {triton.__version__}'s CPU interpreter fails with NumPy {numpy.__version__}; "
                           "install numpy<2.4 (python/requirements.txt pins it)")




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
            description = (f"own FlashAttention forward under Triton's CPU interpreter (no GPU here): "
                           f"slow, so limited to seq len {INTERPRETER_MAX_SEQ_LEN} and "
                           f"{INTERPRETER_MAX_ELEMENTS} elements per tensor, one fixed {self._interpreter_config()}; "
                           f"no bf16 (the interpreter misreads it)")
            caps = core.capabilities(("fp16", "fp32"), head_dims=(64, 128),
                                     max_seq_len=INTERPRETER_MAX_SEQ_LEN, max_elements=INTERPRETER_MAX_ELEMENTS)
            # No tunables: the interpreter ignores num_warps and num_stages,
            # and checking every tile choice in it would take many minutes.
            return [{"name": "triton", "description": description, "capabilities": caps}]
        description = "own FlashAttention forward in Triton (online softmax), autotuned per shape; launch parameters tunable"
        caps = core.capabilities(("fp16", "bf16", "fp32"), head_dims=(64, 128), needs_gpu=True)
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

    @staticmethod
    def _interpreter_config():
        return f"BLOCK_M={triton_attention.INTERPRETER_CONFIG['BLOCK_M']} " \
               f"BLOCK_N={triton_attention.INTERPRETER_CONFIG['BLOCK_N']} (interpreter)"
