#!/usr/bin/env python3
"""Installs the optional third-party kernel libraries (the extras) that the
flash-attn-4 and flashinfer backends call, from the one pinned list
python/requirements-extras.txt, with or without a package index.

    extras.py list                                        the extras and their wheels
    extras.py requirements --extras fa4,flashinfer        the pinned lines of those extras (pip -r)
    extras.py download --extras fa4 --dest DIR [--python-version 3.12] [--platform manylinux_2_28_x86_64]
                       [--split-mb 40]                    the wheels for the target, where an index is reachable
    extras.py install --wheels DIR --target SITE          on the target, without an index

Each line of the list pins one wheel with its hashes and says, after
"# extras:", which extras need it; the list is each extra's whole closure
beyond python/requirements.txt (torch, numpy), so every pip call here is
--no-deps, and pip checks every hash.

``download`` runs ``pip download --no-deps`` for each wheel (pinned, hash
checked) for the target's Python and platform, then splits the wheels
larger than --split-mb into parts (NAME.part000, ...) for links with a
transfer limit, and writes SHA256SUMS, the digest of each whole wheel.

``install`` joins the parts, checks each wheel against SHA256SUMS, runs
``pip install --no-index --no-deps --target SITE`` and writes SITE/env.sh,
which sets PYTHONPATH. A --target folder's .pth files are not processed
(Python reads them from site directories alone), so nvidia_cutlass_dsl's
own, which adds SITE/nvidia_cutlass_dsl/dsl_packages, is put on
PYTHONPATH by env.sh, and the folders of the wheels' commands (ninja)
on PATH.
"""

import argparse
import hashlib
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "python" / "requirements-extras.txt"
SUMS = "SHA256SUMS"
PART = ".part"
# The .pth files of wheels in the list that a --target folder leaves
# unread, as the folders they would add (relative to the target).
PTH_FOLDERS = ("nvidia_cutlass_dsl/dsl_packages",)


class ExtrasError(Exception):
    """A problem with the list, the arguments or the wheels, said plainly."""


class Pin:
    """One line of the list: a requirement (name==version with its
    --hash options) and the extras that need it."""

    def __init__(self, line, extras, lineno):
        self.line, self.extras, self.lineno = line, extras, lineno
        match = re.match(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", line)
        if not match:
            raise ExtrasError(f"{REQUIREMENTS.name}:{lineno}: {line!r} pins no version (want name==version)")
        self.name, self.version = match.group(1), match.group(2)
        self.hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", line)
        if not self.hashes:
            raise ExtrasError(f"{REQUIREMENTS.name}:{lineno}: {self.name} has no --hash=sha256:...")

    def __repr__(self):
        return f"{self.name}=={self.version}"


def read_pins(path=REQUIREMENTS):
    """The list's pins, in order. A line ending in "\\" continues on the
    next; "# extras: a,b" after a requirement names its extras."""
    pins, pending, start = [], "", 0
    for lineno, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.strip()
        if not pending and (not text or text.startswith("#")):
            continue
        if not pending:
            start = lineno
        pending += " " + text.rstrip("\\").strip()
        if text.endswith("\\"):
            continue
        requirement, _, comment = pending.partition("#")
        match = re.match(r"\s*extras:\s*(.+)", comment)
        if not match:
            raise ExtrasError(f"{path.name}:{start}: {requirement.split()[0]} names no extras "
                              f"(end the line with '# extras: NAME,...')")
        extras = [e.strip() for e in match.group(1).split(",") if e.strip()]
        pins.append(Pin(requirement.strip(), extras, start))
        pending = ""
    return pins


def known_extras(pins):
    return sorted({e for p in pins for e in p.extras})


def select(pins, extras):
    """The pins that the extras named (a comma-separated list) need.
    "all" names every extra."""
    wanted = [e.strip() for e in extras.split(",") if e.strip()]
    known = known_extras(pins)
    if "all" in wanted:
        wanted = known
    unknown = [e for e in wanted if e not in known]
    if unknown or not wanted:
        raise ExtrasError(f"unknown extra {', '.join(unknown) or '(none given)'}: the extras are "
                          f"{', '.join(known)} (or all)")
    return [p for p in pins if set(p.extras) & set(wanted)]


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def split(path, part_bytes):
    """Splits path into path.part000, ... of part_bytes each and removes
    it; returns the parts."""
    parts = []
    with open(path, "rb") as f:
        for i in range(10**6):
            chunk = f.read(part_bytes)
            if not chunk:
                break
            part = path.with_name(f"{path.name}{PART}{i:03d}")
            part.write_bytes(chunk)
            parts.append(part)
    path.unlink()
    return parts


def join(folder):
    """Joins every NAME.partNNN in folder into NAME (in order) and removes
    the parts; returns the wheels joined."""
    groups = {}
    for part in folder.glob(f"*{PART}[0-9][0-9][0-9]"):
        groups.setdefault(part.name[: -len(PART) - 3], []).append(part)
    for name, parts in groups.items():
        parts.sort()
        numbers = [int(p.name[-3:]) for p in parts]
        if numbers != list(range(len(parts))):
            raise ExtrasError(f"{folder / name}: parts {numbers} are not 000 to {len(parts) - 1:03d}: "
                              f"one is missing")
        with open(folder / name, "wb") as out:
            for p in parts:
                out.write(p.read_bytes())
        for p in parts:
            p.unlink()
    return sorted(groups)


def read_sums(folder):
    sums = {}
    path = folder / SUMS
    if not path.exists():
        raise ExtrasError(f"{path}: missing (download writes it beside the wheels)")
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        fields = line.split()
        if len(fields) != 2 or not re.fullmatch(r"[0-9a-f]{64}", fields[0]):
            raise ExtrasError(f"{path}:{lineno}: want 'SHA256  WHEEL', got {line!r}")
        sums[fields[1]] = fields[0]
    return sums


def download(args, pins, run=subprocess.run):
    dest = pathlib.Path(args.dest).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    chosen = select(pins, args.extras)
    platforms = args.platform or ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
    target = ["--python-version", args.python_version, "--only-binary=:all:"]
    for p in platforms:
        target += ["--platform", p]
    before = {f.name for f in dest.glob("*.whl")}
    for pin in chosen:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
            req.write(pin.line + "\n")
        try:
            print(f"download {pin} for python {args.python_version}", flush=True)
            result = run([sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes", "--dest",
                          str(dest), *target, "-r", req.name])
        finally:
            os.unlink(req.name)
        if result.returncode:
            raise ExtrasError(f"pip download of {pin} failed (exit {result.returncode}); the line is "
                              f"{REQUIREMENTS.name}:{pin.lineno}")
    wheels = sorted(dest.glob("*.whl"))
    sums = "".join(f"{sha256(w)}  {w.name}\n" for w in wheels)
    (dest / SUMS).write_text(sums)
    limit = int(args.split_mb * (1 << 20)) if args.split_mb else 0
    for w in wheels:
        if limit and w.stat().st_size > limit:
            parts = split(w, limit)
            print(f"split {w.name} ({sum(p.stat().st_size for p in parts) >> 20} MiB) into {len(parts)} parts")
    new = len({w.name for w in wheels} - before)
    print(f"{len(wheels)} wheels in {dest} ({new} new), {SUMS} written")
    print(f"on the target: python3 scripts/extras.py install --wheels {dest.name} --target SITE")
    return 0


def install(args, run=subprocess.run):
    folder = pathlib.Path(args.wheels).resolve()
    target = pathlib.Path(args.target).resolve()
    joined = join(folder)
    for name in joined:
        print(f"joined {name}")
    sums = read_sums(folder)
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        raise ExtrasError(f"{folder}: no wheels (run download first)")
    for w in wheels:
        want = sums.get(w.name)
        if want is None:
            raise ExtrasError(f"{w}: not in {SUMS}")
        if sha256(w) != want:
            raise ExtrasError(f"{w}: SHA-256 {sha256(w)} differs from {SUMS}'s {want} (a part missing or "
                              f"corrupted in transfer)")
    missing = sorted(set(sums) - {w.name for w in wheels})
    if missing:
        raise ExtrasError(f"{folder}: {', '.join(missing)} listed in {SUMS} but absent")
    target.mkdir(parents=True, exist_ok=True)
    python = args.python or sys.executable
    result = run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--upgrade", "--target", str(target),
                  *map(str, wheels)])
    if result.returncode:
        raise ExtrasError(f"pip install into {target} failed (exit {result.returncode})")
    env = write_env(target)
    print(f"installed {len(wheels)} wheels into {target}; before flashcore run: . {env}")
    return 0


def write_env(target):
    """SITE/env.sh: PYTHONPATH with the target and the folders its unread
    .pth files would add, PATH with its bin folder."""
    paths = [str(target)] + [str(target / f) for f in PTH_FOLDERS if (target / f).is_dir()]
    lines = ["# Generated by scripts/extras.py install: source it before flashcore run.",
             f"export PYTHONPATH={shlex.quote(os.pathsep.join(paths))}${{PYTHONPATH:+:$PYTHONPATH}}"]
    if (target / "bin").is_dir():
        lines.append(f"export PATH={shlex.quote(str(target / 'bin'))}:$PATH")
    env = target / "env.sh"
    env.write_text("\n".join(lines) + "\n")
    return env


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="the extras and their pinned wheels")
    req = sub.add_parser("requirements", help="the pinned lines of some extras, for pip install -r")
    req.add_argument("--extras", required=True, help="comma-separated: fa4, flashinfer, or all")
    dl = sub.add_parser("download", help="download the wheels for a target machine")
    dl.add_argument("--extras", required=True)
    dl.add_argument("--dest", required=True)
    dl.add_argument("--python-version", default="3.12", help="the target's Python (default 3.12)")
    dl.add_argument("--platform", action="append", help="pip's --platform, repeatable (default manylinux x86-64)")
    dl.add_argument("--split-mb", type=float, default=0, help="split wheels larger than this many MiB")
    inst = sub.add_parser("install", help="install downloaded wheels without an index")
    inst.add_argument("--wheels", required=True)
    inst.add_argument("--target", required=True)
    inst.add_argument("--python", help="the Python to install for (default: this one)")
    args = parser.parse_args(argv)
    try:
        pins = read_pins()
        if args.command == "list":
            for extra in known_extras(pins):
                print(f"{extra}: {', '.join(map(repr, select(pins, extra)))}")
            return 0
        if args.command == "requirements":
            print("\n".join(p.line for p in select(pins, args.extras)))
            return 0
        if args.command == "download":
            return download(args, pins)
        return install(args)
    except ExtrasError as err:
        print(f"extras.py: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
