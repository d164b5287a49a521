"""Entry point of a FlashCore bench Python worker.

    python -u worker_main.py <backend_module>

The Go bridge starts this with the request pipe on fd 3 and the reply pipe
on fd 4. The first frame it writes is a hello: either the worker is ready,
or it says why it cannot run here (no torch, no triton, a backend that fails
to start). Then it serves requests until fd 3 closes.
"""

import ast
import importlib
import importlib.util
import os
import platform
import sys
import threading
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
    # The host has closed the pipe: nothing is left to do, and nothing is
    # written at exit (the compilers' caches are written as they compile).
    # Python's own shutdown (torch's, a compiler's worker pool) costs up to
    # a second a worker and tells the host nothing.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def start(module_name):
    """Imports torch and the backend, builds the worker. Returns
    (worker, None) or (None, reason the backend is unavailable)."""
    interpreter = sys.executable
    constants = module_constants(module_name)  # read once: the extra and the compiler
    missing = missing_extra(module_name, constants)
    if missing:
        return None, missing
    warming = warm_compiler_key(constants.get("COMPILER"))
    try:
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
    finally:
        # Nothing of the worker's own runs once the host has its hello:
        # the walls measure its rows and freeze it during the others'.
        if warming is not None:
            warming.join()


# Triton's cache key (triton.runtime.cache.triton_key) hashes its own
# sources and libtriton.so, about 0.4 s of a process's first Triton
# compile on an H200 machine: the triton backend's first kernel, and
# pytorch-sdpa's first flex-attention compile (Inductor keys its caches
# with it). Hashing releases the GIL, so a thread computes it while the
# main thread imports torch, and the compile finds it kept (functools'
# cache). A backend module asks for it with COMPILER = "triton".
COMPILER_TRITON = "triton"


def warm_compiler_key(compiler):
    """Starts the thread that computes the compiler's cache key, or returns
    None: a backend that declares no compiler, or no NVIDIA GPU here (on a
    CPU, Triton runs its interpreter, which needs no key, and a GPU-less
    machine's cores are better left to torch's import)."""
    if compiler != COMPILER_TRITON or not nvidia_gpu_visible():
        return None
    thread = threading.Thread(target=_triton_key, name="triton-key", daemon=True)
    thread.start()
    return thread


def _triton_key():
    try:
        from triton.runtime.cache import triton_key

        triton_key()
    except Exception:  # noqa: BLE001  (no triton, another layout: the first compile computes it, as before)
        pass


def nvidia_gpu_visible(environ=os.environ, device_node="/dev/nvidiactl"):
    """Whether an NVIDIA GPU may be used here, told without importing torch:
    the driver's control node exists and CUDA_VISIBLE_DEVICES hides none."""
    if environ.get("CUDA_VISIBLE_DEVICES", "0").strip() in ("", "-1"):
        return False
    return os.path.exists(device_node)


def module_constants(module_name):
    """The plain string constants at a backend module's top level, read from
    its source without importing it (which imports torch): {} when it
    cannot be read, and the import says what is wrong with it."""
    spec = importlib.util.find_spec(module_name)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return {}
    try:
        with open(spec.origin, encoding="utf-8") as f:
            tree = ast.parse(f.read(), spec.origin)
    except (OSError, SyntaxError, ValueError):
        return {}
    constants = {}
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            constants[node.targets[0].id] = node.value.value
    return constants


def declared_extra(module_name, constants=None):
    """The optional library a backend module wraps, as it declares it in
    string constants at its top level: (MODULE, PACKAGE, EXTRA), or None
    for a module that declares no EXTRA (module_constants)."""
    if constants is None:
        constants = module_constants(module_name)
    if not all(constants.get(k) for k in ("MODULE", "PACKAGE", "EXTRA")):
        return None
    return constants["MODULE"], constants["PACKAGE"], constants["EXTRA"]


def missing_extra(module_name, constants=None):
    """Why the backend cannot run, when the optional library it declares
    (declared_extra) is not installed: the reason its import would give,
    with the command that installs it. None when it is there, or when the
    module declares none. A backend that cannot run says so before torch
    is imported: seconds of every run's start on a machine without it."""
    declared = declared_extra(module_name, constants)
    if declared is None:
        return None
    library, package, extra = declared
    top = library.split(".")[0]
    try:
        if importlib.util.find_spec(top) is not None:
            return None
    except (ImportError, ValueError):
        return None  # the import itself will say what is wrong
    import flashcore_extras as extras

    return extras.install_hint(package, extra, ModuleNotFoundError(f"No module named '{top}'"))


def startup_failure(module_name, exc):
    """Why a backend that raised while starting is unavailable. An exception
    with an ``unavailable`` attribute carries the whole reason (the
    python-file backend names the user's file and line there)."""
    return getattr(exc, "unavailable", "") or f"{module_name} failed to start: {type(exc).__name__}: {exc}"


if __name__ == "__main__":
    main()
