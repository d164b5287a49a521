"""scripts/disk_check.py: the warning before the venv's install names the
folder, what it needs and what it has, and stays quiet when there is room."""

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("disk_check", ROOT / "scripts" / "disk_check.py")
disk_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(disk_check)

GB = disk_check.GB


@pytest.mark.parametrize("free, need, warns", [
    (20 * GB, 8 * GB, False),
    (8 * GB, 8 * GB, False),
    (8 * GB - 1, 8 * GB, True),
    (300 << 20, 8 * GB, True),
])
def test_check_warns_only_when_short(tmp_path, free, need, warns):
    warning = disk_check.check(str(tmp_path / "venv"), need, "the venv", free_bytes=free)
    assert bool(warning) == warns
    if warns:
        assert "the venv" in warning
        assert str(tmp_path) in warning  # the nearest folder that exists
        assert f"{need / GB:.0f} GB" in warning


def test_existing_parent_walks_up(tmp_path):
    assert disk_check.existing_parent(str(tmp_path / "a" / "b")) == str(tmp_path)
    assert disk_check.existing_parent(str(tmp_path)) == str(tmp_path)


def test_main_reads_the_real_disk_and_exits_zero(tmp_path, capsys):
    # A need no disk has: the warning is printed, and the exit code is 0.
    assert disk_check.main(["--need-gb", "1000000", "--what", "a huge install", str(tmp_path / "v")]) == 0
    assert "a huge install" in capsys.readouterr().err
    assert disk_check.main(["--need-gb", "0.000001", "--what", "a tiny one", str(tmp_path)]) == 0
    assert capsys.readouterr().err == ""


def test_main_refuses_a_need_that_is_not_positive(tmp_path):
    with pytest.raises(SystemExit) as e:
        disk_check.main(["--need-gb", "0", "--what", "x", str(tmp_path)])
    assert e.value.code == 2
