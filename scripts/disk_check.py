#!/usr/bin/env python3
"""Says, before a large install, whether the disk that will hold it has the
room: pip's own error when it runs out ("[Errno 28] No space left on
device", after minutes of downloads) names neither the folder nor how much
it needed.

    disk_check.py --need-gb 8 --what ".venv (torch, triton)" .venv

It prints a warning and exits 0 when the free space is short (the estimate
is an estimate: a run that fits anyway is not stopped), and exits 2 only on
bad arguments. Standard library only: it runs before the venv exists.
"""

import argparse
import os
import shutil
import sys

GB = 1 << 30


def existing_parent(path: str) -> str:
    """The path itself, or the nearest folder above it that exists: the one
    whose file system the install will write to."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def check(path: str, need_bytes: int, what: str, free_bytes=None) -> str:
    """Returns the warning to print, or "" when there is room. free_bytes is
    the free space to judge by; None reads it off the file system."""
    where = existing_parent(path)
    if free_bytes is None:
        free_bytes = shutil.disk_usage(where).free
    if free_bytes >= need_bytes:
        return ""
    return (f"warning: {what} needs about {need_bytes / GB:.0f} GB free, and the file system of {where} "
            f"has {free_bytes / GB:.1f} GB. If the install fails with 'No space left on device', free "
            f"some space there, or put the venv on a larger disk (make VENV=/larger/disk/venv ...) and "
            f"pip's temporary files with it (TMPDIR=/larger/disk/tmp).")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--need-gb", type=float, required=True, help="space the install needs, in GiB")
    parser.add_argument("--what", required=True, help="what is being installed, for the message")
    parser.add_argument("path", help="where it will be installed (need not exist yet)")
    args = parser.parse_args(argv)
    if args.need_gb <= 0:
        parser.error(f"--need-gb must be positive, not {args.need_gb}")
    warning = check(args.path, int(args.need_gb * GB), args.what)
    if warning:
        print(warning, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
