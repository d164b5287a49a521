#!/usr/bin/env bash
# The timing audit and the GPU-UUID rule on a GPU machine, from a dist/
# folder built elsewhere, in a checkout (for cli/testdata/liars). Each step
# checks what it must show and the script exits 1 when one does not:
#
#   liars-audit   the liars' suite with every row audited: the py: file
#                 that divides its clock by 8 is ERROR "audit:" by ncu's
#                 figure (not by the host's clock, which is off under ncu),
#                 the plugin that claims the host's GPU while computing on
#                 the CPU is ERROR "audit:" for launching no GPU kernel, and
#                 their honest twin PASSes every row
#   liars-off     the same with --audit 0: the liars PASS, so the audit is
#                 the check that catches them
#   examples-0, examples-2
#                 the Python-file examples with the audit off and on
#                 (default 2 rows a backend): no honest row is flagged, and
#                 the wall times give the audit's cost
#   host-bound    an honest py: file whose calls cost the host 0.4 s
#                 beside a kernel of microseconds (host_bound.py): with
#                 --audit 0 the host's clock refuses it (ERROR "clock:"),
#                 with the audit ncu confirms its kernel time and it PASSes
#                 with the host-bound warning
#   default       the embedded default suite: every row a shipped plugin's,
#                 so nothing is audited, and no GPU row is refused for its
#                 UUID
#
#   LIAR_BIN=path/flashcore-backend-test-liar-claims-gpu dist/scripts/gpu-audit.sh
#
# Needs: nvidia-smi, ncu, python3 with torch and triton.
set -uo pipefail
DIST=${DIST:-$(cd "$(dirname "$0")/.." && pwd)}
OUT_DIR=${OUT_DIR:-$PWD/gpu-audit-out}
LIARS=${LIARS:-$DIST/../cli/testdata/liars}
LIAR_BIN=${LIAR_BIN:-}
STEPS=${STEPS:-liars-audit liars-off host-bound examples-0 examples-2 default}
mkdir -p "$OUT_DIR"
export FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3}
export PATH=$PATH:/usr/local/cuda/bin
FC="$DIST/flashcore"
# shellcheck source=gpu-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/gpu-common.sh"
has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

{
  date -u
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv
  "$FLASHCORE_PYTHON" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__)'
  ncu --version | tail -1
  "$FC" version
} >"$OUT_DIR/env.txt" 2>&1

failed=0
# expect NAME JQ-LIKE-CHECK: a python check over the results file, which
# prints what it found and exits 1 when the expectation fails.
expect() {
  local name=$1 check=$2
  if ! "$FLASHCORE_PYTHON" - "$OUT_DIR/$name.json" "$check" >>"$OUT_DIR/checks.txt" 2>&1 <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
rows = [(r["backend"], r["case_id"], r["status"], r.get("reason", ""), r.get("facts", {})) for r in run["results"]]
for b, c, s, why, facts in rows:
    print(f"  {b:28s} {c:36s} {s:5s} audit={facts.get('audit_verdict', '-'):7s} ncu={facts.get('audit_ncu_ns', '-'):>9s} {why[:160]}")
print("  timing audit:", run["environment"].get("timing_audit", "(none)"))
ok = eval(sys.argv[2], {"rows": rows, "run": run})
print(f"{'OK' if ok else 'NOT MET'}: {sys.argv[2]}")
sys.exit(0 if ok else 1)
PY
  then
    failed=1
  fi
}

cp "$LIARS"/*.py "$OUT_DIR/"
{
  cat "$LIARS/suite.toml"
  if [ -n "$LIAR_BIN" ]; then printf '\n[[backends]]\nname = "test-liar-claims-gpu"\npath = "%s"\n' "$LIAR_BIN"; fi
} >"$OUT_DIR/liars.toml"
liar_rows='[r for r in rows if r[0] != "honest-sdpa"]'

if has liars-audit; then
  echo "== liars-audit" >>"$OUT_DIR/checks.txt"
  timed liars-audit "$FC" run --suite "$OUT_DIR/liars.toml" --audit 100 --out "$OUT_DIR/liars-audit.json" --format markdown
  expect liars-audit "all(s == 'error' and why.startswith('audit:') for b, c, s, why, f in $liar_rows) and len($liar_rows) > 0 and all('an honest report is at least' in why for b, c, s, why, f in rows if b == 'divided-clock') and all('launched no GPU kernel' in why for b, c, s, why, f in rows if b == 'test-liar-claims-gpu') and all(s == 'pass' and f.get('audit_verdict') == 'agrees' for b, c, s, why, f in rows if b == 'honest-sdpa')"
fi
if has liars-off; then
  echo "== liars-off" >>"$OUT_DIR/checks.txt"
  timed liars-off "$FC" run --suite "$OUT_DIR/liars.toml" --audit 0 --out "$OUT_DIR/liars-off.json" --format markdown
  expect liars-off "all(s == 'pass' for b, c, s, why, f in rows)"
fi
if has host-bound; then
  cp "$LIARS/host-bound.toml" "$OUT_DIR/"
  echo "== host-bound-off" >>"$OUT_DIR/checks.txt"
  timed host-bound-off "$FC" run --suite "$OUT_DIR/host-bound.toml" --audit 0 --out "$OUT_DIR/host-bound-off.json" --format markdown
  expect host-bound-off "len(rows) == 1 and all(s == 'error' and why.startswith('clock:') and f.get('host_clock_flagged') == 'true' for b, c, s, why, f in rows)"
  echo "== host-bound" >>"$OUT_DIR/checks.txt"
  timed host-bound "$FC" run --suite "$OUT_DIR/host-bound.toml" --audit 1 --out "$OUT_DIR/host-bound.json" --format markdown
  expect host-bound "len(rows) == 1 and all(s == 'pass' and f.get('host_clock_flagged') == 'reconciled by ncu' and f.get('audit_verdict') == 'agrees' for b, c, s, why, f in rows) and any('host-bound' in d['summary'] for r in run['results'] for d in r.get('diagnostics', []))"
fi
for n in 0 2; do
  if has "examples-$n"; then
    echo "== examples-$n" >>"$OUT_DIR/checks.txt"
    timed "examples-$n" "$FC" run --suite "$DIST/examples/python/gpu.toml" --audit "$n" --out "$OUT_DIR/examples-$n.json" --format markdown
    expect "examples-$n" "not any(why.startswith('audit:') for b, c, s, why, f in rows) and not any(s == 'error' for b, c, s, why, f in rows)"
  fi
done
if has default; then
  echo "== default" >>"$OUT_DIR/checks.txt"
  timed default "$FC" run --out "$OUT_DIR/default.json" --format markdown
  expect default "not any(s == 'error' for b, c, s, why, f in rows) and 'timing_audit' not in run['environment'] and all(b.get('device', {}).get('uuid', '').startswith('GPU-') for b in run['backends'] if b.get('device', {}).get('kind') == 'gpu')"
fi
cat "$OUT_DIR/checks.txt"
exit $failed
