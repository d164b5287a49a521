#!/usr/bin/env bash
# Verify cuda-hopper on an H100 from a dist/ folder (make dist): the seed,
# default and llm suites against PyTorch SDPA, the ablation chain
# (cuda-scalar → cuda-wmma → cuda-v8 → cuda-hopper → triton → sdpa) at the
# seed shape and B4 H16 S2048 D128, cuda-hopper's overlap and producer tunables at those
# shapes, and compute-sanitizer (memcheck, racecheck, synccheck) around the
# plugin on the default suite. Logs and results JSON go to $OUT (default
# ./gpu-verify-hopper-out); a summary table is printed last.
#
#   dist/scripts/gpu-verify-hopper.sh           everything (several minutes)
#   dist/scripts/gpu-verify-hopper.sh quick     chain, seed, default, memcheck (no llm)
#   dist/scripts/gpu-verify-hopper.sh chain     the chain suite only
#
# WITH="" runs cuda-hopper alone in the seed, default and llm suites (the
# default, ",pytorch-sdpa", runs SDPA beside it).
# Needs: nvidia-smi and compute-sanitizer on PATH (or in /usr/local/cuda/bin),
# python3 with torch and triton.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/gpu-verify-hopper-out}
mkdir -p "$OUT"
export PATH=$PATH:/usr/local/cuda/bin
FC="$DIST/flashcore"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
WHAT=${1:-all}
# Backends run beside cuda-hopper in the seed, default and llm suites.
WITH=${WITH-,pytorch-sdpa}

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  "$FC" version
  "$FC" describe cuda-hopper
} >"$OUT/env.txt" 2>&1
head -3 "$OUT/env.txt"

cat >"$TMP/chain.toml" <<'TOML'
name = "chain"
description = "The ablation chain at the seed shape and B4 H16 S2048 D128"
seed = 20251022
[measurement]
warmup_runs = 5
min_samples = 10
target_noise = 0.01
time_cap = "2s"
call_samples = 5
l2 = ["hot"]
[[backends]]
name = "cuda-scalar"
[[backends]]
name = "cuda-wmma"
[[backends]]
name = "cuda-v8"
[[backends]]
name = "cuda-hopper"
[backends.tunables]
overlap = ["0", "1", "2"]
producer = ["wait", "ahead", "tma", "tma-persistent"]
# the chain is the wgmma kernel's: auto takes the split kernel at the seed
# shape, where these tunables do nothing (its row is the suite runs' below)
kernel = ["wgmma"]
[[backends]]
name = "triton"
[[backends]]
name = "pytorch-sdpa"
[[cases]]
batch = 1
heads = 8
seq_q = 512
head_dim = 64
dtype = "fp16"
[[cases]]
batch = 4
heads = 16
seq_q = 2048
head_dim = 128
dtype = "fp16"
TOML

declare -A STATUS
run_suite() { # name suite-file backends
  local name=$1 suite=$2 backends=$3
  echo "== $name: $backends"
  "$FC" run --suite "$suite" --backends "$backends" --out "$OUT/$name.json" --keep-going \
    >"$OUT/$name.txt" 2>"$OUT/$name.stderr.txt"
  STATUS[$name]="exit $?"
  "$FC" report --format markdown "$OUT/$name.json" >"$OUT/$name.md" 2>>"$OUT/$name.stderr.txt"
}

sanitize() { # tool
  echo "== compute-sanitizer $1 around cuda-hopper, default suite"
  FLASHCORE_PLUGIN_WRAPPER="compute-sanitizer --tool $1 --error-exitcode 9 --log-file $OUT/sanitizer-$1.log" \
    "$FC" run --backends cuda-hopper --out "$TMP/san-$1.json" --keep-going >"$OUT/sanitizer-$1.txt" 2>&1
  STATUS[sanitizer-$1]="exit $?, $(grep -hE 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$1.log" | sort | uniq -c | tr -s ' ' | paste -sd ';')"
}

run_suite chain "$TMP/chain.toml" cuda-scalar,cuda-wmma,cuda-v8,cuda-hopper,triton,pytorch-sdpa
if [ "$WHAT" != chain ]; then
  run_suite seed "$DIST/suites/seed.toml" "cuda-hopper$WITH"
  run_suite default "$DIST/suites/default.toml" "cuda-hopper$WITH"
  sanitize memcheck
fi
if [ "$WHAT" = all ]; then
  sanitize racecheck
  sanitize synccheck
  run_suite llm "$DIST/suites/llm.toml" "cuda-hopper$WITH"
fi

echo
echo "== chain (full table: $OUT/chain.md)"
cat "$OUT/chain.txt"
echo
echo "== summary: cuda-hopper rows by verdict, per suite"
for name in chain seed default llm; do
  [ -f "$OUT/$name.json" ] || continue
  python3 - "$OUT/$name.json" "$name" "${STATUS[$name]}" <<'PY'
import collections, json, sys
run = json.load(open(sys.argv[1]))
verdicts = collections.Counter(r.get("status", "?") for r in run.get("results", []) if r.get("backend") == "cuda-hopper")
line = ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items()))
for b in run.get("backends", []):
    if b.get("name") == "cuda-hopper" and not b.get("available", True):
        line += f"unavailable: {b.get('unavailable_reason', '?')}"
print(f"{sys.argv[2]:8} {sys.argv[3]:8} {line}")
PY
done
for k in sanitizer-memcheck sanitizer-racecheck sanitizer-synccheck; do
  [ -n "${STATUS[$k]:-}" ] && echo "$k: ${STATUS[$k]}"
done
