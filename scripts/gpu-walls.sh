#!/usr/bin/env bash
# The walls between plugins on a GPU machine, from a dist/ folder built
# elsewhere: what the kernel offers, then the embedded default suite with
# the walls on and off (each timed as a whole, then compared row by row:
# the walls must change no verdict and no time), the seed suite and the
# CUDA examples with the walls on. Logs, results and tables go to $OUT_DIR.
#
#   dist/scripts/gpu-walls.sh
#
# Needs: nvidia-smi, python3 with torch and triton (FLASHCORE_PYTHON to
# choose another Python).
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-walls-out}
mkdir -p "$OUT_DIR"
FC="$DIST/flashcore"
export FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3}

{
  date -u
  uname -r
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  "$FLASHCORE_PYTHON" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  "$FC" version
  ls -l /dev/nvidia* 2>&1 | head
} 2>&1 | tee "$OUT_DIR/env.txt"

rc=0
# run NAME [flashcore run arguments...]: one timed run, its table, its
# stderr (whose first line is the isolation line) and a summary line.
run() {
  local name=$1
  shift
  local start end
  start=$(date +%s%N)
  "$FC" run --format markdown --out "$OUT_DIR/$name.json" "$@" >"$OUT_DIR/$name.md" 2>"$OUT_DIR/$name-stderr.txt" || rc=$?
  end=$(date +%s%N)
  printf '%s: exit %s, wall %s ms, %s PASS, %s FAIL, %s ERROR, %s SKIP; %s\n' "$name" "$rc" \
    "$(( (end - start) / 1000000 ))" \
    "$(grep -c '| PASS' "$OUT_DIR/$name.md")" "$(grep -c '| FAIL' "$OUT_DIR/$name.md")" \
    "$(grep -c '| ERROR' "$OUT_DIR/$name.md")" "$(grep -c '| SKIP' "$OUT_DIR/$name.md")" \
    "$(grep -m1 'isolation:' "$OUT_DIR/$name-stderr.txt")" | tee -a "$OUT_DIR/summary.txt"
}

for suite in ${SUITES:-default}; do
  args=()
  [ "$suite" = default ] || args+=(--suite "$DIST/suites/$suite.toml")
  FLASHCORE_ISOLATION=off run "$suite-walls-off" "${args[@]}"
  run "$suite-walls-on" "${args[@]}"
  FLASHCORE_ISOLATION=off run "$suite-walls-off-2" "${args[@]}"
  run "$suite-walls-on-2" "${args[@]}"
  "$FC" compare "$OUT_DIR/$suite-walls-off.json" "$OUT_DIR/$suite-walls-on.json" >"$OUT_DIR/$suite-compare-off-on.txt" 2>&1
  "$FC" compare "$OUT_DIR/$suite-walls-off.json" "$OUT_DIR/$suite-walls-off-2.json" >"$OUT_DIR/$suite-compare-off-off.txt" 2>&1
  tail -n 15 "$OUT_DIR/$suite-compare-off-on.txt" "$OUT_DIR/$suite-compare-off-off.txt"
done
for extra in ${EXTRA_SUITES:-}; do
  run "$(echo "${extra%.toml}" | tr / -)" --suite "$DIST/$extra"
done
"$FLASHCORE_PYTHON" - "$OUT_DIR"/*.json <<'PY' | tee -a "$OUT_DIR/summary.txt"
import json, sys
for path in sys.argv[1:]:
    run = json.load(open(path))
    cpu = {b["name"]: b.get("cpu_outside_rows_ms") for b in run["backends"]}
    flagged = [r["label"] + ": " + r.get("reason", "")[:120] for r in run["results"] if "interference" in r.get("reason", "")]
    print(path.rsplit("/", 1)[-1], "cpu_outside_rows_ms", cpu, "interference rows", len(flagged), flagged[:3])
PY
exit $rc
