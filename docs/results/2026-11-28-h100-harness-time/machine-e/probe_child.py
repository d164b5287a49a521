# One fresh process: import torch, compile flex-attention on three cases, report (machine E, 2026-11-28).
import json, os, sys, time
T = {"t0": time.time()}
import torch
T["import_torch"] = time.time()
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
T["cuda"] = time.time()
from torch.nn.attention.flex_attention import flex_attention, create_block_mask
T["flex_module"] = time.time()
prof = None
if os.environ.get("PROBE_PROFILE"):
    import cProfile
    prof = cProfile.Profile(); prof.enable()
import torch._dynamo
T["dynamo_import"] = time.time()
if os.environ.get("PROBE_IMPORT_INDUCTOR"):
    import torch._inductor.compile_fx  # noqa
T["inductor_import"] = time.time()
c = torch._dynamo.config
c.recompile_limit = 1024; c.accumulated_recompile_limit = 8192; c.fail_on_recompile_limit_hit = True
f = torch.compile(flex_attention, dynamic=False, fullgraph=True)
def qkv(b, h, s, d=64):
    return [torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3)]
q, k, v = qkv(1, 8, 512)
t = time.time(); f(q, k, v, scale=0.125); torch.cuda.synchronize(); T["first_compile"] = time.time() - t
if prof: prof.disable()
def causal(b, h, qi, ki): return qi >= ki
t = time.time(); bm = create_block_mask(causal, None, None, 512, 512, device="cuda"); T["block_mask"] = time.time() - t
t = time.time(); f(q, k, v, block_mask=bm, scale=0.125); torch.cuda.synchronize(); T["second_compile"] = time.time() - t
q, k, v = qkv(1, 2, 128)
t = time.time(); f(q, k, v, scale=0.125); torch.cuda.synchronize(); T["third_compile"] = time.time() - t
try:
    T["compile_times"] = torch._dynamo.utils.compile_times(repr="str")
except Exception as e:
    T["compile_times"] = repr(e)
T["children"] = os.popen(f"ps --ppid {os.getpid()} -o pid=,rss=,args= | cut -c1-150").read()
import torch._inductor.config
T["compile_threads"] = torch._inductor.config.compile_threads
if prof:
    import pstats, io
    s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(60); T["prof_cum"] = s.getvalue()
    s = io.StringIO(); pstats.Stats(prof, stream=s).sort_stats("tottime").print_stats(40); T["prof_tot"] = s.getvalue()
T["end"] = time.time()
print("JSON" + json.dumps(T, default=str), flush=True)
