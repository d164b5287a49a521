#!/usr/bin/env bash
# The harness's own time on a GPU machine, old build against new, in one
# session on one device: the embedded default suite and the seed suite,
# alternated, wall time from start to exit; compare of each pair (and of
# two old runs, the noise floor); the new build's time breakdown; and the
# budget trade. Logs, results and tables go to $OUT_DIR.
#
#   OLD=old-dist NEW=dist dist/scripts/gpu-overhead.sh
#   STEPS="default" PAIRS=3 OLD=... NEW=... dist/scripts/gpu-overhead.sh
#
# Steps: default (PAIRS pairs of the default suite), seed (SEED_PAIRS
# pairs of the seed suite), budget (the seed suite under --budget).
set -uo pipefail
OLD=${OLD:?OLD names the old build's dist folder}
NEW=${NEW:?NEW names the new build's dist folder}
OUT_DIR=${OUT_DIR:-$PWD/gpu-overhead-out}
STEPS=${STEPS:-default seed budget}
PAIRS=${PAIRS:-3}
SEED_PAIRS=${SEED_PAIRS:-2}
mkdir -p "$OUT_DIR"
export FLASHCORE_PYTHON=${FLASHCORE_PYTHON:-python3}
unset FLASHCORE_BIN

has() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  echo "old: $("$OLD/flashcore" version)"
  echo "new: $("$NEW/flashcore" version)"
} >>"$OUT_DIR/env.txt" 2>&1

# wall NAME COMMAND...: runs a command (output to NAME.txt) and appends
# "NAME exit S wall SECONDS" to walls.txt.
wall() {
  local name=$1 start end status
  shift
  start=$(date +%s%N)
  "$@" >"$OUT_DIR/$name.txt" 2>&1
  status=$?
  end=$(date +%s%N)
  printf '%s exit %s wall %s\n' "$name" "$status" "$(awk "BEGIN {printf \"%.1f\", ($end - $start) / 1e9}")" |
    tee -a "$OUT_DIR/walls.txt"
}

if has default; then
  for i in $(seq 1 "$PAIRS"); do
    wall "old-default-$i" "$OLD/flashcore" run --keep-going --out "$OUT_DIR/old-default-$i.json"
    wall "new-default-$i" "$NEW/flashcore" run --keep-going --explain-time --out "$OUT_DIR/new-default-$i.json"
  done
  for i in $(seq 1 "$PAIRS"); do
    "$NEW/flashcore" compare "$OUT_DIR/old-default-$i.json" "$OUT_DIR/new-default-$i.json" \
      >"$OUT_DIR/compare-default-$i.txt" 2>&1
  done
  [ "$PAIRS" -ge 2 ] && "$NEW/flashcore" compare "$OUT_DIR/old-default-1.json" "$OUT_DIR/old-default-2.json" \
    >"$OUT_DIR/compare-default-old-old.txt" 2>&1
fi
if has seed; then
  for i in $(seq 1 "$SEED_PAIRS"); do
    wall "old-seed-$i" "$OLD/flashcore" run --suite seed --keep-going --out "$OUT_DIR/old-seed-$i.json"
    wall "new-seed-$i" "$NEW/flashcore" run --suite seed --keep-going --explain-time --out "$OUT_DIR/new-seed-$i.json"
    "$NEW/flashcore" compare "$OUT_DIR/old-seed-$i.json" "$OUT_DIR/new-seed-$i.json" \
      >"$OUT_DIR/compare-seed-$i.txt" 2>&1
  done
  "$NEW/flashcore" report --explain-time --format markdown "$OUT_DIR/new-seed-1.json" >"$OUT_DIR/explain-seed.md" 2>&1
fi
if has budget; then
  wall budget-row "$NEW/flashcore" run --suite seed --keep-going --budget 300ms --explain-time \
    --out "$OUT_DIR/budget-row.json"
fi
