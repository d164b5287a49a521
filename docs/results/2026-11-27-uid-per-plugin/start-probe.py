import os, subprocess, sys, time, json
UID = 1600000001
child = r'''
import time, json
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t2 = time.perf_counter()
import torch.profiler as p
with p.profile(activities=[p.ProfilerActivity.CUDA]):
    torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t3 = time.perf_counter()
print(json.dumps({"import": round(t1-t0,3), "cuda_init": round(t2-t1,3), "profiler": round(t3-t2,3)}))
'''
base = dict(os.environ)
for d in ("/tmp/pc-root", "/tmp/pc-uid"):
    os.makedirs(d, exist_ok=True)
os.chown("/tmp/pc-uid", UID, UID)
os.chmod("/tmp/pc-uid", 0o700)
def run(as_uid):
    env = dict(base, PYTHONPYCACHEPREFIX="/tmp/pc-uid" if as_uid else "/tmp/pc-root", TMPDIR="/tmp/pc-uid" if as_uid else "/tmp/pc-root")
    if as_uid:
        env.update(USER="flashcore-%d" % UID, LOGNAME="flashcore-%d" % UID)
    kw = dict(user=UID, group=UID, extra_groups=[]) if as_uid else {}
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, **kw)
    wall = time.perf_counter() - t
    out = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr[-300:]
    return round(wall, 3), out
for i in range(4):
    for as_uid in (False, True):
        print("uid " if as_uid else "root", i, *run(as_uid), flush=True)
