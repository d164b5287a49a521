#!/usr/bin/env bash
# Tune cuda-v8 and triton on a GPU machine from a dist/ folder (make dist;
# no Go needed), at the seed shape (B1 H8 S512 D64 fp16) and one d128 LLM
# shape (B4 H16 S2048 D128 fp16): suites/tune.toml, whose measurement is
# shortened for tuning candidates. Each backend gets BUDGET evaluations per
# case (default 40) and a time limit per case (430 s in all).
#
# Logs go under $OUT if set, else ./gpu-tune-out:
#
#   env.txt                       GPU, driver, torch and triton versions
#   tune-<backend>-<case>.txt     flashcore tune's table of the top configurations
#   tune-<backend>-<case>.log     its progress (one line per candidate)
#   tuned-<backend>-<case>.toml   the best configuration (a tuned file suites can name)
#   state-<backend>-<case>.json   the search's state: every evaluation and its verdict
#   summary.txt                   the table printed last: default, best, gain
#
#   scripts/gpu-tune.sh                 # both backends
#   BUDGET=60 scripts/gpu-tune.sh       # more evaluations per case
#
# Needs: nvidia-smi, python3 with torch and triton. Exit code: 0 when both searches ended with a best configuration
# for every case; otherwise the worst exit code of flashcore tune.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT:-$PWD/gpu-tune-out}
mkdir -p "$OUT_DIR"
FC="$DIST/flashcore"
BUDGET=${BUDGET:-40}
SUITE="$DIST/suites/tune.toml"
worst=0

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
  "$FC" version
} > "$OUT_DIR/env.txt" 2>&1
cat "$OUT_DIR/env.txt"

SEED_CASE=b1-h8-s512-d64-fp16
LLM_CASE=b4-h16-s2048-d128-fp16

# One search per backend and case, each with its own time limit, so a slow
# first case cannot starve the second: 430 s in all at most, plus starts.
tune() { # backend case time-limit population
  local b=$1 c=$2 limit=$3 population=$4 name="$1-$2"
  echo "== tune $b on $c: budget $BUDGET, population $population, at most $limit"
  local start=$SECONDS
  "$FC" tune --backend "$b" --suite "$SUITE" --cases "$c" --budget "$BUDGET" --time "$limit" --seed 1 \
    --population "$population" --resume "$OUT_DIR/state-$name.json" --out "$OUT_DIR/tuned-$name.toml" \
    > "$OUT_DIR/tune-$name.txt" 2> "$OUT_DIR/tune-$name.log"
  local rc=$?
  cat "$OUT_DIR/tune-$name.txt"
  tail -3 "$OUT_DIR/tune-$name.log"
  echo "tune $b $c: exit $rc in $((SECONDS - start)) s"
  [ "$rc" -gt "$worst" ] && worst=$rc
}

rm -f "$OUT_DIR"/state-*.json  # a fresh search each time the script runs
tune cuda-v8 "$SEED_CASE" 50s 8
tune cuda-v8 "$LLM_CASE" 80s 8
tune triton "$SEED_CASE" 140s 10
tune triton "$LLM_CASE" 160s 10

python3 - "$OUT_DIR" "$BUDGET" > "$OUT_DIR/summary.txt" <<'PY'
import json, os, sys

out, budget = sys.argv[1], int(sys.argv[2])
rows = []
for backend, case in (("cuda-v8", "b1-h8-s512-d64-fp16"), ("cuda-v8", "b4-h16-s2048-d128-fp16"),
                      ("triton", "b1-h8-s512-d64-fp16"), ("triton", "b4-h16-s2048-d128-fp16")):
    state_path = os.path.join(out, f"state-{backend}-{case}.json")
    if not os.path.exists(state_path):
        rows.append((backend, case, "no state file", "", "", "", "", ""))
        continue
    state = json.load(open(state_path))
    for search in state["searches"]:
        evals = search["evaluations"]
        accepted = [e for e in evals if e["accepted"]]
        rejected = len(evals) - len(accepted)
        default = next((e for e in evals if e["index"] == 1), None)  # the defaults are always evaluated first
        best = min(accepted, key=lambda e: e["kernel_ns"]) if accepted else None
        d_us = f"{default['kernel_ns'] / 1e3:.2f}" if default and default["accepted"] else "-"
        b_us = f"{best['kernel_ns'] / 1e3:.2f}" if best else "-"
        gain = f"{default['kernel_ns'] / best['kernel_ns']:.2f}x" if best and default and default["accepted"] else "-"
        config = ",".join(f"{k}={v}" for k, v in sorted(best["config"].items())) if best else "-"
        rows.append((backend, search["case_id"], f"{len(evals)}/{budget}", str(rejected), d_us, b_us, gain, config))
header = ("backend", "case", "evals", "rejected", "default us", "best us", "gain", "best config")
widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
print("flashcore tune summary (default = the backend's default configuration, evaluation 1 of each search)")
for r in [header] + rows:
    print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))
PY
echo
cat "$OUT_DIR/summary.txt"
exit "$worst"
