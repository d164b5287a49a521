#!/usr/bin/env bash
# device-check.sh: build scripts/hopper/harness.cu on a Hopper machine with
# its nvcc (or take $HARNESS, built elsewhere), run every case, then compute-sanitizer (memcheck, racecheck,
# synccheck; TOOLS picks) on the small cases. Logs go under $OUT (default
# /tmp/hopper-check); the harness's summary table is printed last.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/hopper-check}
mkdir -p "$OUT"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
SAN=${SAN:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader | tee "$OUT/device.txt"
if [ -n "${HARNESS:-}" ]; then
  # A harness built elsewhere (saves the compile on a machine held by time).
  echo "prebuilt harness: $HARNESS"
  cp "$HARNESS" "$OUT/harness"
else
  "$NVCC" --version | tail -1
  "$NVCC" -std=c++17 -O3 -Icudakit/gpu/kernels -gencode arch=compute_90a,code=sm_90a -Xptxas -v \
    -o "$OUT/harness" scripts/hopper/harness.cu 2>"$OUT/ptxas.txt" || { cat "$OUT/ptxas.txt"; exit 1; }
  grep -E "spill|C75" "$OUT/ptxas.txt" | sort | uniq -c
fi
for tool in ${TOOLS:-memcheck racecheck synccheck}; do
  timeout 150 "$SAN" --tool "$tool" --error-exitcode 9 "$OUT/harness" small >"$OUT/sanitizer-$tool.txt" 2>&1
  echo "compute-sanitizer $tool: exit $? ($(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer-$tool.txt" | tail -1))"
done
timeout 300 "$OUT/harness" 2>&1 | tee "$OUT/harness.txt"
