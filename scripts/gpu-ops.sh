#!/usr/bin/env bash
# The op interface on a GPU machine, from a dist/ folder built elsewhere
# and the dist/ of the commit before it (OLD_DIST): the embedded default
# suite and the seed suite with both builds, compared row by row (the op
# interface must change no verdict and no time of forward attention),
# then the rmsnorm suite on every backend that runs rmsnorm, py: files
# included. Logs, results and tables go to $OUT_DIR.
#
#   OLD_DIST=/tmp/old/dist STEP=attention dist/scripts/gpu-ops.sh
#   STEP=rmsnorm dist/scripts/gpu-ops.sh
#
# Needs: nvidia-smi, python3 with torch and triton (FLASHCORE_PYTHON to
# choose another Python).
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-ops-out}
mkdir -p "$OUT_DIR"
export FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  "$FLASHCORE_PYTHON" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  "$DIST/flashcore" version
} 2>&1 | tee -a "$OUT_DIR/env.txt"

rc=0
# run NAME FLASHCORE [flashcore run arguments...]: one timed run and a
# summary line of its verdicts.
run() {
  local name=$1 fc=$2
  shift 2
  local start end
  start=$(date +%s%N)
  "$fc" run --format markdown --out "$OUT_DIR/$name.json" "$@" >"$OUT_DIR/$name.md" 2>"$OUT_DIR/$name-stderr.txt" || rc=$?
  end=$(date +%s%N)
  printf '%s: exit %s, wall %s ms, %s PASS, %s FAIL, %s ERROR, %s SKIP\n' "$name" "$rc" \
    "$(( (end - start) / 1000000 ))" \
    "$(grep -c '| PASS' "$OUT_DIR/$name.md")" "$(grep -c '| FAIL' "$OUT_DIR/$name.md")" \
    "$(grep -c '| ERROR' "$OUT_DIR/$name.md")" "$(grep -c '| SKIP' "$OUT_DIR/$name.md")" | tee -a "$OUT_DIR/summary.txt"
}

case ${STEP:-attention} in
attention)
  for suite in ${SUITES:-default}; do
    args=()
    [ "$suite" = default ] || args+=(--suite "$DIST/suites/$suite.toml")
    run "$suite-old" "$OLD_DIST/flashcore" "${args[@]}"
    run "$suite-new" "$DIST/flashcore" "${args[@]}"
    if [ "${TWICE:-1}" = 1 ]; then
      run "$suite-old-2" "$OLD_DIST/flashcore" "${args[@]}"
      run "$suite-new-2" "$DIST/flashcore" "${args[@]}"
      "$DIST/flashcore" compare "$OUT_DIR/$suite-old.json" "$OUT_DIR/$suite-old-2.json" >"$OUT_DIR/$suite-compare-old-old.txt" 2>&1
      "$DIST/flashcore" compare "$OUT_DIR/$suite-old-2.json" "$OUT_DIR/$suite-new-2.json" >"$OUT_DIR/$suite-compare-old2-new2.txt" 2>&1
    fi
    "$DIST/flashcore" compare "$OUT_DIR/$suite-old.json" "$OUT_DIR/$suite-new.json" >"$OUT_DIR/$suite-compare-old-new.txt" 2>&1
    tail -n 14 "$OUT_DIR"/$suite-compare-*.txt
  done
  ;;
rmsnorm)
  run rmsnorm "$DIST/flashcore" --suite "$DIST/suites/rmsnorm.toml" \
    --backends cpu-reference,cuda-scalar,pytorch-sdpa,py:"$DIST/examples/python/rmsnorm_torch.py",py:"$DIST/examples/python/rmsnorm_triton.py"
  "$DIST/flashcore" list --ops >"$OUT_DIR/list-ops.txt" 2>&1
  ;;
esac
exit $rc
