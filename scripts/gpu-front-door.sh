#!/usr/bin/env bash
# The front door on a GPU machine, from a dist/ folder built elsewhere (the
# README's "On a GPU machine without Go"): what the machine has, every
# backend's availability, then the embedded default suite and the seed
# suite on every backend, each timed as a whole. Logs, results and tables
# go to $OUT_DIR.
#
#   dist/scripts/gpu-front-door.sh
#
# Needs: nvidia-smi, python3 with torch and triton (FLASHCORE_PYTHON to
# choose another Python).
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-front-door-out}
mkdir -p "$OUT_DIR"
FC="$DIST/flashcore"
export FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  "$FLASHCORE_PYTHON" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  "$FC" version
  ldd "$DIST/flashcore-plugins-cuda"
} 2>&1 | tee "$OUT_DIR/env.txt"
"$FC" doctor 2>&1 | tee "$OUT_DIR/doctor.txt"

rc=0
for suite in ${SUITES:-default seed}; do
  args=(--format markdown --out "$OUT_DIR/$suite.json")
  [ "$suite" = default ] || args+=(--suite "$DIST/suites/$suite.toml")
  start=$(date +%s%N)
  "$FC" run "${args[@]}" >"$OUT_DIR/$suite.md" 2>"$OUT_DIR/$suite-stderr.txt" || rc=$?
  end=$(date +%s%N)
  printf '%s suite: exit %s, wall %s ms, %s PASS, %s FAIL, %s ERROR, %s SKIP\n' "$suite" "$rc" \
    "$(( (end - start) / 1000000 ))" \
    "$(grep -c '| PASS' "$OUT_DIR/$suite.md")" "$(grep -c '| FAIL' "$OUT_DIR/$suite.md")" \
    "$(grep -c '| ERROR' "$OUT_DIR/$suite.md")" "$(grep -c '| SKIP' "$OUT_DIR/$suite.md")" | tee -a "$OUT_DIR/summary.txt"
done
exit $rc
