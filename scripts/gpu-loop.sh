#!/usr/bin/env bash
# The optimisation loop's commands on a GPU machine, from a dist/ folder
# (make dist; no Go needed): gate, ablate, calibrate and roofline
# (docs/loop.md). Everything goes to $OUT (default ./gpu-loop-out):
#
#   env.txt                   GPU, driver, torch versions
#   calibrate.txt             the measured peaks; cache/ the calibration file
#   gate-pass.txt / .json     gate on cuda-v8 at the seed suite, sensible limits: expect exit 0
#   gate-planted.txt / .json  the same with a planted register limit (32): expect exit 6
#   ablate.md / ablate.json   the chain cuda-scalar → cuda-wmma → cuda-v8 → triton → pytorch-sdpa
#                             at the seed shape, as Markdown
#   roofline.md               the ablation's rows against the calibrated peaks
#   *.log                     each command's progress and messages
#   summary.txt               one line per step: exit code, expected, ok
#
# Needs: nvidia-smi, python3 with torch and triton. Takes about 2-3 minutes
# on an H100.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/gpu-loop-out}
mkdir -p "$OUT"
FC="$DIST/flashcore"
SEED="$DIST/suites/seed.toml"
SEED_CASE=b1-h8-s512-d64-fp16
CHAIN=cuda-scalar,cuda-wmma,cuda-v8,triton,pytorch-sdpa
# The calibration is cached with the logs, so it comes back with them.
export XDG_CACHE_HOME="$OUT/cache"

: > "$OUT/summary.txt"
step() { # name expected-exit command...
  local name=$1 want=$2 out=$3
  shift 3
  local t0=$SECONDS
  "$@" > "$OUT/$out" 2> "$OUT/$name.log"
  local rc=$?
  local ok=ok
  [ "$rc" = "$want" ] || ok=UNEXPECTED
  printf '%-14s exit %-3s expected %-3s %-10s %4ss\n' "$name" "$rc" "$want" "$ok" "$((SECONDS - t0))" >> "$OUT/summary.txt"
  echo "== $name (exit $rc)"; cat "$OUT/$out"
}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  "$FC" version
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

step calibrate 0 calibrate.txt "$FC" calibrate --device gpu
step gate-pass 0 gate-pass.txt "$FC" gate --suite "$SEED" --backends cuda-v8 \
  --max-registers 128 --max-spill-bytes 0 --max-shared-bytes 65536 --min-occupancy 0.25 --out "$OUT/gate-pass.json"
step gate-planted 6 gate-planted.txt "$FC" gate --suite "$SEED" --backends cuda-v8 \
  --max-registers 32 --out "$OUT/gate-planted.json"
step ablate 0 ablate.md "$FC" ablate --suite "$SEED" --case "$SEED_CASE" --chain "$CHAIN" \
  --format markdown --out "$OUT/ablate.json"
step roofline 0 roofline.md "$FC" roofline "$OUT/ablate.json" --format markdown

echo
grep -h "FAIL cuda-v8" "$OUT/gate-planted.txt" | head -2
echo
echo "step           exit    expected   ok         time"
cat "$OUT/summary.txt"
