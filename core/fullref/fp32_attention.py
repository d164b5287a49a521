"""The harness's own fp32 attention: a reference for every row of a case.

The host starts this script itself (core/fullref), never through a
plugin, with the Python the run's bridges use. It reads one JSON request
a line on stdin and answers one JSON line on stdout:

  {"q": path, "k": path, "v": path, "lo": path, "hi": path, "out": path,
   "dtype": "fp16", "batch": B, "heads": H, "kv_heads": KVH,
   "seq_q": Sq, "seq_k": Sk, "head_dim": D, "scale": s, "softcap": c}

q, k and v are the case's inputs as the host wrote them for the backends
(raw little-endian, [B, H, S, D]); lo and hi are int32 per query row, the
first and last key the row sees, which the host derives from the case's
mask, so that the mask has one definition (ops/mask). The output, every
row in fp32, is written to out. The answer is {"ns": ...} or
{"skip": why} (not enough device memory) or {"error": why}.

Arithmetic is fp32 throughout: TF32 is off, scores are the scaled dot
products, soft-capped where asked, softmax subtracts the row maximum,
and a row that sees no key is zeros, as the fp64 reference's
(core/reference).
"""
import json
import os
import sys
import time

DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}
# The scores of one chunk of query rows stay under this many bytes.
CHUNK_BYTES = 1 << 30


def reply(out, message):
    out.write(json.dumps(message) + "\n")
    out.flush()


def attention(torch, device, req):
    start = time.perf_counter_ns()
    dtype = getattr(torch, DTYPES[req["dtype"]])
    b, h, kvh = req["batch"], req["heads"], req["kv_heads"]
    sq, sk, d = req["seq_q"], req["seq_k"], req["head_dim"]
    group = h // kvh
    need = 4 * (b * h * sq * d + 2 * b * h * sk * d)
    chunk = max(1, min(sq, CHUNK_BYTES // max(1, 3 * 4 * b * h * sk)))
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        budget = free * 3 // 4
        if need + 3 * 4 * b * h * sk * chunk > budget:
            chunk = max(1, (budget - need) // max(1, 3 * 4 * b * h * sk))
            if need + 3 * 4 * b * h * sk * chunk > budget:
                return {"skip": f"needs {(need + 12 * b * h * sk) / 2**30:.1f} GiB of device memory, {free / 2**30:.1f} GiB free"}

    def load(path, heads, seq):
        raw = torch.from_file(path, shared=False, size=b * heads * seq * d, dtype=dtype)
        return raw.view(b, heads, seq, d).to(device=device, dtype=torch.float32)

    q = load(req["q"], h, sq)
    k = load(req["k"], kvh, sk)
    v = load(req["v"], kvh, sk)
    if group > 1:
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
    lo = torch.from_file(req["lo"], shared=False, size=sq, dtype=torch.int32).to(device=device, dtype=torch.int64)
    hi = torch.from_file(req["hi"], shared=False, size=sq, dtype=torch.int32).to(device=device, dtype=torch.int64)
    keys = torch.arange(sk, device=device)
    scale, softcap = float(req["scale"]), float(req.get("softcap") or 0)
    o = torch.empty((b, h, sq, d), dtype=torch.float32, device=device)
    kt = k.transpose(-1, -2)
    for first in range(0, sq, chunk):
        last = min(sq, first + chunk)
        s = torch.matmul(q[:, :, first:last], kt) * scale
        if softcap > 0:
            s = softcap * torch.tanh(s / softcap)
        hidden = (keys[None, :] < lo[first:last, None]) | (keys[None, :] > hi[first:last, None])
        s.masked_fill_(hidden, float("-inf"))
        peak = s.amax(dim=-1, keepdim=True)
        peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))
        p = torch.exp(s - peak)
        del s
        total = p.sum(dim=-1, keepdim=True)
        o[:, :, first:last] = torch.matmul(p, v) / torch.where(total > 0, total, torch.ones_like(total))
        del p
    o.cpu().contiguous().numpy().tofile(req["out"])
    if device == "cuda":
        torch.cuda.synchronize()
    return {"ns": time.perf_counter_ns() - start, "chunk": chunk}


def main():
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever else prints goes to stderr, not into the answers
    device = sys.argv[1] if len(sys.argv) > 1 else "cuda"
    try:
        import torch

        if device == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA device")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
        reply(out, {"ready": True, "device": name, "torch": torch.__version__})
    except Exception as e:  # noqa: BLE001 - every failure is the answer
        reply(out, {"ready": False, "error": f"{type(e).__name__}: {e}"})
        return
    for line in sys.stdin:
        try:
            answer = attention(torch, device, json.loads(line))
        except Exception as e:  # noqa: BLE001
            answer = {"error": f"{type(e).__name__}: {e}"}
        finally:
            if device == "cuda":
                torch.cuda.empty_cache()
        reply(out, answer)


if __name__ == "__main__":
    main()
