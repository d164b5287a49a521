"""The worker core against the bridge's probe backend
(internal/bridge/testdata/probe_backend.py), on the CPU."""

import hashlib
import io

import pytest
import torch

import flashcore_worker as core
import probe_backend
from helpers import assert_close, make_case, read_output, reference, shape

QUICK = {"warmup_runs": 1, "warmup_time": 0, "min_samples": 3, "max_samples": 6, "target_noise": 0.5,
         "time_cap": 5_000_000_000, "l2": "hot", "call_samples": 2}


@pytest.fixture
def worker():
    device = torch.device("cpu")
    return core.Worker(probe_backend.Backend(device), device)


def test_load_inputs_hashes_the_bytes_loaded_in_order(tmp_path):
    s = shape(1, 4, 2, 5, 7, 8, False, "bf16")
    params, tensors, digest = make_case(tmp_path, s, "math")
    loaded, loaded_digest = core.load_inputs(params["files"], s, torch.device("cpu"))
    assert loaded_digest == digest
    for got, want in zip(loaded, tensors):
        assert torch.equal(got, want)


def test_load_inputs_names_a_file_of_the_wrong_size(tmp_path):
    s = shape(1, 2, 2, 4, 4, 8, False, "fp16")
    params, _, _ = make_case(tmp_path, s, "math")
    with open(params["files"]["K"], "ab") as f:
        f.write(b"\0\0")
    with pytest.raises(ValueError, match=r"k\.bin: 130 bytes, want 128"):
        core.load_inputs(params["files"], s, torch.device("cpu"))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_poison_fills_every_byte(dtype):
    t = torch.zeros(3, 5, dtype=dtype)
    core.poison(t)
    assert bool((t.view(torch.uint8) == 0xFF).all())
    assert bool(torch.isnan(t).all())


def test_write_tensor_writes_raw_little_endian(tmp_path):
    t = torch.tensor([1.0, -2.0], dtype=torch.bfloat16)
    core.write_tensor(tmp_path / "t.bin", t)
    assert (tmp_path / "t.bin").read_bytes() == bytes([0x80, 0x3F, 0x00, 0xC0])


def test_prepare_fetch_run_release(worker, tmp_path):
    s = shape(2, 4, 2, 13, 21, 16, True, "fp32")
    params, (q, k, v), digest = make_case(tmp_path, s, "math")
    prepared = worker.handle("prepare", params)
    assert prepared["loaded_sha256"] == digest
    assert prepared["facts"]["probe"] == "yes"
    assert worker.handle("fetch", {"case_id": "case"}) == {}
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, True), "fp32")
    samples = worker.handle("run", {"case_id": "case", "measurement": QUICK})
    assert samples["method"] == "wall-clock"
    assert 3 <= len(samples["kernel_times"]) <= 6 and len(samples["call_times"]) == 2
    assert all(isinstance(t, int) and t > 0 for t in samples["kernel_times"] + samples["call_times"])
    worker.handle("release", {"case_id": "case"})
    with pytest.raises(KeyError, match="not prepared"):
        worker.handle("fetch", {"case_id": "case"})


def test_fetch_poisons_before_running(worker, tmp_path):
    s = shape(1, 2, 2, 4, 4, 8, False, "fp16")
    params, _, _ = make_case(tmp_path, s, "untouched")
    worker.handle("prepare", params)
    worker.handle("fetch", {"case_id": "case"})
    raw = (tmp_path / "out.bin").read_bytes()
    assert raw == b"\xff" * len(raw)


def test_refusals_are_unsupported_rows(worker, tmp_path):
    params, _, digest = make_case(tmp_path, shape(1, 2, 2, 4, 4, 8, False, "fp16"), "refuse")
    prepared = worker.handle("prepare", params)
    assert prepared["loaded_sha256"] == digest
    assert prepared["diagnostics"] == [core.diagnostic("unsupported", "probe refuses this case", "because the test asked")]


def test_capabilities_are_left_to_the_bridge(worker, tmp_path):
    # math declares fp32 and fp16 only: the bridge refuses bf16 in Go
    # (internal/bridge, unsupported) before the request gets here, so the
    # worker has no check of its own to disagree with it.
    s = shape(1, 2, 2, 4, 4, 8, False, "bf16")
    params, (q, k, v), digest = make_case(tmp_path, s, "math")
    assert worker.handle("prepare", params) == {"loaded_sha256": digest, "facts": {"probe": "yes"}}
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, False), "bf16")


def test_serve_answers_errors_as_frames(worker, tmp_path):
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 4, 4, 8, False, "fp16"), "oom")
    requests = io.BytesIO()
    for i, (method, p) in enumerate([("describe", None), ("prepare", params), ("nonsense", {})], 1):
        core.write_frame(requests, {"id": i, "method": method, "params": p})
    requests.seek(0)
    replies = io.BytesIO()
    core.serve(worker, requests, replies)
    replies.seek(0)
    described, oom, unknown = (core.read_frame(replies) for _ in range(3))
    assert described["id"] == 1 and described["result"]["device"]["kind"] == "cpu"
    assert oom["id"] == 2 and oom["error"]["kind"] == "oom" and "CUDA out of memory" in oom["error"]["message"]
    assert unknown["error"] == {"kind": "error", "message": unknown["error"]["message"]}
    assert "unknown method 'nonsense'" in unknown["error"]["message"]


def test_error_payload_names_the_exception_and_place():
    try:
        raise ValueError("bad shape")
    except ValueError as exc:
        payload = core.error_payload(exc)
    assert payload["kind"] == "error"
    assert payload["message"].startswith("ValueError: bad shape (test_worker.py:")


class CompilationError(Exception):
    """Shaped as Triton's: "at LINE:COL:", the kernel's source, the diagnostic
    last (the text below is as Triton 3.6 printed it on an H100)."""


def test_error_payload_puts_a_compile_errors_diagnostic_first():
    text = (
        "at 5:8:\n"
        "def _scores(Q, K, O, BLOCK: tl.constexpr):\n"
        "    s = tl.dot(q, k)\n"
        "        ^\n"
        "input and other must have equal reduction dimensions"
    )
    try:
        raise CompilationError(text)
    except CompilationError as exc:
        payload = core.error_payload(exc)
    first, _, rest = payload["message"].partition("\n")
    assert first.startswith(
        "CompilationError: input and other must have equal reduction dimensions (at 5:8 of the kernel; test_worker.py:"
    )
    assert rest == text


def test_describe_reports_variants_and_device(worker):
    described = worker.handle("describe", {})
    assert described["version"] == "probe-1"
    assert [v["name"] for v in described["variants"]][:2] == ["math", "untouched"]
    assert described["device"]["kind"] == "cpu" and described["device"]["cores"] >= 1


def test_hash_is_sha256_of_concatenation(tmp_path):
    s = shape(1, 1, 1, 2, 3, 8, False, "fp32")
    params, _, digest = make_case(tmp_path, s, "math")
    whole = b"".join(open(params["files"][k], "rb").read() for k in "QKV")
    assert digest == hashlib.sha256(whole).hexdigest()


def test_a_move_puts_the_case_in_new_buffers_and_prepares_it_again(worker, tmp_path):
    s = shape(1, 2, 2, 16, 16, 16, False, "fp32")
    params, (q, k, v), _ = make_case(tmp_path, s, "math")
    worker.handle("prepare", params)
    case = worker.cases["case"]
    before_inputs, before_kernel = case.inputs, case.kernel
    move = worker._mover(case, poison_output=True)
    move(1)
    assert case.kernel is not before_kernel
    for name in "qkv":
        old, new = getattr(before_inputs, name), getattr(case.inputs, name)
        assert new.data_ptr() != old.data_ptr() and torch.equal(new, old)
    assert worker._spacer.numel() == core.spacer_bytes(1)
    assert_close(case.kernel.run(), reference(q, k, v, False), "fp32")


def test_run_reports_its_placement_blocks(worker, tmp_path):
    # On a CPU the buffers stay where they are: one placement, no blocks.
    s = shape(1, 2, 2, 16, 16, 16, False, "fp32")
    params, _, _ = make_case(tmp_path, s, "math")
    worker.handle("prepare", params)
    samples = worker.handle("run", {"case_id": "case", "measurement": {**QUICK, "placements": 3}})
    assert samples["kernel_blocks"] is None


@pytest.mark.parametrize("placements, min_samples, max_samples", [(5, 20, 2000), (5, 7, 7), (1, 20, 2000), (8, 3, 10)])
def test_block_measurement_shares_the_bounds_as_the_sdk_does(placements, min_samples, max_samples):
    m = core.Measurement(warmup_runs=10, warmup_time_ns=50_000_000, min_samples=min_samples, max_samples=max_samples,
                         target_noise=0.005, time_cap_ns=2_000_000_000, placements=placements)
    n = core.placements(m)
    assert n == max(min(placements, min_samples), 1)
    blocks = [core.block_measurement(m, i) for i in range(n)]
    assert sum(b.min_samples for b in blocks) >= min_samples
    assert sum(b.max_samples for b in blocks) <= max_samples
    assert all(1 <= b.min_samples <= b.max_samples for b in blocks)
    assert all(b.warmup_runs >= 1 for b in blocks[1:])


def test_a_stay_put_move_counts_its_samples_to_the_block_before():
    m = core.Measurement(warmup_runs=0, warmup_time_ns=0, min_samples=12, max_samples=12, target_noise=0,
                         time_cap_ns=0, placements=4)

    def move(placement):
        if placement == 2:
            raise core.StayPut("no room")

    times, blocks = core.collect_placed_samples(m, lambda bm: [1] * bm.min_samples, move)
    assert blocks == [3, 6, 3] and len(times) == 12
