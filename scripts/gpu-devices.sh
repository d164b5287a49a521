#!/usr/bin/env bash
# flashcore run --devices on a machine with two or more GPUs, from a dist/
# folder (make dist copies this script to dist/scripts); no Go needed:
#
#   OUT=/some/dir dist/scripts/gpu-devices.sh            # the seed suite
#   SUITE=dist/suites/llm.toml dist/scripts/gpu-devices.sh   # longer: ~10 min on two H100s
#
# It runs the suite twice, on GPU 0 alone (--devices 0) and over every GPU
# (--devices all), prints each row of the second run with the GPU it ran
# on, compares the two runs' kernel times (flashcore compare), and ends
# with a summary: the two wall times, the speedup, the rows that passed
# and the compare verdicts. Logs and results go to $OUT (default
# ./gpu-devices-out).
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/gpu-devices-out}
SUITE=${SUITE:-$DIST/suites/seed.toml}
LIMIT=${LIMIT:-170}  # seconds per run, so the whole script stays under 6 minutes on the seed suite
FC="$DIST/flashcore"
mkdir -p "$OUT"

nvidia-smi --query-gpu=index,name,uuid,clocks.max.sm,clocks.max.memory --format=csv,noheader,nounits | tee "$OUT/nvidia-smi.csv"
gpus=$(wc -l < "$OUT/nvidia-smi.csv")
if [ "$gpus" -lt 2 ]; then
  echo "this machine has $gpus GPU(s); --devices all needs at least two to be worth measuring" >&2
fi

# timed_run NAME ARGS...: one flashcore run, its wall time in $OUT/NAME.wall
timed_run() {
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  timeout "$LIMIT" "$FC" run --suite "$SUITE" --out "$OUT/$name.json" --format markdown "$@" \
    > "$OUT/$name.md" 2> "$OUT/$name.log"
  echo $? > "$OUT/$name.rc"
  end=$(date +%s.%N)
  python3 -c "print(f'{$end - $start:.1f}')" > "$OUT/$name.wall"
  echo "$name: exit $(cat "$OUT/$name.rc"), $(cat "$OUT/$name.wall") s"
}

timed_run one --devices 0
timed_run all --devices all
"$FC" compare "$OUT/one.json" "$OUT/all.json" --format markdown --labels "gpu 0,all gpus" > "$OUT/compare.md" 2> "$OUT/compare.log"
echo "compare: exit $?" >> "$OUT/compare.log"

python3 - "$OUT" <<'PY'
import json, sys, collections
out = sys.argv[1]
def load(name):
    try:
        with open(f"{out}/{name}.json") as f:
            return json.load(f)
    except Exception as e:
        print(f"{name}.json: {e}")
        return {"results": []}
one, all_ = load("one"), load("all")
print("\nRows of --devices all, with the GPU each ran on:")
print(f"{'case':34} {'row':18} {'gpu':>3} {'status':7} {'kernel':>12}")
for r in all_["results"]:
    d = r.get("device") or {}
    t = (r.get("timings") or [{}])[0].get("kernel", {}).get("median_ns")
    kernel = f"{t/1000:.2f} us" if t else "-"
    print(f"{r['case_id']:34} {r['label']:18} {str(d.get('index', '-')):>3} {r['status']:7} {kernel:>12}")
per_gpu = collections.Counter(str((r.get("device") or {}).get("index", "cpu")) for r in all_["results"] if r["status"] != "skip")
try:
    verdicts = open(f"{out}/compare.md").readline().strip()  # its first line counts the verdicts
except OSError:
    verdicts = "no compare output"
wall = {n: open(f"{out}/{n}.wall").read().strip() for n in ("one", "all")}
rc = {n: open(f"{out}/{n}.rc").read().strip() for n in ("one", "all")}
def count(run, status):
    return sum(1 for r in run["results"] if r["status"] == status)
speedup = float(wall["one"]) / float(wall["all"]) if float(wall["all"]) > 0 else float("nan")
print("\nSummary")
print(f"| run           | exit | wall s | rows | pass | fail | error | skip |")
print(f"|---------------|-----:|-------:|-----:|-----:|-----:|------:|-----:|")
for name, run in (("--devices 0", one), ("--devices all", all_)):
    key = "one" if name.endswith("0") else "all"
    print(f"| {name:13} | {rc[key]:>4} | {wall[key]:>6} | {len(run['results']):4} | {count(run,'pass'):4} | {count(run,'fail'):4} | {count(run,'error'):5} | {count(run,'skip'):4} |")
print(f"wall-time speedup of --devices all: {speedup:.2f}x; rows run per GPU: {dict(per_gpu)}")
print(f"flashcore compare, gpu 0 -> all gpus: {verdicts}")
PY
