#!/usr/bin/env bash
# Verify the Python-file backends on a GPU machine from a dist/ folder
# (make dist copies this script to dist/scripts and examples/ to dist/):
#
#   dist/scripts/gpu-verify-python-file.sh
#
# It describes the examples and runs examples/python/gpu.toml: PyTorch's
# SDPA against the plain torch, Triton (two BLOCK_M rows) and flash-attn
# examples, each a Python file served by flashcore-backend-python-file.
# Needs python3 with torch and triton ($FLASHCORE_PYTHON to choose another).
# Logs and results go to $OUT_DIR.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-verify-python-file-out}
mkdir -p "$OUT_DIR"
FC="$DIST/flashcore"
SUITE="$DIST/examples/python/gpu.toml"

"$FC" list --suite "$SUITE" 2>&1 | tee "$OUT_DIR/list.txt"
for backend in triton-example flash-attn-example; do
  "$FC" describe "$backend" --suite "$SUITE" 2>&1 | tee "$OUT_DIR/describe-$backend.txt"
done
"$FC" run --suite "$SUITE" --out "$OUT_DIR/python-file.json" --keep-going 2>&1 | tee "$OUT_DIR/run.txt"
echo "exit status of the run: ${PIPESTATUS[0]}" | tee -a "$OUT_DIR/run.txt"
