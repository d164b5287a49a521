"""worker_main's start: a backend that wraps an optional library that is
not installed says so, with its install command, before torch is
imported; every other backend starts as before."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

import worker_main

ROOT = pathlib.Path(__file__).resolve().parents[2]
BRIDGE = ROOT / "internal" / "bridge" / "python"


def write_module(folder, name, body):
    (folder / f"{name}.py").write_text(textwrap.dedent(body))
    return name


@pytest.fixture
def modules(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("body, want", [
    ('MODULE = "nolib_x.cute"\nPACKAGE = "nolib-x"\nEXTRA = "x"\nimport torch\n', ("nolib_x.cute", "nolib-x", "x")),
    ('MODULE = "nolib_x"\nPACKAGE = "nolib-x"\nimport torch\n', None),  # no EXTRA: not an optional library
    ('NAME = "plain"\nimport torch\n', None),
    ('MODULE = "a"\nPACKAGE = "b"\nEXTRA = f"{1}"\n', None),  # not a plain string constant
    ('def broken(:\n', None),  # the import says what is wrong with it
])
def test_declared_extra_reads_the_modules_constants(modules, body, want):
    name = write_module(modules, "declares_%d" % abs(hash(body)), body)
    assert worker_main.declared_extra(name) == want


def test_a_missing_library_gives_the_reason_its_import_would(modules):
    name = write_module(modules, "wraps_missing", 'MODULE = "nolib_x.cute"\nPACKAGE = "nolib-x"\nEXTRA = "x"\n')
    reason = worker_main.missing_extra(name)
    assert reason.startswith(f"nolib-x is not installed for {sys.executable} (No module named 'nolib_x'): ")
    assert "`make setup EXTRAS=x`" in reason


def test_an_installed_library_is_left_to_the_import(modules):
    name = write_module(modules, "wraps_json", 'MODULE = "json.decoder"\nPACKAGE = "json"\nEXTRA = "j"\n')
    assert worker_main.missing_extra(name) is None


@pytest.mark.parametrize("module", ["fa4_backend", "flashinfer_backend"])
def test_the_extras_backends_declare_their_library(module):
    library, package, extra = worker_main.declared_extra(module)
    backend = __import__(module)
    assert (library, package, extra) == (backend.MODULE, backend.PACKAGE, backend.EXTRA)


def test_the_reason_comes_before_torch_is_imported(modules):
    """Run as the bridge runs it: a worker whose library is missing answers
    unavailable without importing torch (seconds of every run's start)."""
    write_module(modules, "wraps_missing_run", 'MODULE = "nolib_y"\nPACKAGE = "nolib-y"\nEXTRA = "y"\nimport torch\n')
    code = textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(BRIDGE)!r}, {str(modules)!r}]
        import worker_main
        worker, reason = worker_main.start("wraps_missing_run")
        print(worker is None, "torch" in sys.modules)
        print(reason)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": ""}).stdout.splitlines()
    assert out[0] == "True False"
    assert out[1].startswith("nolib-y is not installed for ")


# ------------------------------------------------------------ Triton's key


@pytest.mark.parametrize("environ, node, want", [
    ({}, True, True),
    ({"CUDA_VISIBLE_DEVICES": "0,1"}, True, True),
    ({}, False, False),  # no NVIDIA driver here
    ({"CUDA_VISIBLE_DEVICES": ""}, True, False),  # every GPU hidden
    ({"CUDA_VISIBLE_DEVICES": "-1"}, True, False),
    ({"CUDA_VISIBLE_DEVICES": " "}, True, False),
])
def test_an_nvidia_gpu_is_seen_without_torch(tmp_path, environ, node, want):
    device_node = tmp_path / "nvidiactl"
    if node:
        device_node.write_text("")
    assert worker_main.nvidia_gpu_visible(environ, str(device_node)) is want


@pytest.mark.parametrize("module", ["triton_backend", "sdpa_backend"])
def test_the_backends_that_compile_with_triton_declare_it(module):
    """Read from the source, as start reads it before torch is imported."""
    assert worker_main.module_constants(module).get("COMPILER") == worker_main.COMPILER_TRITON
    assert __import__(module).COMPILER == worker_main.COMPILER_TRITON


@pytest.fixture
def fake_triton_key(monkeypatch):
    """A triton whose runtime.cache.triton_key records its calls and takes a
    while, in place of the installed one for the test."""
    import types

    calls = []

    def triton_key():
        import time

        time.sleep(0.2)
        calls.append("done")
        return "key"

    triton, runtime, cache = (types.ModuleType(n) for n in ("triton", "triton.runtime", "triton.runtime.cache"))
    cache.triton_key = triton_key
    runtime.cache, triton.runtime = cache, runtime
    for module in (triton, runtime, cache):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    return calls


@pytest.mark.parametrize("compiler, gpu, computed", [
    ("triton", True, True),
    ("triton", False, False),  # Triton's interpreter needs no key
    (None, True, False),  # a backend that declares no compiler
    ("nvcc", True, False),
])
def test_the_key_is_computed_only_where_a_compile_needs_it(monkeypatch, fake_triton_key, compiler, gpu, computed):
    monkeypatch.setattr(worker_main, "nvidia_gpu_visible", lambda: gpu)
    thread = worker_main.warm_compiler_key(compiler)
    assert (thread is not None) is computed
    if thread is not None:
        thread.join()
    assert fake_triton_key == (["done"] if computed else [])


def test_start_waits_for_the_key_before_the_hello(monkeypatch, modules, fake_triton_key):
    """The key's thread ends inside start, whatever start returns: nothing
    of the worker's own may run once the host is told it is ready."""
    monkeypatch.setattr(worker_main, "nvidia_gpu_visible", lambda: True)
    name = write_module(modules, "compiles_refuses", '''
        COMPILER = "triton"

        class Backend:
            def __init__(self, device):
                raise RuntimeError("no device for this test")
    ''')
    worker, reason = worker_main.start(name)
    assert worker is None and "no device for this test" in reason
    assert fake_triton_key == ["done"]
    assert not [t for t in __import__("threading").enumerate() if t.name == "triton-key"]


def test_a_broken_triton_leaves_the_start_alone(monkeypatch):
    """No triton (or one that keeps its key elsewhere): the first compile
    computes the key, as before, and the start goes on."""
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton raises ImportError
    monkeypatch.setattr(worker_main, "nvidia_gpu_visible", lambda: True)
    thread = worker_main.warm_compiler_key("triton")
    thread.join()
