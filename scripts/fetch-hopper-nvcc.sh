#!/usr/bin/env bash
# fetch-hopper-nvcc.sh DIR REQUIREMENTS: download the pinned CUDA compiler
# wheels named in REQUIREMENTS (mk/hopper-nvcc.txt; hashes required) and
# unpack them into DIR, which then holds DIR/nvidia/cu13/bin/nvcc. Wheels are
# zip files: nothing is installed into any Python environment. Used by
# mk/hopper.mk when HOPPER_NVCC is not set; about 130 MB, fetched once.
set -euo pipefail
dir=${1:?usage: $0 DIR REQUIREMENTS}
req=${2:?usage: $0 DIR REQUIREMENTS}
PYTHON=${PYTHON:-python3}
[ "$(uname -m)" = x86_64 ] || { echo "fetch-hopper-nvcc: the pinned wheels are for x86-64; set HOPPER_NVCC to an nvcc >= 12.0" >&2; exit 1; }
rm -rf "$dir.tmp"
mkdir -p "$dir.tmp/wheels"
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --require-hashes -r "$req" -d "$dir.tmp/wheels"
for w in "$dir.tmp"/wheels/*.whl; do
  "$PYTHON" -m zipfile -e "$w" "$dir.tmp/"
done
rm -rf "$dir.tmp/wheels"
chmod +x "$dir.tmp"/nvidia/cu13/bin/* "$dir.tmp"/nvidia/cu13/nvvm/bin/* 2>/dev/null || true
"$dir.tmp/nvidia/cu13/bin/nvcc" --version | tail -1
rm -rf "$dir"
mv "$dir.tmp" "$dir"
touch "$dir/.installed"
