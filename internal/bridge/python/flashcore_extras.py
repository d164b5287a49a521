"""What the adapters of installed third-party kernel libraries share
(plugins flash-attn-4 and flashinfer): loading the library with the exact
install command when it is missing, its version, the first call (JIT
compilation) timed on its own and kept out of the samples, the library's
refusals as Unsupported rows with its own words, and attention's backward
modes through autograd.

The libraries are optional extras, pinned in python/requirements-extras.txt
and installed by ``make setup EXTRAS=...`` or, on a machine without a
package index, by scripts/extras.py. Nothing here imports them.
"""

import contextlib
import importlib
import importlib.metadata
import sys
import time
import traceback

import flashcore_worker as core

# Where the extras are pinned, and the two ways to install them.
REQUIREMENTS = "python/requirements-extras.txt"


class LibraryMissing(Exception):
    """The library cannot be imported: the backend is unavailable, and
    ``unavailable`` (read by worker_main.startup_failure) says how to
    install it."""

    def __init__(self, package, extra, error):
        self.unavailable = install_hint(package, extra, error)
        super().__init__(self.unavailable)


def install_hint(package, extra, error):
    """Why a library's backend is unavailable and the exact commands that
    install it."""
    return (f"{package} is not installed for {sys.executable} ({error}): install it with "
            f"`make setup EXTRAS={extra}`, or without a package index with scripts/extras.py (docs/bridges.md)")


def load_library(module, package, extra):
    """The imported module, or LibraryMissing naming the install command.
    Any error while importing counts (a library whose compiled parts do not
    load here is as missing as one that is absent), with its last line."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise LibraryMissing(package, extra, exc) from exc
    except Exception as exc:  # an OSError of a shared library, a broken install: its traceback helps
        traceback.print_exc(file=sys.stderr)
        raise LibraryMissing(package, extra, exc) from exc


def package_version(distribution, module=None):
    """The installed distribution's version, else the module's
    __version__, else "unknown"."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return str(getattr(module, "__version__", "unknown"))


def first_call(run, device):
    """Runs run() once, as the first call (compilation, planning) and
    returns (its result, the seconds it took, synchronized)."""
    start = time.perf_counter()
    out = run()
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)
    return out, time.perf_counter() - start


def first_call_fact(seconds):
    """The fact that reports the first call on its own."""
    return (f"first call {seconds:.2f} s (JIT compilation and planning included), in Prepare, kept out "
            f"of the timed samples")


def raised_in(exc, package_prefix):
    """Whether exc was raised by code of the library (a frame in a module
    whose name starts with package_prefix), not by the adapter."""
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_globals.get("__name__", "")
        if name == package_prefix or name.startswith(package_prefix + "."):
            return True
        tb = tb.tb_next
    return False


def refusal(library, exc, what):
    """A library's refusal of a case as Unsupported, in the library's own
    words (the first line of its message)."""
    text = str(exc).strip().splitlines()
    reason = text[0] if text else type(exc).__name__
    return core.Unsupported(f"{library} refused {what}", f"{type(exc).__name__}: {reason}")


# The exceptions by which a library refuses what it does not run: its
# asserts and argument checks, and a RuntimeError that says "support".
# Anything else (a CUDA error, out of memory), and any of these raised by
# the adapter itself, is an error.
REFUSALS = (AssertionError, NotImplementedError, ValueError, TypeError)


def is_refusal(exc, package_prefix):
    """Whether exc is the library refusing the case (REFUSALS), raised in
    the library's own code."""
    refused = isinstance(exc, REFUSALS) or (isinstance(exc, RuntimeError) and "support" in str(exc).lower())
    return refused and not is_out_of_memory(exc) and raised_in(exc, package_prefix)


@contextlib.contextmanager
def refusals(library, package_prefix, what):
    """The library's refusals raised inside, as Unsupported (is_refusal)."""
    try:
        yield
    except Exception as exc:
        if not is_refusal(exc, package_prefix):
            raise
        raise refusal(library, exc, what) from exc


def probe(run, device, library, package_prefix, what):
    """The case's first call (first_call), with the library's refusals as
    Unsupported; returns the seconds it took."""
    with refusals(library, package_prefix, what):
        _, seconds = first_call(run, device)
    return seconds


def is_out_of_memory(exc):
    return "out of memory" in str(exc).lower()
