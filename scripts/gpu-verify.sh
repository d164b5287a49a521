#!/usr/bin/env bash
# Verify FlashCore bench on a GPU machine from a dist/ folder (see README):
# the suites on every backend, kernel times against Nsight Compute, and
# compute-sanitizer on the CUDA kernels. Logs and results go to $OUT_DIR.
#
#   scripts/gpu-verify.sh seed     # seed suite, ncu cross-check, sanitizer
#   scripts/gpu-verify.sh llm      # the llm suite
#   scripts/gpu-verify.sh seeds    # seed and llm suites under three input seeds, verdicts only
#   SEED_JSON=seed.json scripts/gpu-verify.sh ncu-bridges   # ncu on the bridges' kernels only
#   scripts/gpu-verify.sh timing-probe   # where the bridges' kernel time comes from (docs/measurement.md)
#
# Needs: nvidia-smi, ncu and compute-sanitizer on PATH (or in
# /usr/local/cuda/bin), python3 with torch and triton.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-verify-out}
mkdir -p "$OUT_DIR"
export PATH=$PATH:/usr/local/cuda/bin
FC="$DIST/flashcore"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

env_info() {
  {
    date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    nvcc --version | tail -1; ncu --version | tail -1; python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
    "$FC" version
  } 2>&1 | tee "$OUT_DIR/env.txt"
  "$FC" list 2>&1 | tee "$OUT_DIR/list.txt"
}

one_case_suite() { # name l2
  cat > "$TMP/$1.toml" <<TOML
name = "$1"
seed = 20251022
[measurement]
warmup_runs = 5
min_samples = 20
max_samples = 40
time_cap = "1s"
call_samples = 5
l2 = ["$2"]
[[cases]]
batch = 1
heads = 8
seq_q = 512
head_dim = 64
dtype = "fp16"
TOML
}

ncu_crosscheck() { # backend l2 cache-control
  local b=$1 mode=$2 cache=$3
  one_case_suite "ncu-$b-$mode" "$mode"
  # ncu wraps the plugin itself (FLASHCORE_PLUGIN_WRAPPER): profilers follow
  # children through libc's exec, which Go does not use.
  FLASHCORE_PLUGIN_WRAPPER="ncu --clock-control none --cache-control $cache --metrics gpu__time_duration.sum -k regex:^attn_fwd --launch-count 40 --csv --log-file $OUT_DIR/ncu-$b-$mode.csv" \
    "$FC" run --suite "$TMP/ncu-$b-$mode.toml" --backends "$b" --out "$TMP/profiled.json" --format csv >/dev/null 2>"$TMP/ncu-stderr.txt" \
    || { echo "ncu run failed for $b"; tail -5 "$TMP/ncu-stderr.txt"; }
  python3 "$DIST/scripts/ncu_crosscheck.py" --ncu "$OUT_DIR/ncu-$b-$mode.csv" --results "$OUT_DIR/seed.json" \
      --kernel-regex '^attn_fwd' --backend "$b" --case b1-h8-s512-d64-fp16 --mode "$mode"
}

ncu_bridges() {
  local seed=${SEED_JSON:-$OUT_DIR/seed.json}
  local config
  config=$(python3 -c 'import json,sys; print(next(r["facts"]["config"] for r in json.load(open(sys.argv[1]))["results"] if r["backend"]=="triton" and r["case_id"]=="b1-h8-s512-d64-fp16"))' "$seed")
  echo "triton config of the seed run: $config"
  ncu --profile-from-start off --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
      --log-file "$OUT_DIR/ncu-bridges.csv" python3 "$DIST/scripts/ncu_bridge_probe.py" "$DIST/scripts/triton_attention.py" "$config" \
      2>"$TMP/ncu-bridges-stderr.txt" || tail -5 "$TMP/ncu-bridges-stderr.txt"
  python3 "$DIST/scripts/ncu_crosscheck.py" --ncu "$OUT_DIR/ncu-bridges.csv" --results "$seed" \
      --kernel-regex 'cudnn_generated_fort_native_sdpa' --backend pytorch-sdpa --label sdpa --case b1-h8-s512-d64-fp16 --mode hot
  python3 "$DIST/scripts/ncu_crosscheck.py" --ncu "$OUT_DIR/ncu-bridges.csv" --results "$seed" \
      --kernel-regex '_attention_forward' --backend triton --case b1-h8-s512-d64-fp16 --mode hot
}

sanitize() {
  cat > "$TMP/sanitize.toml" <<'TOML'
name = "sanitize"
[measurement]
warmup_runs = 1
warmup_time = "0s"
min_samples = 2
max_samples = 2
call_samples = 1
call_timeout = "600s"
[check]
repeat = 1
[[cases]]   # small
batch = 1
heads = 2
seq_q = 64
head_dim = 64
[[cases]]   # odd: GQA, Sq != Sk, no tile multiples, causal, D128, bf16
batch = 2
heads = 4
kv_heads = 2
seq_q = 77
seq_k = 131
head_dim = 128
dtype = "bf16"
causal = true
TOML
  for b in cuda-scalar cuda-wmma cuda-v8; do
    FLASHCORE_PLUGIN_WRAPPER="compute-sanitizer --tool memcheck --print-limit 20 --log-file $OUT_DIR/sanitizer-$b.txt" \
      "$FC" run --suite "$TMP/sanitize.toml" --backends "$b" --out "$TMP/san.json" --format csv \
      >"$OUT_DIR/sanitizer-run-$b.txt" 2>&1
    echo "$b memcheck: flashcore exit $?, $(grep -E 'ERROR SUMMARY' "$OUT_DIR/sanitizer-$b.txt" | sort | uniq -c | tr '\n' ' ')$(grep -cE '^\[.*PASS' "$OUT_DIR/sanitizer-run-$b.txt") rows PASS"
  done
}

# quick_suite SRC DST: SRC with a measurement trimmed to what a verdict
# needs (the check does not depend on how many samples are taken).
quick_suite() {
  python3 - "$1" "$2" <<'PY'
import re, sys, tomllib
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
l2 = tomllib.loads(text).get("measurement", {}).get("l2", ["hot"])
text = re.sub(r"(?ms)^\[measurement\]\n.*?(?=^\[)", "", text)
text += '\n[measurement]\nwarmup_runs = 1\nwarmup_time = "0s"\nmin_samples = 3\nmax_samples = 10\ntime_cap = "20ms"\ncall_samples = 3\nl2 = %s\n' % str(l2).replace("'", '"')
open(dst, "w").write(text)
PY
}

# verdicts FILE: rows per backend and status.
verdicts() {
  python3 - "$1" <<'PY'
import json, sys, collections
run = json.load(open(sys.argv[1]))
counts = collections.Counter((r["backend"], r["status"]) for r in run["results"])
backends = sorted({b for b, _ in counts})
print(f"  seed {run['suite']['seed']}: " + "; ".join(f"{b} " + " ".join(f"{s} {counts[(b, s)]}" for s in ("pass", "fail", "error", "skip") if counts[(b, s)]) for b in backends))
for r in run["results"]:
    if r["status"] in ("fail", "error"):
        print(f"    {r['status'].upper()} {r['case_id']} {r.get('label') or r['backend']}: {r.get('reason', '')[:300]}")
PY
}

case "${1:-seed}" in
  seeds)   # every suite under three input seeds, measurement trimmed: verdicts only
    env_info
    for name in ${SUITES:-seed llm}; do
      quick_suite "$DIST/suites/$name.toml" "$TMP/$name-quick.toml"
      for s in ${SEEDS:-20251022 7 424242}; do
        "$FC" run --suite "$TMP/$name-quick.toml" --seed "$s" --out "$OUT_DIR/$name-seed$s.json" --format markdown --keep-going \
          >"$OUT_DIR/$name-seed$s.md" 2>"$OUT_DIR/$name-seed$s.log"
        echo "$name suite, seed $s: exit $?, $(tail -1 "$OUT_DIR/$name-seed$s.log")"
        verdicts "$OUT_DIR/$name-seed$s.json"
      done
    done
    ;;
  seed)
    env_info
    "$FC" run --suite "$DIST/suites/seed.toml" --out "$OUT_DIR/seed.json" --format markdown --keep-going \
      >"$OUT_DIR/seed.md" 2>"$OUT_DIR/seed.log"; echo "seed run exit $?"
    "$FC" report "$OUT_DIR/seed.json"
    for b in cuda-scalar cuda-wmma cuda-v8; do
      ncu_crosscheck "$b" hot none
      ncu_crosscheck "$b" cold all
    done
    ncu_bridges
    sanitize
    ;;
  ncu-bridges)   # SEED_JSON=results of an earlier seed run
    ncu_bridges
    ;;
  timing-probe)   # CUPTI, events and ncu per call at the seed and llm shapes
    python3 "$DIST/scripts/timing_probe.py" --shapes seed --cold --ncu --json "$OUT_DIR/timing-probe-seed.json" \
      2>&1 | tee "$OUT_DIR/timing-probe-seed.txt"
    python3 "$DIST/scripts/timing_probe.py" --shapes llm --ncu --json "$OUT_DIR/timing-probe-llm.json" \
      2>&1 | tee "$OUT_DIR/timing-probe-llm.txt"
    ;;
  llm)
    "$FC" run --suite "$DIST/suites/llm.toml" --out "$OUT_DIR/llm.json" --format markdown --keep-going \
      >"$OUT_DIR/llm.md" 2>"$OUT_DIR/llm.log"; echo "llm run exit $?"
    "$FC" report "$OUT_DIR/llm.json" | tail -40
    ;;
esac
