"""scripts/cuda_toolchain.py: the pinned CUDA toolchain is checked by hash
before anything is unpacked, and its driver shim lets a binary start
without the NVIDIA driver."""

import hashlib
import importlib.util
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cuda_toolchain.py"
MANIFEST = ROOT / "mk" / "cuda-toolchain.txt"

spec = importlib.util.spec_from_file_location("cuda_toolchain", SCRIPT)
cuda_toolchain = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cuda_toolchain)


def make_wheel(folder: pathlib.Path, name: str, version: str, files: dict) -> pathlib.Path:
    path = folder / f"{name}-{version}-py3-none-any.whl"
    dist_info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        for arc, text in files.items():
            z.writestr(arc, text)
        z.writestr(f"{dist_info}/METADATA",
                   f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
        z.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist_info}/RECORD", "")
    return path


def fake_cuda_h(count: int = 120) -> str:
    lines = ["typedef int CUresult;", "typedef int CUdevice;", "#define cuCtxCreate cuCtxCreate_v2"]
    lines += ["CUresult cuInit(unsigned int flags);", "CUresult cuCtxCreate(void **ctx, unsigned int f, CUdevice d);"]
    lines += [f"CUresult cuFake{i}(int a, int b);" for i in range(count)]
    return "\n".join(lines) + "\n"


def run_fetch(tmp_path, manifest_text, wheelhouse):
    manifest = tmp_path / "toolchain.txt"
    manifest.write_text(manifest_text)
    target = tmp_path / "toolchain"
    return target, subprocess.run(
        [sys.executable, str(SCRIPT), "fetch", str(target), str(manifest), "--wheelhouse", str(wheelhouse)],
        capture_output=True, text=True)


needs_cc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc here")


def test_the_projects_manifest_pins_every_wheel_by_hash():
    pins = cuda_toolchain.read_manifest(MANIFEST)
    names = {p.key for p in pins}
    assert {"nvidia_cuda_nvcc", "nvidia_cuda_runtime_cu12", "nvidia_nvtx_cu12"} <= names
    assert all(len(p.sha256) == 64 for p in pins)


def test_a_line_without_a_hash_is_refused_with_its_line(tmp_path):
    bad = tmp_path / "m.txt"
    bad.write_text("# comment\nnvidia-cuda-nvcc==13.5.37\n")
    with pytest.raises(cuda_toolchain.ToolchainError, match=r"m.txt:2: want `name==version --hash"):
        cuda_toolchain.read_manifest(bad)


@needs_cc
def test_a_wheel_whose_hash_matches_is_unpacked_with_its_driver_shim(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    wheel = make_wheel(house, "nvidia_cuda_runtime_cu12", "12.8.90",
                       {"nvidia/cuda_runtime/include/cuda.h": fake_cuda_h()})
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    target, r = run_fetch(tmp_path, f"nvidia-cuda-runtime-cu12==12.8.90 --hash=sha256:{digest}\n", house)
    assert r.returncode == 0, r.stderr
    assert (target / ".installed").exists()
    assert (target / "lib" / "libcuda.a").exists()
    assert (target / "nvidia/cuda_runtime/include/cuda.h").exists()


def test_a_wheel_whose_hash_differs_is_refused_and_nothing_is_installed(tmp_path):
    house = tmp_path / "house"
    house.mkdir()
    wheel = make_wheel(house, "nvidia_cuda_runtime_cu12", "12.8.90",
                       {"nvidia/cuda_runtime/include/cuda.h": fake_cuda_h()})
    pinned = "0" * 64
    target, r = run_fetch(tmp_path, f"nvidia-cuda-runtime-cu12==12.8.90 --hash=sha256:{pinned}\n", house)
    assert r.returncode == 1
    got = hashlib.sha256(wheel.read_bytes()).hexdigest()
    message = r.stderr.strip()
    assert message.startswith(f"cuda-toolchain: {wheel.name} does not match its pin: its SHA-256 is {got}")
    assert f"toolchain.txt:1 pins nvidia-cuda-runtime-cu12==12.8.90 to {pinned}" in message
    assert "Nothing was installed" in message
    assert not target.exists()
    assert not target.with_name("toolchain.tmp").exists()


@needs_cc
def test_the_shim_forwards_cudas_names_and_starts_without_a_driver(tmp_path):
    """A program linked with -lcuda against the shim needs no libcuda to
    link or load; on a machine without the driver it starts, says why once,
    and every call returns CUDA_ERROR_STUB_LIBRARY instead of crashing."""
    header = tmp_path / "cuda.h"
    header.write_text(fake_cuda_h())
    names = cuda_toolchain.driver_functions(header, "gcc")
    assert "cuCtxCreate_v2" in names and "cuCtxCreate" not in names and "cuInit" in names
    cuda_toolchain.make_driver_shim(header, tmp_path / "lib")
    main = tmp_path / "main.c"
    main.write_text('#include "cuda.h"\n#include <stdio.h>\n'
                    'int main(void) { void *c; printf("%d %d %d\\n", cuInit(0), cuCtxCreate(&c, 0, 0), cuFake7(1, 2)); return 0; }\n')
    exe = tmp_path / "main"
    subprocess.run(["gcc", "-I", str(tmp_path), str(main), "-L", str(tmp_path / "lib"), "-lcuda", "-o", str(exe)], check=True)
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    assert "libcuda" not in needed
    if pathlib.Path("/proc/driver/nvidia/version").exists():
        pytest.skip("this machine has the NVIDIA driver; the no-driver path is checked where it has none")
    r = subprocess.run([str(exe)], capture_output=True, text=True)
    assert r.returncode == 0
    assert r.stdout.strip() == "34 34 34"
    assert r.stderr.startswith("flashcore: no NVIDIA driver (")
