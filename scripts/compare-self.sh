#!/usr/bin/env bash
# Run one suite twice with the same build and compare the two runs. Nothing
# changed between them, so every row flagged faster, slower, REGRESSION or
# FIXED is a false alarm of `flashcore compare` on this machine; the counts
# belong in docs/compare.md ("Two runs of one build on the H100").
#
#   scripts/compare-self.sh            # the llm suite
#   SUITE=seed scripts/compare-self.sh # another suite of suites/ (or a .toml path)
#   BACKENDS=cpu-reference,pytorch-sdpa scripts/compare-self.sh   # some backends only
#   RUNS=1 scripts/compare-self.sh; RUNS=2 scripts/compare-self.sh # one run a call
#
# Runs from a dist/ folder (dist/scripts/compare-self.sh) or from a
# checkout after `make build` (bin/flashcore). Results, tables and logs go
# to $OUT_DIR. Prints, in order:
#   run 1 exit N / run 2 exit N      flashcore run's exit codes (0: all passed)
#   the compare summary line         "0 faster, 0 slower, 212 same, 22 unsure, 0 correctness regressions"
#   false alarms: N                  the rows flagged, then one line per such row
#   unsure: N, by reason             how many rows the samples could not decide, and why
#   SM clock differences: N rows     rows whose SM clock differs by more than 2% between the runs
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SUITE=${SUITE:-llm}
OUT_DIR=${OUT_DIR:-$PWD/compare-self-out}
mkdir -p "$OUT_DIR"
FC=${FC:-$ROOT/flashcore}
[ -x "$FC" ] || FC=$ROOT/bin/flashcore
[ -x "$FC" ] || { echo "no flashcore binary in $ROOT or $ROOT/bin (set FC)"; exit 2; }

SUITE_FILE=$ROOT/suites/$SUITE.toml
[[ $SUITE == *.toml ]] && SUITE_FILE=$SUITE

# RUNS picks which runs this call makes, e.g. RUNS=1 then RUNS=2 from two
# jobs where one job cannot hold both (the llm suite takes about 9½ minutes
# a run on an H100); the compare runs once both files are in $OUT_DIR.
for i in ${RUNS:-1 2}; do
  "$FC" run --suite "$SUITE_FILE" ${BACKENDS:+--backends "$BACKENDS"} --out "$OUT_DIR/run$i.json" --format csv --keep-going \
    >"$OUT_DIR/run$i.csv" 2>"$OUT_DIR/run$i.log"
  echo "run $i exit $?"
done
for i in 1 2; do
  [ -f "$OUT_DIR/run$i.json" ] || { echo "no run $i yet in $OUT_DIR (RUNS=$i makes it)"; exit 0; }
done
"$FC" compare "$OUT_DIR/run1.json" "$OUT_DIR/run2.json" --labels "run 1,run 2" --format markdown >"$OUT_DIR/compare.md"
"$FC" compare "$OUT_DIR/run1.json" "$OUT_DIR/run2.json" --labels "run 1,run 2" --format csv >"$OUT_DIR/compare.csv"
head -1 "$OUT_DIR/compare.md"
python3 - "$OUT_DIR/compare.csv" <<'PY'
import collections, csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
flagged = [r for r in rows if r["verdict"] in ("faster", "slower", "REGRESSION", "FIXED")]
print(f"false alarms: {len(flagged)}")
for r in flagged:
    print(f"  {r['case_id']} {r['row']}: {r['verdict']} ratio {r['ratio']} [{r['ratio_low']}, {r['ratio_high']}] p {r['p_value']}")
unsure = collections.Counter(r["detail"] for r in rows if r["verdict"] == "unsure")
print(f"unsure: {sum(unsure.values())}" + "".join(f"; {n} {why}" for why, n in unsure.most_common()))
def clock(v):
    return float(v) if v else 0.0
apart = [r for r in rows if clock(r["old_sm_clock_mhz"]) > 0 and clock(r["new_sm_clock_mhz"]) > 0
         and abs(clock(r["new_sm_clock_mhz"]) / clock(r["old_sm_clock_mhz"]) - 1) > 0.02]
print(f"SM clock differences: {len(apart)} rows")
PY
