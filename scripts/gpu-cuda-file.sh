#!/usr/bin/env bash
# Verify the CUDA-file route on a GPU machine from a dist/ folder (make dist
# copies this script to dist/scripts and examples/ to dist/):
#
#   dist/scripts/gpu-cuda-file.sh
#
# Needs nvcc (PATH, $CUDA_HOME/bin or /usr/local/cuda/bin) and python3 with
# torch for the SDPA baseline ($FLASHCORE_PYTHON to choose another). No Go.
#
# 1. describes the two examples (capabilities, tunables);
# 2. runs examples/cuda/gpu.toml with an empty kernel cache: splitkv.cu
#    (SPLITS 2, 4, 8), the walk-through's attention.cu and tiled_fp32.cu,
#    each compiled with nvcc for this GPU at its first case, against
#    PyTorch's SDPA;
# 3. runs the three CUDA-file backends again: every kernel now comes from the
#    cache;
# 4. runs a kernel that does not compile: its rows must be ERROR with nvcc's
#    log in the reason;
# then prints a summary table. Logs and results go to $OUT (or $OUT_DIR).
# Takes one to two minutes on an H100, most of it nvcc at the first cases.
set -uo pipefail
DIST=$(cd "$(dirname "$0")/.." && pwd)
OUT_DIR=${OUT:-${OUT_DIR:-$PWD/gpu-cuda-file-out}}
mkdir -p "$OUT_DIR"
FC="$DIST/flashcore"
SUITE="$DIST/examples/cuda/gpu.toml"
export FLASHCORE_CACHE_DIR="$OUT_DIR/cache"
rm -rf "$FLASHCORE_CACHE_DIR"
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2; echo "host compiler: $(command -v g++ || command -v gcc || echo none)"; } > "$OUT_DIR/machine.txt" 2>&1

for backend in splitkv my-attention tiled-fp32; do
  "$FC" describe "$backend" --suite "$SUITE" > "$OUT_DIR/describe-$backend.txt" 2>&1
done
start=$(date +%s)
"$FC" run --suite "$SUITE" --out "$OUT_DIR/cold.json" --format markdown > "$OUT_DIR/cold.txt" 2>&1
cold_status=$?
cold_s=$(( $(date +%s) - start ))
start=$(date +%s)
"$FC" run --suite "$SUITE" --backends splitkv,my-attention,tiled-fp32 --out "$OUT_DIR/cached.json" --format markdown > "$OUT_DIR/cached.txt" 2>&1
cached_status=$?
cached_s=$(( $(date +%s) - start ))

# A kernel that does not compile: the row is an ERROR that carries the log.
BROKEN="$OUT_DIR/broken"
mkdir -p "$BROKEN"
cat > "$BROKEN/broken.cu" <<'CU'
extern "C" __global__ void broken(const void* q, const void* k, const void* v, float* o) { o[0] = undefined_name; }
CU
cat > "$BROKEN/broken.toml" <<'TOML'
source = "broken.cu"
[capabilities]
dtypes = ["fp16"]
[[kernels]]
entry = "broken"
grid = [1]
block = [32]
params = ["q", "k", "v", "o"]
TOML
cat > "$BROKEN/suite.toml" <<'TOML'
name = "broken-kernel"
[[backends]]
name = "broken"
cuda = "broken.toml"
[[cases]]
batch = 1
heads = 1
seq_q = 64
head_dim = 64
TOML
"$FC" run --suite "$BROKEN/suite.toml" --out "$OUT_DIR/broken.json" > "$OUT_DIR/broken.txt" 2>&1
broken_status=$?

python3 - "$OUT_DIR" "$cold_status" "$cached_status" "$broken_status" "$cold_s" "$cached_s" <<'PY'
import json, sys
out, cold_status, cached_status, broken_status, cold_s, cached_s = sys.argv[1:]
def rows(name):
    with open(f"{out}/{name}.json") as f:
        return json.load(f)["results"]
print()
print(f"machine: {open(out + '/machine.txt').read().strip()}")
print(f"{'run':8} {'backend':14} {'row':20} {'case':38} {'status':7} {'kernel':>10} {'cache':>6}")
for run in ("cold", "cached"):
    for r in rows(run):
        t = (r.get("timings") or [{}])[0].get("kernel", {}).get("median_ns")
        kernel = f"{t/1000:.1f} us" if t else "-"
        cache = (r.get("facts") or {}).get("kernel_cache_hit", "")
        print(f"{run:8} {r['backend']:14} {r['label']:20} {r['case_id']:38} {r['status'].upper():7} {kernel:>10} {cache:>6}")
broken = rows("broken")
log_ok = all(r["status"] == "error" and "undefined_name" in r.get("reason", "") for r in broken) and len(broken) > 0
print()
for run, status, secs in (("cold", cold_status, cold_s), ("cached", cached_status, cached_s)):
    rs = [r for r in rows(run) if r["backend"] != "pytorch-sdpa"]
    passed = sum(r["status"] == "pass" for r in rs)
    hits = sum((r.get("facts") or {}).get("kernel_cache_hit") == "true" for r in rs)
    skipped = sum(r["status"] == "skip" for r in rs)
    print(f"{run} run: exit {status}, {secs} s, CUDA-file rows PASS {passed} (want 16), SKIP {skipped} (undeclared shapes), other {len(rs)-passed-skipped} (want 0), kernels from the cache {hits}/{passed}")
print(f"broken kernel: exit {broken_status}, ERROR rows with nvcc's log in the reason: {'yes' if log_ok else 'NO'}")
# 5 cases. splitkv (fp16, bf16) runs the first 4 with 3 SPLITS values: 12
# rows; the walk-through's kernel (fp16) runs 3; tiled-fp32 (fp32, lengths
# in 32s) runs the last. Every other row is a skip for an undeclared shape.
ok = cold_status == "0" and cached_status == "0" and log_ok
for run in ("cold", "cached"):
    rs = [r for r in rows(run) if r["backend"] != "pytorch-sdpa"]
    ok = ok and sum(r["status"] == "pass" for r in rs) == 16 and all(r["status"] in ("pass", "skip") for r in rs)
print("RESULT:", "PASS" if ok else "FAIL", f"(logs in {out})")
PY
