#!/usr/bin/env bash
# Verify the multi-call plugin binaries on a GPU machine from a dist/ folder
# (make dist copies this script to dist/scripts):
#
#   dist/scripts/gpu-verify-multicall.sh
#
# dist/ holds two plugin binaries, flashcore-plugins and
# flashcore-plugins-cuda, and a link flashcore-backend-NAME to one of them
# per plugin. This checks, on a machine with a GPU, that every plugin found
# that way is available, that the default suite PASSes with all of them,
# and that tools which wrap a plugin (ncu, compute-sanitizer) start the
# plugin they were given: a multi-call binary picks its plugin by the name
# it was started under. Needs python3 with torch and triton
# ($FLASHCORE_PYTHON to choose another), ncu and compute-sanitizer on PATH
# or in /usr/local/cuda/bin. Logs go to $OUT (or $OUT_DIR); the summary
# table is printed last.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT:-${OUT_DIR:-$PWD/gpu-verify-multicall-out}}
mkdir -p "$OUT_DIR"
FC="$DIST/flashcore"
PATH=$PATH:/usr/local/cuda/bin
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
declare -a SUMMARY

record() { SUMMARY+=("$(printf '%-36s %-5s %s' "$1" "$2" "$3")"); }

# 1. What dist/ holds, and its size.
ls -l "$DIST" | tee "$OUT_DIR/dist.txt"
size=$(du -sh "$DIST" | cut -f1)
binaries=$(find "$DIST" -maxdepth 1 -type f -name 'flashcore*' | wc -l)
links=$(find "$DIST" -maxdepth 1 -type l -name 'flashcore-backend-*' | wc -l)
record "dist/ size" info "$size, $binaries binaries, $links plugin links"

# 2. Every plugin found through its link is available.
"$FC" list >"$OUT_DIR/list.txt" 2>&1
cat "$OUT_DIR/list.txt"
found=$(tail -n +2 "$OUT_DIR/list.txt" | grep -c .)
available=$(tail -n +2 "$OUT_DIR/list.txt" | awk '$2 == "yes"' | wc -l)
[ "$found" -gt 0 ] && [ "$found" = "$available" ] && s=PASS || s=FAIL
record "list: plugins available" "$s" "$available of $found"

# 3. The default suite with every plugin.
"$FC" run --out "$OUT_DIR/default.json" >"$OUT_DIR/default.txt" 2>&1
code=$?
cat "$OUT_DIR/default.txt"
passed=$(grep -c ': PASS' "$OUT_DIR/default.txt")
failed=$(grep -cE ': (FAIL|ERROR)' "$OUT_DIR/default.txt")
[ "$code" = 0 ] && [ "$failed" = 0 ] && s=PASS || s=FAIL
record "run default suite" "$s" "exit $code, $passed PASS, $failed FAIL/ERROR"

# 4. Wrapped plugins: ncu and compute-sanitizer start the link they are given.
cat >"$TMP/tiny.toml" <<'TOML'
name = "tiny"
[measurement]
min_samples = 5
time_cap = "200ms"
call_samples = 2
[[cases]]
batch = 1
heads = 8
seq_q = 512
head_dim = 64
TOML
if command -v ncu >/dev/null; then
  FLASHCORE_PLUGIN_WRAPPER="ncu --clock-control none --metrics gpu__time_duration.sum -k regex:^attn_fwd --launch-count 3 --csv --log-file $OUT_DIR/ncu-cuda-v8.csv" \
    "$FC" run --suite "$TMP/tiny.toml" --backends cuda-v8 --out "$TMP/ncu.json" >"$OUT_DIR/ncu-run.txt" 2>&1
  code=$?
  kernels=$(grep -c attn_fwd "$OUT_DIR/ncu-cuda-v8.csv" 2>/dev/null)
  [ "$code" = 0 ] && [ "${kernels:-0}" -gt 0 ] && s=PASS || s=FAIL
  record "ncu wraps cuda-v8" "$s" "exit $code, ${kernels:-0} attn_fwd kernels profiled"
else
  record "ncu wraps cuda-v8" SKIP "no ncu"
fi
if command -v compute-sanitizer >/dev/null; then
  FLASHCORE_PLUGIN_WRAPPER="compute-sanitizer --tool memcheck --log-file $OUT_DIR/sanitizer-cuda-scalar.txt" \
    "$FC" run --suite "$TMP/tiny.toml" --backends cuda-scalar --out "$TMP/san.json" >"$OUT_DIR/sanitizer-run.txt" 2>&1
  code=$?
  summary=$(grep -o 'ERROR SUMMARY: [0-9]* error' "$OUT_DIR/sanitizer-cuda-scalar.txt" | tail -1)
  [ "$code" = 0 ] && [ "$summary" = "ERROR SUMMARY: 0 error" ] && s=PASS || s=FAIL
  record "compute-sanitizer wraps cuda-scalar" "$s" "exit $code, ${summary:-no summary}"
else
  record "compute-sanitizer wraps cuda-scalar" SKIP "no compute-sanitizer"
fi

# 5. Started by hand, a multi-call binary names what it holds.
"$DIST/flashcore-plugins-cuda" >"$OUT_DIR/by-hand.txt" 2>&1
code=$?
grep -q 'holds the plugins' "$OUT_DIR/by-hand.txt" && [ "$code" = 2 ] && s=PASS || s=FAIL
record "flashcore-plugins-cuda by hand" "$s" "exit $code: $(grep -o 'holds the plugins[^.]*' "$OUT_DIR/by-hand.txt")"

echo
printf '%-36s %-5s %s\n' check result detail
for line in "${SUMMARY[@]}"; do echo "$line"; done | tee "$OUT_DIR/summary.txt"
