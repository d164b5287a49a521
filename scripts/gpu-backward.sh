#!/usr/bin/env bash
# Attention backward on a GPU machine, from a dist/ folder built elsewhere
# (make dist gpu-tests): the backward suite in modes bwd and fwd+bwd on
# every GPU backend, verify-timing on backward rows, the planted wrong
# gradients, and the cuda-wmma kit's backward cases. Logs, results and
# tables go to $OUT_DIR.
#
#   dist/scripts/gpu-backward.sh              # everything
#   STEPS="suite verify" dist/scripts/gpu-backward.sh
#
# Needs: nvidia-smi, python3 with torch and triton (FLASHCORE_PYTHON to
# choose another Python).
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-backward-out}
STEPS=${STEPS:-kit planted verify suite}
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

# A small backward suite for verify-timing and the planted faults: two
# cases per mode, every GPU backend.
cat >"$OUT_DIR/backward-small.toml" <<'EOF'
name = "backward-small"
seed = 11
[measurement]
warmup_runs = 3
min_samples = 10
time_cap = "1s"
call_samples = 5
[[backends]]
name = "pytorch-sdpa"
[[backends]]
name = "triton"
[[backends]]
name = "cuda-wmma"
[[sweeps]]
batch = [4]
heads = [16]
seq_q = [1024]
head_dim = [64]
dtype = ["fp16"]
causal = [true]
mode = ["bwd", "fwd+bwd"]
[[sweeps]]
batch = [2]
heads = [16]
kv_heads = [4]
seq_q = [2048]
head_dim = [128]
dtype = ["bf16"]
causal = [false]
mode = ["bwd", "fwd+bwd"]
EOF

for step in $STEPS; do
  case $step in
  kit)
    # The conformance kit's backward cases, in process, on the GPU.
    for p in cuda-wmma pytorch-sdpa triton; do
      [ -x "$DIST/tests/$p.test" ] || continue
      timed "kit-$p" "$DIST/tests/$p.test" -test.run 'Conformance|Backward' -test.v -test.timeout 20m
      grep -E -- '^(--- |ok|FAIL|PASS)' "$OUT_DIR/kit-$p.txt" | grep -iE 'backward|bwd|^(ok|FAIL|PASS)' | tail -15
    done
    ;;
  planted)
    # The planted wrong gradients, computed on the GPU (PyTorch's backward
    # with one fault each, scripts/planted_gradients.py), against the
    # small suite's bwd cases.
    mkdir -p "$OUT_DIR/planted"
    backends=pytorch-sdpa:sdpa
    for fault in honest zero_dk nan_dq swap_dkdv wrong_group transposed_dk noise_dq; do
      cp "$DIST/scripts/planted_gradients.py" "$OUT_DIR/planted/planted_$fault.py"
      backends+=",py:$OUT_DIR/planted/planted_$fault.py"
    done
    timed planted "$DIST/flashcore" run --suite "$OUT_DIR/backward-small.toml" --backends "$backends" \
      --format markdown --out "$OUT_DIR/planted.json" --keep-going
    grep -E '^\| (sdpa|planted)' "$OUT_DIR/planted.txt" | cut -c1-220
    ;;
  verify)
    timed verify-timing "$DIST/flashcore" verify-timing --suite "$OUT_DIR/backward-small.toml" --out "$OUT_DIR/verify"
    tail -n 40 "$OUT_DIR/verify-timing.txt"
    ;;
  suite)
    timed llm-backward "$DIST/flashcore" run --suite "$DIST/suites/llm-backward.toml" --format markdown \
      --out "$OUT_DIR/llm-backward.json" --keep-going
    "$DIST/flashcore" report --format markdown "$OUT_DIR/llm-backward.json" >"$OUT_DIR/llm-backward.md" 2>&1
    grep -c '| PASS' "$OUT_DIR/llm-backward.md"
    ;;
  esac
done
exit $rc
