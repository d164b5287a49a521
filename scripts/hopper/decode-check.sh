#!/usr/bin/env bash
# decode-check.sh: build scripts/hopper/decode-harness.cu on a Hopper machine
# with its nvcc (or take $HARNESS, built elsewhere, e.g. with the project's
# pinned nvcc: the line at the top of decode-harness.cu), run compute-sanitizer
# (memcheck, racecheck, synccheck; TOOLS picks) on the small cases, then every
# case. Logs go under $OUT (default /tmp/decode-check); the harness's summary
# table (µs, GB/s, % of 3350 GB/s) is printed last. Extra arguments go to the
# harness (a label filter).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/decode-check}
mkdir -p "$OUT"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
SAN=${SAN:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee "$OUT/device.txt"
if [ -n "${HARNESS:-}" ]; then
  echo "prebuilt harness: $HARNESS"
  cp "$HARNESS" "$OUT/decode-harness"
else
  "$NVCC" --version | tail -1
  "$NVCC" -std=c++17 -O3 -Icudakit/gpu/kernels -gencode arch=compute_90a,code=sm_90a -Xptxas -v \
    -o "$OUT/decode-harness" scripts/hopper/decode-harness.cu 2>"$OUT/ptxas.txt" || { cat "$OUT/ptxas.txt"; exit 1; }
  grep -E "spill|C75" "$OUT/ptxas.txt" | sort | uniq -c
fi
for tool in ${TOOLS:-memcheck racecheck synccheck}; do
  timeout 300 "$SAN" --tool "$tool" --error-exitcode 9 "$OUT/decode-harness" small "$@" >"$OUT/sanitizer-$tool.txt" 2>&1
  echo "compute-sanitizer $tool: exit $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tail -1))"
done
timeout 600 "$OUT/decode-harness" "$@" 2>&1 | tee "$OUT/decode-harness.txt"
