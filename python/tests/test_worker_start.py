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
