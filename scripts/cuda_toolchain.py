#!/usr/bin/env python3
"""The project's one CUDA toolchain: fetched from PyPI, checked by hash.

    cuda_toolchain.py fetch DIR MANIFEST [--wheelhouse DIR]
        downloads the wheels that MANIFEST (mk/cuda-toolchain.txt) pins,
        checks each one's SHA-256 against the pin, unpacks them into DIR
        and makes DIR/lib/libcuda.a (below). Refuses, naming the wheel and
        both hashes, when a download does not match its pin. --wheelhouse
        takes the wheels from a local folder instead of the package index.
    cuda_toolchain.py driver-shim CUDA_H OUTDIR
        makes OUTDIR/libcuda.a alone, from the driver API header CUDA_H.

libcuda.a stands where the linker looks for -lcuda. It defines every
function that CUDA_H declares as a jump through a table that a constructor
fills from the machine's libcuda.so.1 (dlopen), so a binary built with it
needs no CUDA driver to link or to start. Where the driver is missing,
every call returns CUDA_ERROR_STUB_LIBRARY and the constructor says "no
NVIDIA driver" on stderr, once; the plugin host turns that into the reason
`flashcore list` shows.

Wheels are zip files: nothing is installed into any Python environment.
Only the standard library is used, and Python 3.11 or newer.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

PROG = "cuda-toolchain"
CUDA_H_IN_TOOLCHAIN = "nvidia/cuda_runtime/include/cuda.h"  # the CUDA 12 headers for cgo
NVCC_IN_TOOLCHAIN = "nvidia/cu13/bin/nvcc"


class ToolchainError(Exception):
    """A problem the user must act on; its text is the whole message."""


class Pin:
    """One line of the manifest: name==version --hash=sha256:HEX."""

    def __init__(self, name: str, version: str, sha256: str, where: str):
        self.name, self.version, self.sha256, self.where = name, version, sha256, where

    @property
    def key(self) -> str:
        return normalise(self.name)

    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


PIN_LINE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)\s+--hash=sha256:([0-9a-fA-F]{64})\s*$")


def read_manifest(path: pathlib.Path) -> list[Pin]:
    pins = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        m = PIN_LINE.match(text)
        if not m:
            raise ToolchainError(
                f"{path}:{number}: want `name==version --hash=sha256:<64 hex digits>`, got {text!r}")
        pins.append(Pin(m.group(1), m.group(2), m.group(3).lower(), f"{path}:{number}"))
    if not pins:
        raise ToolchainError(f"{path}: pins no wheels")
    return pins


def sha256_of(path: pathlib.Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(pins: list[Pin], into: pathlib.Path, wheelhouse: pathlib.Path | None) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
           "--dest", str(into)]
    if wheelhouse is not None:
        cmd += ["--no-index", "--find-links", str(wheelhouse)]
    cmd += [p.requirement() for p in pins]
    if subprocess.run(cmd).returncode != 0:
        raise ToolchainError(f"pip download failed for {', '.join(p.requirement() for p in pins)}"
                             " (pip's own message is above)")


def verify(pins: list[Pin], wheels: list[pathlib.Path]) -> None:
    """Every pin has exactly one wheel, and its SHA-256 is the pinned one."""
    by_key: dict[str, list[pathlib.Path]] = {}
    for w in wheels:
        dist, version = w.name.split("-")[:2]
        by_key.setdefault(f"{normalise(dist)}=={version}", []).append(w)
    for pin in pins:
        found = by_key.get(f"{pin.key}=={pin.version}", [])
        if len(found) != 1:
            raise ToolchainError(f"{pin.where}: expected one wheel of {pin.requirement()}, found {len(found)}")
        got = sha256_of(found[0])
        if got != pin.sha256:
            raise ToolchainError(
                f"{found[0].name} does not match its pin: its SHA-256 is {got}, "
                f"{pin.where} pins {pin.requirement()} to {pin.sha256}. "
                "Nothing was installed. A mirror or cache served other bytes under that name; "
                "if the pin itself is what changed, update the manifest on purpose.")


def unpack(wheels: list[pathlib.Path], into: pathlib.Path) -> None:
    for w in wheels:
        with zipfile.ZipFile(w) as z:
            z.extractall(into)
    for folder in ("nvidia/cu13/bin", "nvidia/cu13/nvvm/bin"):
        d = into / folder
        if d.is_dir():
            for f in d.iterdir():
                if f.is_file():
                    f.chmod(f.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


# --- the driver shim -------------------------------------------------------

DECLARATION = re.compile(r"\bCUresult\s+(cu[A-Za-z0-9_]+)\s*\(")
CUDA_ERROR_STUB_LIBRARY = 34  # "the CUDA driver loaded is a stub library"
CUDA_ERROR_NOT_FOUND = 500


def driver_functions(cuda_h: pathlib.Path, cc: str) -> list[str]:
    """The functions cuda.h declares, under the names callers link to
    (cuda.h maps cuCtxCreate to cuCtxCreate_v2 and so on by macros)."""
    pre = subprocess.run([cc, "-E", "-P", "-x", "c", str(cuda_h)], capture_output=True, text=True)
    if pre.returncode != 0:
        raise ToolchainError(f"{cc} -E {cuda_h} failed:\n{pre.stderr}")
    names = list(dict.fromkeys(DECLARATION.findall(pre.stdout)))
    if len(names) < 100:
        raise ToolchainError(f"{cuda_h}: found only {len(names)} driver functions; is it the driver API's cuda.h?")
    return names


def shim_sources(names: list[str]) -> tuple[str, str]:
    n = len(names)
    c = [
        "// Made by scripts/cuda_toolchain.py from cuda.h; do not edit.",
        "#include <dlfcn.h>",
        "#include <stdio.h>",
        "",
        f"static int flashcore_cuda_no_driver(void) {{ return {CUDA_ERROR_STUB_LIBRARY}; }}",
        f"static int flashcore_cuda_no_symbol(void) {{ return {CUDA_ERROR_NOT_FOUND}; }}",
        f"static const char *const flashcore_cuda_names[{n}] = {{",
        *[f'\t"{name}",' for name in names],
        "};",
        f"void *flashcore_cuda_entry[{n}] = {{",
        *["\t(void *)flashcore_cuda_no_driver," for _ in names],
        "};",
        "static char flashcore_cuda_error[512];",
        "",
        "// flashcore_cuda_driver_error is empty when libcuda.so.1 was loaded, else why not.",
        "const char *flashcore_cuda_driver_error(void) { return flashcore_cuda_error; }",
        "",
        "__attribute__((constructor(101))) static void flashcore_cuda_load(void) {",
        '\tvoid *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);',
        "\tif (!lib) {",
        "\t\tconst char *why = dlerror();",
        '\t\tsnprintf(flashcore_cuda_error, sizeof flashcore_cuda_error, "no NVIDIA driver (%s)", why ? why : "libcuda.so.1 not found");',
        '\t\tfprintf(stderr, "flashcore: %s\\n", flashcore_cuda_error);',
        "\t\treturn;",
        "\t}",
        f"\tfor (int i = 0; i < {n}; i++) {{",
        "\t\tvoid *f = dlsym(lib, flashcore_cuda_names[i]);",
        "\t\tflashcore_cuda_entry[i] = f ? f : (void *)flashcore_cuda_no_symbol;",
        "\t}",
        "}",
        "",
    ]
    s = ["# Made by scripts/cuda_toolchain.py from cuda.h; do not edit.", "\t.text"]
    for i, name in enumerate(names):
        s += [f"\t.globl {name}", f"\t.type {name}, @function", f"{name}:",
              f"\tjmp *flashcore_cuda_entry+{8 * i}(%rip)", f"\t.size {name}, .-{name}"]
    s += ['\t.section .note.GNU-stack,"",@progbits', ""]
    return "\n".join(c), "\n".join(s)


def make_driver_shim(cuda_h: pathlib.Path, out_dir: pathlib.Path) -> int:
    """Writes out_dir/libcuda.a; returns how many functions it forwards."""
    cc = os.environ.get("CC") or "gcc"
    if shutil.which(cc) is None:
        raise ToolchainError(f"no C compiler ({cc}); cgo needs one too")
    names = driver_functions(cuda_h, cc)
    c_src, asm_src = shim_sources(names)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        t = pathlib.Path(tmp)
        (t / "driver.c").write_text(c_src)
        (t / "trampolines.S").write_text(asm_src)
        for src in ("driver.c", "trampolines.S"):
            r = subprocess.run([cc, "-c", "-O2", "-fPIC", src, "-o", src + ".o"], cwd=t,
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise ToolchainError(f"compiling the driver shim ({src}) failed:\n{r.stderr}")
        archive = out_dir / "libcuda.a"
        archive.unlink(missing_ok=True)
        r = subprocess.run(["ar", "rcs", str(archive), "driver.c.o", "trampolines.S.o"], cwd=t,
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise ToolchainError(f"ar failed:\n{r.stderr}")
    return len(names)


def fetch(target: pathlib.Path, manifest: pathlib.Path, wheelhouse: pathlib.Path | None) -> None:
    if os.uname().machine != "x86_64":
        raise ToolchainError(f"the pinned wheels are for x86-64 Linux, this machine is {os.uname().machine}")
    pins = read_manifest(manifest)
    staging = target.with_name(target.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "wheels").mkdir(parents=True)
    try:
        download(pins, staging / "wheels", wheelhouse)
        wheels = sorted((staging / "wheels").glob("*.whl"))
        verify(pins, wheels)
        unpack(wheels, staging)
        shutil.rmtree(staging / "wheels")
        count = make_driver_shim(staging / CUDA_H_IN_TOOLCHAIN, staging / "lib")
        print(f"{PROG}: lib/libcuda.a forwards {count} driver functions to libcuda.so.1 at run time")
        nvcc = staging / NVCC_IN_TOOLCHAIN
        if nvcc.exists():
            version = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True).stdout
            print(f"{PROG}: {version.strip().splitlines()[-1]}")
        shutil.copyfile(manifest, staging / "manifest.txt")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    (target / ".installed").touch()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="download, verify and unpack the pinned toolchain")
    f.add_argument("dir", type=pathlib.Path)
    f.add_argument("manifest", type=pathlib.Path)
    f.add_argument("--wheelhouse", type=pathlib.Path, help="take the wheels from this folder, not an index")
    d = sub.add_parser("driver-shim", help="make libcuda.a from a cuda.h")
    d.add_argument("cuda_h", type=pathlib.Path)
    d.add_argument("out_dir", type=pathlib.Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            fetch(args.dir, args.manifest, args.wheelhouse)
        else:
            print(f"{PROG}: libcuda.a forwards {make_driver_shim(args.cuda_h, args.out_dir)} driver functions")
    except ToolchainError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
