"""scripts/extras.py: the one pinned list of the extras, the selection of
an extra's wheels, the split and join of large wheels with their digests,
and the pip commands it runs (recorded by a stand-in for subprocess.run;
pip itself runs where the wheels are installed for real)."""

import hashlib
import importlib.util
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("extras_script", ROOT / "scripts" / "extras.py")
extras = importlib.util.module_from_spec(spec)
spec.loader.exec_module(extras)


def test_every_line_of_the_list_is_pinned_hashed_and_owned():
    pins = extras.read_pins()
    names = [p.name for p in pins]
    assert len(names) == len(set(names)), "a wheel is listed twice"
    assert extras.known_extras(pins) == ["fa4", "flashinfer"]
    for p in pins:
        assert p.version and p.hashes and set(p.extras) <= {"fa4", "flashinfer"}
    fa4 = {p.name for p in extras.select(pins, "fa4")}
    assert {"flash-attn-4", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13", "apache-tvm-ffi"} <= fa4
    assert "flashinfer-python" in {p.name for p in extras.select(pins, "flashinfer")}
    assert not {"torch", "triton", "numpy"} & set(names), "requirements.txt's pins belong there"


def test_the_requirements_of_an_extra_are_valid_pip_lines(capsys):
    assert extras.main(["requirements", "--extras", "fa4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all("==" in line and "--hash=sha256:" in line and "#" not in line for line in lines)


@pytest.mark.parametrize("text, error", [
    ("foo>=1.0 --hash=sha256:" + "0" * 64 + "  # extras: fa4\n", "pins no version"),
    ("foo==1.0  # extras: fa4\n", "foo has no --hash"),
    ("foo==1.0 --hash=sha256:" + "0" * 64 + "\n", "names no extras"),
])
def test_a_bad_line_names_the_file_and_line(tmp_path, text, error):
    path = tmp_path / "requirements-extras.txt"
    path.write_text("# comment\n\n" + text)
    with pytest.raises(extras.ExtrasError, match=error) as raised:
        extras.read_pins(path)
    assert ":3" in str(raised.value)


def test_an_unknown_extra_is_refused_with_the_known_ones():
    with pytest.raises(extras.ExtrasError, match="unknown extra fa3: the extras are fa4, flashinfer"):
        extras.select(extras.read_pins(), "fa3")


def write_wheel(folder, name, size):
    data = bytes((i * 7) % 251 for i in range(size))
    (folder / name).write_bytes(data)
    return hashlib.sha256(data).hexdigest()


def test_split_and_join_restore_the_wheel_and_install_checks_it(tmp_path):
    big = write_wheel(tmp_path, "big-1.0-py3-none-any.whl", 2500)
    small = write_wheel(tmp_path, "small-1.0-py3-none-any.whl", 100)
    (tmp_path / extras.SUMS).write_text(f"{big}  big-1.0-py3-none-any.whl\n{small}  small-1.0-py3-none-any.whl\n")
    parts = extras.split(tmp_path / "big-1.0-py3-none-any.whl", 1000)
    assert [p.name[-7:] for p in parts] == ["part000", "part001", "part002"]
    assert not (tmp_path / "big-1.0-py3-none-any.whl").exists()
    ran = []
    target = tmp_path / "site"
    (target / "nvidia_cutlass_dsl" / "dsl_packages").mkdir(parents=True)
    args = extras_args(wheels=str(tmp_path), target=str(target), python="/usr/bin/python3.12")
    assert extras.install(args, run=lambda cmd: ran.append(cmd) or subprocess.CompletedProcess(cmd, 0)) == 0
    assert hashlib.sha256((tmp_path / "big-1.0-py3-none-any.whl").read_bytes()).hexdigest() == big
    (cmd,) = ran
    assert cmd[:8] == ["/usr/bin/python3.12", "-m", "pip", "install", "--no-index", "--no-deps", "--upgrade",
                       "--target"]
    assert sorted(pathlib.Path(c).name for c in cmd[9:]) == ["big-1.0-py3-none-any.whl", "small-1.0-py3-none-any.whl"]
    env = (target / "env.sh").read_text()
    assert f"{target}:{target}/nvidia_cutlass_dsl/dsl_packages" in env


def test_a_missing_or_corrupted_part_is_caught(tmp_path):
    digest = write_wheel(tmp_path, "w-1.0-py3-none-any.whl", 2500)
    (tmp_path / extras.SUMS).write_text(f"{digest}  w-1.0-py3-none-any.whl\n")
    parts = extras.split(tmp_path / "w-1.0-py3-none-any.whl", 1000)
    parts[1].unlink()
    with pytest.raises(extras.ExtrasError, match="one is missing"):
        extras.join(tmp_path)
    parts[1].write_bytes(b"x" * 1000)
    with pytest.raises(extras.ExtrasError, match="differs from SHA256SUMS"):
        extras.install(extras_args(wheels=str(tmp_path), target=str(tmp_path / "site")), run=None)


def test_download_fetches_each_pinned_wheel_hash_checked(tmp_path):
    ran = []

    def run(cmd):
        ran.append(cmd)
        requirement = pathlib.Path(cmd[cmd.index("-r") + 1]).read_text()
        name = requirement.split("==")[0]
        write_wheel(tmp_path, f"{name.replace('-', '_')}-1-py3-none-any.whl", 10)
        return subprocess.CompletedProcess(cmd, 0)

    args = extras_args(extras="flashinfer", dest=str(tmp_path), python_version="3.12", platform=None, split_mb=0)
    assert extras.download(args, extras.read_pins(), run=run) == 0
    wanted = extras.select(extras.read_pins(), "flashinfer")
    assert len(ran) == len(wanted)
    for cmd in ran:
        assert "--no-deps" in cmd and "--require-hashes" in cmd and cmd[cmd.index("--python-version") + 1] == "3.12"
    sums = (tmp_path / extras.SUMS).read_text().splitlines()
    assert len(sums) == len(wanted)


def extras_args(**kw):
    return type("Args", (), {"python": None, **kw})()
