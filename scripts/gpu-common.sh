# What the GPU scripts share (gpu-serving.sh, gpu-backward.sh,
# gpu-extras.sh): source it after setting OUT_DIR.
#
# timed NAME COMMAND...: runs a command, its output to $OUT_DIR/NAME.txt,
# prints its exit status and wall time (appended to $OUT_DIR/summary.txt
# too) and keeps the last failing status in rc.
rc=0
timed() {
  local name=$1 start end status
  shift
  start=$(date +%s%N)
  "$@" >"$OUT_DIR/$name.txt" 2>&1
  status=$?
  end=$(date +%s%N)
  [ "$status" -eq 0 ] || rc=$status
  printf '%s: exit %s, wall %s ms\n' "$name" "$status" "$(( (end - start) / 1000000 ))" | tee -a "$OUT_DIR/summary.txt"
}
