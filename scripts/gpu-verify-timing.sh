#!/usr/bin/env bash
# Verify flashcore's kernel times against Nsight Compute, and profile the
# seed case, on a GPU machine from a dist/ folder (make dist; no Go needed).
# Everything goes to $OUT_DIR (default ./gpu-verify-timing-out):
#
#   env.txt                          GPU, driver, ncu, torch versions
#   verify-<suite>-<l2>.txt          the verify-timing table; .log its progress;
#   verify-<suite>-<l2>/             its results.json, ncu reports and ncu logs
#   profile-<backend>.txt            the profile table; profile-<backend>/ its .ncu-rep
#   summary.txt                      one line per command with its exit code
#
#   scripts/gpu-verify-timing.sh            # all of it
#   scripts/gpu-verify-timing.sh seed       # verify-timing on the seed suite only (hot, cold)
#   scripts/gpu-verify-timing.sh one SUITE L2 [flags]   # one verify-timing, e.g.
#       scripts/gpu-verify-timing.sh one llm hot --reference cupti --backends pytorch-sdpa,triton
#
# Needs: nvidia-smi, ncu (on PATH or in /usr/local/cuda/bin), python3 with
# torch and triton. Exit codes of verify-timing: 0 all PASS, 1 a row FAILed
# the bound, 3 a row has no ncu figure, 4 ncu missing or not permitted.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-verify-timing-out}
mkdir -p "$OUT_DIR"
export PATH=$PATH:/usr/local/cuda/bin
FC="$DIST/flashcore"
SEED_CASE=b1-h8-s512-d64-fp16

note() { echo "$*" | tee -a "$OUT_DIR/summary.txt"; }

env_info() {
  {
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
    ncu --version | tail -1
    python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
    "$FC" version
  } > "$OUT_DIR/env.txt" 2>&1
  cat "$OUT_DIR/env.txt"
}

verify() { # suite l2 [flags...]
  local suite=$1 l2=$2; shift 2
  local name="verify-$suite-$l2${*:+-$(echo "$*" | tr -c 'A-Za-z0-9,\n-' '_' | tr -s '_')}"
  "$FC" verify-timing --suite "$DIST/suites/$suite.toml" --l2 "$l2" --out "$OUT_DIR/$name" "$@" \
    > "$OUT_DIR/$name.txt" 2> "$OUT_DIR/$name.log"
  local rc=$?
  cat "$OUT_DIR/$name.txt"
  note "verify-timing $suite $l2 $*: exit $rc ($(tail -1 "$OUT_DIR/$name.txt"))"
}

profile() { # backend
  "$FC" profile --backend "$1" --case "$SEED_CASE" --suite "$DIST/suites/seed.toml" --out "$OUT_DIR/profile-$1" \
    > "$OUT_DIR/profile-$1.txt" 2>&1
  local rc=$?
  cat "$OUT_DIR/profile-$1.txt"
  note "profile $1 $SEED_CASE: exit $rc"
}

: > "$OUT_DIR/summary.txt"
env_info
case "${1:-all}" in
  seed)
    verify seed hot
    verify seed cold
    ;;
  one)
    shift
    verify "$@"
    ;;
  all)
    verify seed hot
    verify seed cold
    verify llm hot
    profile cuda-v8
    profile sdpa
    ;;
esac
echo; cat "$OUT_DIR/summary.txt"
