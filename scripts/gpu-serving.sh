#!/usr/bin/env bash
# Serving attention on a GPU machine, from a dist/ folder built elsewhere
# (make dist gpu-tests GPU_TEST_PLUGINS=cuda-hopper): cuda-hopper's decode
# kernel on odd cases in process, the planted paging faults, verify-timing
# on a small serving suite, and the whole serving suite on every backend.
# Logs, results and tables go to $OUT_DIR.
#
#   dist/scripts/gpu-serving.sh                     # everything
#   STEPS="planted verify" dist/scripts/gpu-serving.sh
#
# Needs: nvidia-smi, python3 with torch and triton (FLASHCORE_PYTHON to
# choose another Python).
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-serving-out}
STEPS=${STEPS:-kernel planted verify suite}
mkdir -p "$OUT_DIR"
export FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3} FLASHCORE_BIN=$DIST

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  "$FLASHCORE_PYTHON" -c 'import sys, torch, triton; print("python", sys.version.split()[0], "torch", torch.__version__, "cuDNN", torch.backends.cudnn.version(), "triton", triton.__version__)'
  "$DIST/flashcore" version
} 2>&1 | tee -a "$OUT_DIR/env.txt"

# shellcheck source=gpu-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/gpu-common.sh"

# A small serving suite for verify-timing and the planted faults: the
# decode shape B3 H5/1 8191, speculative tokens over uneven lengths, a
# bandwidth-bound batch, and a varlen batch.
cat >"$OUT_DIR/serving-small.toml" <<'EOF'
name = "serving-small"
seed = 11
[measurement]
warmup_runs = 3
min_samples = 10
time_cap = "1s"
call_samples = 5
l2 = ["hot"]
[[cases]]
op = "decode"
batch = 3
heads = 5
kv_heads = 1
head_dim = 128
context_len = 8191
[[cases]]
op = "decode"
batch = 8
heads = 32
kv_heads = 8
q_len = 4
head_dim = 128
context_len = 2048
context_dist = "uniform"
[[cases]]
op = "decode"
batch = 32
heads = 32
kv_heads = 8
head_dim = 128
context_len = 8192
[[cases]]
op = "varlen"
batch = 4
heads = 8
kv_heads = 2
seq_q = 512
head_dim = 64
EOF

for step in $STEPS; do
  case $step in
  kernel)
    # cuda-hopper's conformance kit through dist's plugin binary: decode's
    # example cases (odd lengths, scattered pages, poison) among them.
    if [ -x "$DIST/tests/cuda-hopper.test" ]; then
      timed kernel-cuda-hopper "$DIST/tests/cuda-hopper.test" -test.run 'Conformance|Decode' -test.v -test.timeout 10m
      grep -E -- '^(--- |ok|FAIL|PASS)|GB/s' "$OUT_DIR/kernel-cuda-hopper.txt" | tail -30
    fi
    ;;
  planted)
    # The planted paging faults, computed on the GPU
    # (scripts/planted_decode.py), on the small suite's decode cases.
    mkdir -p "$OUT_DIR/planted"
    backends=pytorch-sdpa:sdpa-paged
    for fault in honest past_context in_order top_left; do
      cp "$DIST/scripts/planted_decode.py" "$OUT_DIR/planted/planted_$fault.py"
      backends+=",py:$OUT_DIR/planted/planted_$fault.py"
    done
    timed planted "$DIST/flashcore" run --suite "$OUT_DIR/serving-small.toml" --backends "$backends" \
      --format markdown --out "$OUT_DIR/planted.json" --keep-going
    grep -E '^\| (sdpa|planted)' "$OUT_DIR/planted.txt" | cut -c1-200
    ;;
  verify)
    timed verify-timing "$DIST/flashcore" verify-timing --suite "$OUT_DIR/serving-small.toml" \
      --backends pytorch-sdpa,triton,cuda-hopper --out "$OUT_DIR/verify"
    tail -n 40 "$OUT_DIR/verify-timing.txt"
    ;;
  suite)
    timed serving "$DIST/flashcore" run --suite serving --format markdown --out "$OUT_DIR/serving.json" --keep-going
    "$DIST/flashcore" report --format markdown "$OUT_DIR/serving.json" >"$OUT_DIR/serving.md" 2>&1
    grep -cE '\| PASS' "$OUT_DIR/serving.md"
    grep -E 'FAIL|ERROR' "$OUT_DIR/serving.md" | cut -c1-250 | head -20
    ;;
  esac
done
exit $rc
