"""triton.autotune under Triton's CPU interpreter (flashcore_triton_interpreter):
one configuration per call, the first or the one the file names, launched
with its meta-parameters and pre_hook, and nothing benchmarked. Kernels run
under the real interpreter."""

import textwrap

import pytest
import torch

import flashcore_triton_interpreter as shim
import pyfile_backend as pyfile

# Each launch of this kernel adds 1 to calls[0] and writes the BLOCK it got
# into seen[0], so a test knows how often it ran and with which config.
KERNEL_FILE = """
import torch
import triton
import triton.language as tl

HOOKED = []

def count_hook(nargs):
    HOOKED.append(nargs["BLOCK"])

CONFIGS = [triton.Config({"BLOCK": 8}, num_warps=4), triton.Config({"BLOCK": 16}, num_warps=2),
           triton.Config({"BLOCK": 32}, num_warps=8, pre_hook=count_hook)]
{extra}

@triton.autotune(configs=CONFIGS, key=["n"], reset_to_zero=["seen"], restore_value=["calls"]{tune_args})
@triton.jit
def _count(calls, seen, n, BLOCK: tl.constexpr):
    tl.atomic_add(calls, 1)
    tl.store(seen, BLOCK + n * 0)

def launch(n=4):
    calls, seen = torch.zeros(1, dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    for _ in range(3):
        _count[(1,)](calls, seen, n)
    return int(calls[0]), int(seen[0])

def attention(q, k, v, *, causal, scale):
    return q
"""


@pytest.fixture
def interpreter(monkeypatch, keep_triton_autotune):
    """TRITON_INTERPRET=1 and the shim installed, triton's own autotune put
    back after the test."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert shim.install()


def load(tmp_path, extra="", tune_args="", name="counted.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(KERNEL_FILE).replace("{extra}", extra).replace("{tune_args}", tune_args))
    return pyfile.load_kernel_file(str(path)).module


def test_without_the_shim_the_autotuner_needs_a_driver(tmp_path, monkeypatch, keep_triton_autotune):
    """The failure the shim exists for, so this file notices if Triton's
    interpreter ever learns to autotune by itself."""
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU driver")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    module = load(tmp_path)
    with pytest.raises(RuntimeError, match="0 active drivers"):
        module.launch()


def test_the_first_config_runs_once_per_call_with_nothing_benchmarked(tmp_path, interpreter):
    module = load(tmp_path)
    # Benchmarking would launch every config many times before the call.
    assert module.launch() == (3, 8)
    assert module._count.best_config.kwargs == {"BLOCK": 8} and module.HOOKED == []


@pytest.mark.parametrize("named, block", [("2", 32), ("-2", 16), ('{"BLOCK": 16}', 16)])
def test_the_file_names_the_config(tmp_path, interpreter, named, block):
    # Set after the decorator ran: the shim reads it at the first call.
    module = load(tmp_path, extra=f"\nFLASHCORE_INTERPRETER_CONFIG = {named}\n")
    assert module.launch() == (3, block)


def test_the_named_configs_pre_hook_runs_before_each_launch(tmp_path, interpreter):
    module = load(tmp_path, extra="\nFLASHCORE_INTERPRETER_CONFIG = 2\n")
    module.launch()
    assert module.HOOKED == [32, 32, 32]


def test_early_config_prune_is_applied_and_perf_model_ignored(tmp_path, interpreter):
    prune = ', prune_configs_by={"early_config_prune": lambda configs, nargs, **kw: configs[1:], ' \
            '"perf_model": lambda **kw: 1 / 0, "top_k": 1}'
    assert load(tmp_path, tune_args=prune).launch() == (3, 16)


@pytest.mark.parametrize("named, message", [
    ("3", "FLASHCORE_INTERPRETER_CONFIG = 3: _count has 3 autotune configs (index 0 to 2)"),
    ('{"BLOCK": 64}', "FLASHCORE_INTERPRETER_CONFIG = {'BLOCK': 64}: no autotune config of _count has these"),
    ('"BLOCK=8"', "FLASHCORE_INTERPRETER_CONFIG is a str: want an index"),
])
def test_a_config_that_is_not_there_says_so(tmp_path, interpreter, named, message):
    module = load(tmp_path, extra=f"\nFLASHCORE_INTERPRETER_CONFIG = {named}\n")
    with pytest.raises((ValueError, TypeError)) as caught:
        module.launch()
    assert message in str(caught.value)


def test_every_name_of_autotune_is_replaced(interpreter, keep_triton_autotune):
    triton = keep_triton_autotune
    assert triton.autotune is triton.runtime.autotune is triton.runtime.autotuner.autotune
    assert shim.__name__ in triton.autotune.__doc__


def test_the_python_file_backend_installs_it_only_under_the_interpreter(monkeypatch, keep_triton_autotune):
    triton = keep_triton_autotune
    real = triton.autotune
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # the user's choice wins, even on the CPU
    pyfile.use_triton_interpreter(torch.device("cpu"))
    assert triton.autotune is real
    monkeypatch.delenv("TRITON_INTERPRET")
    pyfile.use_triton_interpreter(torch.device("cpu"))
    assert triton.autotune is not real and shim.__name__ in triton.autotune.__doc__
