"""Entry point of a FlashCore bench Python worker.

    python -u worker_main.py <backend_module>

The Go bridge starts this with the request pipe on fd 3 and the reply pipe
on fd 4. The first frame it writes is a hello: either the worker is ready,
or it says why it cannot run here (no torch, no triton, a backend that fails
to start). Then it serves requests until fd 3 closes.
"""

import importlib
import os
import platform
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# Large cases (PyTorch's math attention at S=16384 needs about 66 GiB) fail
# on fragmentation of the caching allocator after other cases ran in the
# same worker; expandable segments avoid that. A setting of the user's wins.
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

import flashcore_worker as core  # noqa: E402

REQUEST_FD = 3
REPLY_FD = 4


def main():
    # Subprocesses (compilers that triton runs) must not inherit the pipes,
    # or the host would not see the worker's end of them close.
    for fd in (REQUEST_FD, REPLY_FD):
        os.set_inheritable(fd, False)
    rfile = os.fdopen(REQUEST_FD, "rb", buffering=0)
    wfile = os.fdopen(REPLY_FD, "wb", buffering=0)
    worker, reason = start(sys.argv[1])
    hello = {"protocol": core.PROTOCOL_VERSION, "python": platform.python_version(), "pid": os.getpid()}
    if reason:
        hello["unavailable"] = reason
    core.write_frame(wfile, {"hello": hello})
    if worker is not None:
        core.serve(worker, rfile, wfile)


def start(module_name):
    """Imports torch and the backend, builds the worker. Returns
    (worker, None) or (None, reason the backend is unavailable)."""
    interpreter = sys.executable
    try:
        import torch  # noqa: F401  (the first import decides "no torch")
    except ImportError as exc:
        return None, f"python3 has no torch: {exc} ({interpreter})"
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        missing = (exc.name or module_name).split(".")[0]
        return None, f"python3 has no {missing}: {exc} ({interpreter})"
    try:
        device = core.pick_device()
        return core.Worker(module.Backend(device), device), None
    except Exception as exc:  # a backend that cannot start is unavailable, with its reason
        traceback.print_exc(file=sys.stderr)
        return None, startup_failure(module_name, exc)


def startup_failure(module_name, exc):
    """Why a backend that raised while starting is unavailable. An exception
    with an ``unavailable`` attribute carries the whole reason (the
    python-file backend names the user's file and line there)."""
    return getattr(exc, "unavailable", "") or f"{module_name} failed to start: {type(exc).__name__}: {exc}"


if __name__ == "__main__":
    main()
