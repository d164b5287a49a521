# Runs probe_child.py in fresh processes under each setting and prints what each took,
# its exit (from its last line to the parent seeing it end) included. Usage: probe_driver.py OUTDIR
# (As run on machine E, 2026-11-28; the caches' folder is CACHE, a scratch folder there.)
import json, os, subprocess, sys, time
out = sys.argv[1]
cache = os.environ.get("CACHE", "cache")
base = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"), TRITON_CACHE_DIR=os.path.join(cache, "triton"))
runs = [("cold", {}), ("warm", {}), ("warm", {}), ("threads1", {"TORCHINDUCTOR_COMPILE_THREADS": "1"}),
        ("threads1", {"TORCHINDUCTOR_COMPILE_THREADS": "1"}), ("warm", {}),
        ("threads1-importind", {"TORCHINDUCTOR_COMPILE_THREADS": "1", "PROBE_IMPORT_INDUCTOR": "1"}),
        ("profile-default", {"PROBE_PROFILE": "1"}), ("profile-threads1", {"PROBE_PROFILE": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"})]
for name, extra in runs:
    t0 = time.time()
    p = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "probe_child.py")], env=dict(base, **extra),
                       capture_output=True, text=True)
    t1 = time.time()
    line = [l for l in p.stdout.splitlines() if l.startswith("JSON")]
    if not line:
        print(name, "FAILED", p.returncode, p.stderr[-3000:]); continue
    T = json.loads(line[0][4:])
    t = T["t0"]
    summary = {"run": name, "wall": round(t1 - t0, 3), "python_start": round(T["t0"] - t0, 3),
               "import_torch": round(T["import_torch"] - t, 3), "cuda": round(T["cuda"] - T["import_torch"], 3),
               "flex_module": round(T["flex_module"] - T["cuda"], 3), "dynamo_import": round(T["dynamo_import"] - T["flex_module"], 3),
               "inductor_import": round(T["inductor_import"] - T["dynamo_import"], 3),
               "first_compile": round(T["first_compile"], 3), "block_mask": round(T["block_mask"], 3),
               "second_compile": round(T["second_compile"], 3), "third_compile": round(T["third_compile"], 3),
               "exit": round(t1 - T["end"], 3), "compile_threads": T["compile_threads"]}
    print(json.dumps(summary), flush=True)
    with open(os.path.join(out, f"probe-{name}-{int(t0)}.txt"), "w") as fh:
        for k in ("compile_times", "children", "prof_cum", "prof_tot"):
            if k in T: fh.write(f"== {k}\n{T[k]}\n")
        fh.write(p.stderr[-5000:])
