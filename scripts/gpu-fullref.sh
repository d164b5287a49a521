#!/usr/bin/env bash
# The harness's fp32 reference of every row on a GPU machine, from a
# dist/ folder built elsewhere, in a checkout (for cli/testdata/fullref).
# Each step checks what it must show and the script exits 1 when one does
# not:
#
#   on    cli/testdata/fullref/gpu.toml with --full-reference auto: every
#         case has the reference, calibrated within a quarter of its atol;
#         every row of the shipped backends that PASSes was checked on
#         every row (every_row in its check); the py: file wrong in three
#         rows of each head FAILs "every row, against the harness's fp32"
#         where it runs (it skips the bottom-right case, which a py: file
#         must declare)
#   off   the same with --full-reference off: no case has it; the wall
#         times of the two give its cost
#
# STEPS (default "off on off on") is the order: alternated, so that the
# first run's cold caches (Triton, torch.compile) fall on neither alone.
#
#   dist/scripts/gpu-fullref.sh
#
# Needs: nvidia-smi, python3 with torch and triton.
set -uo pipefail
DIST=${DIST:-$(cd "$(dirname "$0")/.." && pwd)}
OUT_DIR=${OUT_DIR:-$PWD/gpu-fullref-out}
SUITE_DIR=${SUITE_DIR:-$DIST/../cli/testdata/fullref}
STEPS=${STEPS:-off on off on}
mkdir -p "$OUT_DIR"
export FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3}
FC="$DIST/flashcore"
# shellcheck source=gpu-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/gpu-common.sh"
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

{
  date -u
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version --format=csv
  "$FLASHCORE_PYTHON" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  "$FC" version
} >"$OUT_DIR/env.txt" 2>&1
cp "$SUITE_DIR"/*.py "$SUITE_DIR"/gpu.toml "$OUT_DIR/"

failed=0
expect() {
  local name=$1 check=$2
  if ! "$FLASHCORE_PYTHON" - "$OUT_DIR/$name.json" "$check" >>"$OUT_DIR/checks.txt" 2>&1 <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
cases = {c["id"]: c for c in run["cases"]}
for c in run["cases"]:
    print(f"  case {c['id']:44s} full_reference {json.dumps(c.get('full_reference'))}")
rows = []
for r in run["results"]:
    every = (r.get("check") or {}).get("every_row")
    rows.append((r["backend"], r.get("label", ""), r["case_id"], r["status"], r.get("reason", ""), every))
    print(f"  {r['backend']:14s} {r.get('label', ''):20s} {r['case_id']:44s} {r['status']:5s} every_row={json.dumps(every)} {r.get('reason', '')[:200]}")
ok = eval(sys.argv[2], {"rows": rows, "run": run, "cases": cases})
print(f"{'OK' if ok else 'NOT MET'}: {sys.argv[2]}")
sys.exit(0 if ok else 1)
PY
  then
    failed=1
  fi
}

shipped='[r for r in rows if r[0] != "some-rows"]'
n=0
for step in $STEPS; do
  n=$((n + 1))
  name=$step-$n
  echo "== $name" >>"$OUT_DIR/checks.txt"
  case $step in
  on)
    timed "$name" "$FC" run --suite "$OUT_DIR/gpu.toml" --audit 0 --full-reference auto --out "$OUT_DIR/$name.json" --format markdown
    expect "$name" "all((c.get('full_reference') or {}).get('device') and 'skip' not in c['full_reference'] and c['full_reference'].get('calibration', 0) <= 0.25 * (2e-5 if c['shape']['dtype'] == 'fp32' else 2e-3) for c in cases.values()) and all(s == 'skip' or (s == 'fail' and 'every row, against the harness' in why) for b, l, c, s, why, e in rows if b == 'some-rows') and sum(s == 'fail' for b, l, c, s, why, e in rows if b == 'some-rows') >= 2 and all(s != 'pass' or (e is not None and e['violations'] == 0) for b, l, c, s, why, e in $shipped) and not any(s in ('fail', 'error') for b, l, c, s, why, e in $shipped)"
    "$FC" report --explain-time "$OUT_DIR/$name.json" >"$OUT_DIR/$name-explain.txt" 2>&1
    ;;
  off)
    timed "$name" "$FC" run --suite "$OUT_DIR/gpu.toml" --audit 0 --full-reference off --out "$OUT_DIR/$name.json" --format markdown
    expect "$name" "not any(c.get('full_reference') for c in cases.values()) and not any(e for b, l, c, s, why, e in rows)"
    "$FC" report --explain-time "$OUT_DIR/$name.json" >"$OUT_DIR/$name-explain.txt" 2>&1
    ;;
  esac
done
cat "$OUT_DIR/checks.txt"
exit $failed
