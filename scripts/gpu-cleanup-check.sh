#!/usr/bin/env bash
# Check process cleanup on a GPU machine from a dist/ folder (see README,
# "Process cleanup"): run real GPU plugins (cuda-v8 and pytorch-sdpa, whose
# Python worker holds a CUDA context), end the run by SIGINT and by SIGKILL
# while the Python worker runs, and check that no process of the run is
# left, no GPU memory is held by one, and nothing is left in TMPDIR. Then a
# whole run, and a run under FLASHCORE_PLUGIN_WRAPPER (compute-sanitizer),
# must still end with every row PASS.
#
#   scripts/gpu-cleanup-check.sh
#
# Prints one line per check, "ok ..." or "FAILED ...", and exits 1 if any
# check failed. Needs nvidia-smi, compute-sanitizer (on PATH or in
# /usr/local/cuda/bin) and python3 with torch.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
FC="$DIST/flashcore"
export PATH=$PATH:/usr/local/cuda/bin
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failed=0

cat > "$WORK/small.toml" <<'TOML'
name = "cleanup"
[measurement]
warmup_runs = 2
min_samples = 10
time_cap = "1s"
call_samples = 3
[[sweeps]]
batch = [4]
heads = [16]
seq_q = [2048]
head_dim = [128]
dtype = ["fp16"]
TOML

check() { # name condition-exit-status detail
  if [ "$2" -eq 0 ]; then echo "ok     $1: $3"; else echo "FAILED $1: $3"; failed=1; fi
}

# marked MARKER: pids of living processes whose environment holds it.
marked() {
  for p in /proc/[0-9]*; do
    [ "$(cut -d' ' -f3 "$p/stat" 2>/dev/null)" = Z ] && continue
    { tr '\0' '\n' < "$p/environ"; } 2>/dev/null | grep -qx "CLEANUP_CHECK_MARKER=$1" && echo "${p#/proc/}"
  done
}

# worker MARKER: pid of the run's Python worker, once it runs.
worker() {
  for pid in $(marked "$1"); do
    { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -q worker_main.py && { echo "$pid"; return; }
  done
}

end_run() { # signal
  local sig=$1 marker="m$RANDOM$RANDOM" tmp="$WORK/tmp-$1"
  mkdir -p "$tmp"
  CLEANUP_CHECK_MARKER=$marker TMPDIR=$tmp "$FC" run --suite "$WORK/small.toml" \
    --backends cuda-v8,pytorch-sdpa --out "$WORK/$sig.json" > "$WORK/$sig.log" 2>&1 &
  local fc=$! w="" i
  for i in $(seq 600); do w=$(worker "$marker"); [ -n "$w" ] && break; sleep 0.1; done
  check "$sig: the python worker started" "$([ -n "$w" ]; echo $?)" "pid ${w:-none}"
  local cgroup=no
  [ -n "$w" ] && grep -q "/flashcore-pytorch-sdpa-" "/proc/$w/cgroup" 2>/dev/null && cgroup=yes
  sleep 2
  kill -s "$sig" "$fc"
  wait "$fc"
  echo "       $sig: flashcore exit status $?, plugin cgroup used: $cgroup"
  sleep 3
  local left gpu
  left=$(marked "$marker" | tr '\n' ' ')
  check "$sig: no process of the run left" "$([ -z "$left" ]; echo $?)" "left: ${left:-none}"
  gpu=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader | tr '\n' ';')
  check "$sig: no process holds GPU memory" "$([ -z "$gpu" ]; echo $?)" "${gpu:-none}"
  left=$(ls -A "$tmp")
  check "$sig: TMPDIR empty" "$([ -z "$left" ]; echo $?)" "${left:-empty}"
}

end_run INT
end_run KILL

start=$(date +%s)
"$FC" run --suite "$WORK/small.toml" --backends cuda-scalar,cuda-wmma,cuda-v8,pytorch-sdpa,triton \
  --out "$WORK/all.json" > "$WORK/all.log" 2>&1
status=$?
check "whole run, every row PASS" "$status" "exit status $status in $(( $(date +%s) - start )) s"
FLASHCORE_PLUGIN_WRAPPER="compute-sanitizer --log-file $WORK/san.%p.txt" \
  "$FC" run --suite "$WORK/small.toml" --backends cuda-v8 --out "$WORK/san.json" > "$WORK/san.log" 2>&1
status=$?
check "run under compute-sanitizer" "$status" "exit status $status; $(grep -h 'ERROR SUMMARY' "$WORK"/san.*.txt 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
[ $failed -eq 0 ] || { tail -n 30 "$WORK"/*.log; exit 1; }
