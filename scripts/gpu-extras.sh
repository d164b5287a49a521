#!/usr/bin/env bash
# The third-party kernel libraries on a GPU machine without a package
# index, from a dist/ folder built elsewhere (make dist gpu-tests
# GPU_TEST_PLUGINS="cuda-hopper flash-attn-4 flashinfer") and the extras'
# wheels downloaded elsewhere (scripts/extras.py download --extras all).
# Logs, results and tables go to $OUT_DIR.
#
#   WHEELS=DIR dist/scripts/gpu-extras.sh                  # every step
#   STEPS="sota verify" dist/scripts/gpu-extras.sh          # some (after install)
#
# Steps: install (scripts/extras.py install into $SITE), list, conformance
# (the two plugins' conformance binaries), sota (suites/sota.toml on every
# backend), verify (verify-timing on the sota suite and a small serving
# suite, CUPTI reference), llm, backward (llm-backward), serving.
#
# Needs: nvidia-smi, python3 with torch and triton, nvcc for FlashInfer's
# JIT (CUDA_HOME or /usr/local/cuda).
set -uo pipefail
DIST=${DIST:-$(cd "$(dirname "$0")/.." && pwd)}
OUT_DIR=${OUT_DIR:-$PWD/gpu-extras-out}
STEPS=${STEPS:-install list conformance sota verify llm backward serving}
SITE=${SITE:-/tmp/flashcore-extras}
WHEELS=${WHEELS:-wheels}
mkdir -p "$OUT_DIR"
export FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3} FLASHCORE_BIN=$DIST
export PATH=$PATH:/usr/local/cuda/bin
FC="$DIST/flashcore"
# The rows: cuDNN (sdpa, PyTorch's own dispatch on an H100) and
# FlashAttention-2 (sdpa-flash), the libraries, flex-attention, ours.
BACKENDS=${BACKENDS:-sdpa,sdpa-flash,flash-attn-4,flashinfer,flex-attention,triton,cuda-hopper}

VERIFY_BACKENDS=${VERIFY_BACKENDS:-sdpa,flash-attn-4,flashinfer}
VERIFY_SERVING_BACKENDS=${VERIFY_SERVING_BACKENDS:-flash-attn-4,flashinfer}
SUITE_TAG=${SUITE_TAG:-}

# shellcheck source=gpu-common.sh
. "$(dirname "${BASH_SOURCE[0]}")/gpu-common.sh"

has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

if has install; then
  timed install "$FLASHCORE_PYTHON" "$DIST/scripts/extras.py" install --wheels "$WHEELS" --target "$SITE"
fi
if [ -f "$SITE/env.sh" ]; then
  # shellcheck disable=SC1091
  . "$SITE/env.sh"
fi

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  "$FLASHCORE_PYTHON" - <<'EOF'
import importlib.metadata as m, sys, torch, triton
print("python", sys.version.split()[0], "torch", torch.__version__, "cuDNN", torch.backends.cudnn.version(),
      "triton", triton.__version__)
for d in ("flash-attn-4", "nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13", "quack-kernels", "flashinfer-python",
          "apache-tvm-ffi"):
    try:
        print(d, m.version(d))
    except m.PackageNotFoundError:
        print(d, "not installed")
EOF
  nvcc --version | tail -2
  "$FC" version
} >>"$OUT_DIR/env.txt" 2>&1

has list && timed list "$FC" list
if has conformance; then
  for p in flash-attn-4 flashinfer; do
    timed "conformance-$p" "$DIST/tests/$p.test" -test.v -test.count=1 -test.timeout 20m
  done
fi

# A small serving suite for verify-timing: decode (a GQA batch, speculative
# tokens over uneven lengths) and a varlen batch.
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
batch = 32
heads = 32
kv_heads = 8
head_dim = 128
context_len = 8192
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
op = "varlen"
batch = 4
heads = 8
kv_heads = 2
seq_q = 2048
head_dim = 128
EOF

run_suite() {
  local name=$1$SUITE_TAG suite=$2 backends=$3
  timed "$name" "$FC" run --suite "$suite" --backends "$backends" --format markdown --keep-going \
    --out "$OUT_DIR/$name.json"
}

has sota && run_suite sota "$DIST/suites/sota.toml" "$BACKENDS"
if has verify; then
  timed verify-sota "$FC" verify-timing --suite "$DIST/suites/sota.toml" --backends "$VERIFY_BACKENDS" \
    --reference cupti --out "$OUT_DIR/verify-sota"
  timed verify-serving "$FC" verify-timing --suite "$OUT_DIR/serving-small.toml" --backends "$VERIFY_SERVING_BACKENDS" \
    --reference cupti --out "$OUT_DIR/verify-serving"
fi
has llm && run_suite llm "$DIST/suites/llm.toml" "$BACKENDS"
has backward && run_suite backward "$DIST/suites/llm-backward.toml" sdpa,sdpa-flash,flash-attn-4,triton
has serving && run_suite serving "$DIST/suites/serving.toml" sdpa-paged,sdpa-varlen,flex-attention,flash-attn-4,flashinfer,triton,cuda-hopper
exit $rc
