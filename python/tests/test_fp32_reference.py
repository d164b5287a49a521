"""The harness's fp32 reference script (core/fullref/fp32_attention.py),
run as the host runs it: a process answering one JSON line per request.
The Go tests hold its output to the fp64 reference for every mask; these
hold the protocol and a float64 torch computation written here."""

import json
import math
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "core" / "fullref" / "fp32_attention.py"


@pytest.fixture
def reference():
    proc = subprocess.Popen([sys.executable, "-u", str(SCRIPT), "cpu"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ready = json.loads(proc.stdout.readline())
    assert ready["ready"] and ready["device"] == "cpu"

    def ask(request):
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    yield ask
    proc.stdin.close()
    proc.wait(timeout=10)


def write(path, tensor):
    tensor.contiguous().view(torch.uint8).numpy().tofile(path)


def test_gqa_window_softcap_and_an_empty_row(reference, tmp_path):
    b, h, kvh, sq, sk, d = 1, 4, 2, 6, 9, 8
    g = torch.Generator().manual_seed(1)
    q = torch.randn(b, h, sq, d, generator=g).to(torch.bfloat16)
    k = torch.randn(b, kvh, sk, d, generator=g).to(torch.bfloat16)
    v = torch.randn(b, kvh, sk, d, generator=g).to(torch.bfloat16)
    lo = torch.tensor([0, 0, 2, 3, 5, 9], dtype=torch.int32)  # row 5 sees no key (lo > hi)
    hi = torch.tensor([3, 4, 5, 6, 8, 8], dtype=torch.int32)
    for name, t in {"q": q, "k": k, "v": v, "lo": lo, "hi": hi}.items():
        write(tmp_path / f"{name}.bin", t)
    scale, cap = 1 / math.sqrt(d), 1.5
    answer = reference({**{n: str(tmp_path / f"{n}.bin") for n in ("q", "k", "v", "lo", "hi")},
                        "out": str(tmp_path / "o.bin"), "dtype": "bf16", "batch": b, "heads": h, "kv_heads": kvh,
                        "seq_q": sq, "seq_k": sk, "head_dim": d, "scale": scale, "softcap": cap})
    assert "error" not in answer and "skip" not in answer, answer
    got = torch.from_file(str(tmp_path / "o.bin"), size=b * h * sq * d, dtype=torch.float32).view(b, h, sq, d)

    kk, vv = (x.double().repeat_interleave(h // kvh, dim=1) for x in (k, v))
    want = torch.zeros(b, h, sq, d, dtype=torch.float64)
    for i in range(sq):
        keys = slice(int(lo[i]), int(hi[i]) + 1)
        if hi[i] < lo[i]:
            continue
        s = torch.einsum("bhd,bhkd->bhk", q.double()[:, :, i], kk[:, :, keys]) * scale
        s = cap * torch.tanh(s / cap)
        want[:, :, i] = torch.einsum("bhk,bhkd->bhd", torch.softmax(s, dim=-1), vv[:, :, keys])
    assert torch.equal(got[:, :, 5], torch.zeros_like(got[:, :, 5]))
    assert (got.double() - want).abs().max().item() < 1e-6


def test_a_bad_request_is_an_answer_not_a_crash(reference, tmp_path):
    answer = reference({"q": str(tmp_path / "missing.bin"), "k": "", "v": "", "lo": "", "hi": "",
                        "out": str(tmp_path / "o.bin"), "dtype": "fp16", "batch": 1, "heads": 1, "kv_heads": 1,
                        "seq_q": 2, "seq_k": 2, "head_dim": 4, "scale": 0.5})
    assert "error" in answer
    # and it still answers
    again = reference({"q": "", "k": "", "v": "", "lo": "", "hi": "", "out": "", "dtype": "bogus", "batch": 1,
                       "heads": 1, "kv_heads": 1, "seq_q": 1, "seq_k": 1, "head_dim": 1, "scale": 1})
    assert "error" in again
