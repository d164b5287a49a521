#!/usr/bin/env bash
# Run the conformance kit on a GPU machine without Go, against the plugins
# of a dist/ folder, from test binaries built where Go is:
#
#   make gpu-tests                          # here: dist/tests/<plugin>.test
#   # copy dist/ to the GPU machine, then there:
#   dist/scripts/gpu-conformance.sh         # every test binary in dist/tests
#   dist/scripts/gpu-conformance.sh cuda-v8 # one plugin
#
# Each test binary runs its plugin's TestConformance with FLASHCORE_BIN set
# to dist/, so it checks the dist plugin binary (CUDA built in) through
# go-plugin as flashcore starts it. Full logs go to $OUT_DIR; one line per
# plugin is printed:
#
#   cuda-v8: PASS (48 passed, 0 skipped, 0 failed; log gpu-conformance-out/cuda-v8.txt)
#
# followed, on a failure, by the failing tests and their messages. The exit
# status is 1 when any plugin failed. Needs python3 with torch and triton
# for the bridge plugins.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT_DIR:-$PWD/gpu-conformance-out}
mkdir -p "$OUT_DIR"
export FLASHCORE_BIN=$DIST FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3}

plugins=("$@")
if [ ${#plugins[@]} -eq 0 ]; then
  for t in "$DIST"/tests/*.test; do plugins+=("$(basename "$t" .test)"); done
fi
status=0
for p in "${plugins[@]}"; do
  log="$OUT_DIR/$p.txt"
  "$DIST/tests/$p.test" -test.run '^TestConformance$' -test.v -test.timeout 30m >"$log" 2>&1
  rc=$?
  passed=$(grep -c -- '--- PASS' "$log"); skipped=$(grep -c -- '--- SKIP' "$log"); failed=$(grep -c -- '--- FAIL' "$log")
  verdict=PASS
  [ "$rc" -ne 0 ] && verdict=FAIL && status=1
  echo "$p: $verdict ($passed passed, $skipped skipped, $failed failed; log $log)"
  if [ "$rc" -ne 0 ]; then
    grep -E -- '--- FAIL|\.go:[0-9]+: ' "$log" | head -40
  fi
done
exit $status
