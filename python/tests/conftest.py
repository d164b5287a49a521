"""Puts the bridge's shared worker core and the plugins' backend modules on
sys.path, as the Go bridge does when it writes them into one directory,
and the bridge's test fixtures (its probe backend)."""

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
for folder in ("internal/bridge/python", "internal/bridge/testdata", "plugins/pytorch-sdpa", "plugins/triton",
               "plugins/flash-attn-4", "plugins/flashinfer"):
    sys.path.insert(0, str(ROOT / folder))

from helpers import restore_triton_autotune  # noqa: E402  (helpers imports the worker core)


@pytest.fixture
def keep_triton_autotune(monkeypatch):
    """Puts triton's own autotune back after a test in which the python-file
    backend installed the interpreter's (flashcore_triton_interpreter)."""
    if "triton" not in sys.modules and not torch_has_cuda():
        # triton.language's own jit functions (tl.max, ...) are made when
        # triton is first imported: under the interpreter, as in the worker.
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    triton = pytest.importorskip("triton")
    restore_triton_autotune(monkeypatch)
    return triton


def torch_has_cuda():
    import torch

    return torch.cuda.is_available()
