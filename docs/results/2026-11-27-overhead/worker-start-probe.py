# A probe of a Python worker's start on a GPU machine: import torch, then
# torch.profiler's first CUPTI session (flashcore_cupti.start_profiler), with
# a variant that imports the compiler in a thread and one that measures the
# GIL. Run from the repository root: python3 <this> sequential

import sys, time, threading
variant = sys.argv[1]
sys.path.insert(0, "internal/bridge/python")
t0 = time.perf_counter()
import torch
t1 = time.perf_counter()
import flashcore_cupti as cupti
def imports():
    import torch._dynamo, torch._inductor  # noqa
    from torch.nn.attention import flex_attention  # noqa
    import triton  # noqa
res = {"import_torch": t1 - t0}
ticks = [0]
stop = [False]
def ticker():
    while not stop[0]:
        ticks[0] += 1
        time.sleep(0.001)
a = time.perf_counter()
if variant == "sequential":
    s = cupti.start_profiler(torch); res["profiler"] = s
    b = time.perf_counter(); imports(); res["imports"] = time.perf_counter() - b
elif variant == "threaded":
    th = threading.Thread(target=lambda: res.__setitem__("profiler", cupti.start_profiler(torch)))
    th.start(); b = time.perf_counter(); imports(); res["imports"] = time.perf_counter() - b; th.join()
elif variant == "gil":
    tk = threading.Thread(target=ticker); tk.start()
    s = cupti.start_profiler(torch); res["profiler"] = s; stop[0] = True; tk.join()
    res["ticks_per_s_during_profiler"] = ticks[0] / s
res["total_after_torch"] = time.perf_counter() - a
print(variant, {k: round(v, 2) for k, v in res.items()}, flush=True)
