"""The worker core against the bridge's probe backend
(internal/bridge/testdata/probe_backend.py), on the CPU; and attention's
backward modes against a backend of the fp64 reference's (GradBackend)."""

import hashlib
import io
import os

import pytest
import torch

import flashcore_worker as core
import probe_backend
from helpers import (
    assert_close,
    assert_grads_close,
    make_attention_case,
    make_case,
    read_output,
    read_outputs,
    read_tensor,
    reference,
    reference_backward,
    shape,
)

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
    # The full warm-up before the first block; after a move, runs only.
    assert [b.warmup_time_ns for b in blocks] == [m.warmup_time_ns] + [0] * (n - 1)


def test_a_stay_put_move_counts_its_samples_to_the_block_before():
    m = core.Measurement(warmup_runs=0, warmup_time_ns=0, min_samples=12, max_samples=12, target_noise=0,
                         time_cap_ns=0, placements=4)

    def move(placement):
        if placement == 2:
            raise core.StayPut("no room")

    times, blocks = core.collect_placed_samples(m, lambda bm: [1] * bm.min_samples, move)
    assert blocks == [3, 6, 3] and len(times) == 12


# ---------------------------------------------------------------- attention's backward modes


class GradBackend:
    """Attention in every mode from the fp64 reference: the forward through
    prepare, the backward modes through prepare_op. It keeps every case it
    was given, and reads q, k, v and do alone (o and lse are checked for
    their dims and dtype, not used)."""

    version = "grad-1"
    build = "test"

    def __init__(self):
        self.cases = []

    def variants(self):
        return [{"name": "grads", "capabilities": core.capabilities(("fp32", "fp16"), modes=core.MODES)}]

    def prepare(self, case):
        self.cases.append(case)
        return core.Kernel(lambda: reference(case.q, case.k, case.v, case.shape.causal).to(case.q.dtype))

    def prepare_op(self, case):
        self.cases.append(case)
        x = case.inputs

        def run():
            o, _, dq, dk, dv = reference_backward(x["q"], x["k"], x["v"], x["do"], case.shape.causal)
            by_name = {"o": o, "dq": dq, "dk": dk, "dv": dv}
            return tuple(by_name[f.name].to(core.torch_dtype(f.dtype)) for f in case.outputs)

        return core.Kernel(run, facts={"mode": case.mode})


CPU = torch.device("cpu")


@pytest.fixture
def grads():
    return core.Worker(GradBackend(), CPU)


BWD_SHAPE = shape(1, 4, 2, 13, 21, 16, True, "fp32")


@pytest.mark.parametrize("mode, inputs, outputs", [
    ("bwd", ["q", "k", "v", "o", "do", "lse"], ["dq", "dk", "dv"]),
    ("fwd+bwd", ["q", "k", "v", "do"], ["o", "dq", "dk", "dv"]),
])
def test_a_backward_mode_is_an_op_case_through_prepare_op(grads, tmp_path, mode, inputs, outputs):
    s = BWD_SHAPE
    request, tensors, digest = make_attention_case(tmp_path, s, "grads", mode, seed=4)
    prepared = grads.handle("prepare", request)
    assert prepared == {"loaded_sha256": digest, "facts": {"mode": mode}}
    (case,) = grads.backend.cases
    assert isinstance(case, core.OpCase) and case.op == "attention" and case.mode == mode
    assert case.shape == core.Shape(1, 4, 2, 13, 21, 16, True, "fp32", mode)
    assert list(case.inputs) == inputs and [f.name for f in case.outputs] == outputs
    if mode == "bwd":
        assert case.inputs["lse"].dtype == torch.float32 and tuple(case.inputs["lse"].shape) == (1, 4, 13)
        assert torch.equal(case.inputs["o"], tensors["o"])
    dims = {"o": s.q_shape, "dq": s.q_shape, "dk": s.kv_shape, "dv": s.kv_shape}

    assert grads.handle("fetch", {"case_id": "case"}) == {}
    for f in request["outputs"]:
        assert os.path.getsize(f["path"]) == 4 * torch.Size(dims[f["name"]]).numel()
    assert_grads_close(read_outputs(request), {n: tensors["want"][n] for n in outputs}, "fp32")

    timed = [{**f, "path": str(tmp_path / f"timed-{f['name']}.bin")} for f in request["outputs"]]
    samples = grads.handle("run", {"case_id": "case", "measurement": QUICK, "output": timed[0]["path"],
                                   "outputs": timed})
    assert samples["method"] == "wall-clock" and len(samples["kernel_times"]) >= 3
    got = {f["name"]: read_tensor(f["path"], f["dims"], f["dtype"]) for f in timed}
    assert_grads_close(got, {n: tensors["want"][n] for n in outputs}, "fp32")


def test_a_forward_request_that_names_its_mode_is_todays_forward(grads, tmp_path):
    s = shape(1, 2, 1, 9, 12, 16, True, "fp16")
    params, (q, k, v), digest = make_case(tmp_path, s, "grads")
    params = {**params, "op": "attention", "params": {"mode": "fwd"}, "shape": {**params["shape"], "mode": "fwd"}}
    assert grads.handle("prepare", params)["loaded_sha256"] == digest
    (case,) = grads.backend.cases
    assert isinstance(case, core.Case) and case.shape == s
    grads.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, True), "fp16")


def test_an_output_of_the_wrong_shape_is_an_error_naming_the_mode(tmp_path):
    class Transposed(GradBackend):
        def prepare_op(self, case):
            kernel = super().prepare_op(case)
            return core.Kernel(lambda: tuple(t.transpose(-1, -2) for t in kernel.run()))

    worker = core.Worker(Transposed(), CPU)
    request, _, _ = make_attention_case(tmp_path, BWD_SHAPE, "grads", "bwd")
    worker.handle("prepare", request)
    with pytest.raises(ValueError, match=r"attention bwd of grads: output dq has shape \(1, 4, 16, 13\)"):
        worker.handle("fetch", {"case_id": "case"})


def test_an_unknown_mode_is_an_error(grads, tmp_path):
    request, _, _ = make_attention_case(tmp_path, BWD_SHAPE, "grads", "bwd")
    request["params"]["mode"] = "backward"
    with pytest.raises(ValueError, match="attention mode 'backward' is not one of fwd, bwd, fwd\\+bwd"):
        grads.handle("prepare", request)


def test_the_mode_and_shape_come_from_params_where_the_shape_is_zero(tmp_path):
    request, _, _ = make_attention_case(tmp_path, BWD_SHAPE, "grads", "fwd+bwd")
    assert core.attention_shape(request) == core.Shape(1, 4, 2, 13, 21, 16, True, "fp32", "fwd+bwd")
    zero = {"batch": 0, "heads": 0, "kv_heads": 0, "seq_q": 0, "seq_k": 0, "head_dim": 0, "causal": False,
            "dtype": ""}
    assert core.attention_shape({**request, "shape": zero}) == core.attention_shape(request)
    assert core.attention_shape({"params": {}, "shape": {**request["shape"], "mode": "bwd"}}).mode == "bwd"


def test_a_move_prepares_a_backward_case_again_on_copies(grads, tmp_path):
    request, tensors, _ = make_attention_case(tmp_path, BWD_SHAPE, "grads", "bwd")
    grads.handle("prepare", request)
    case = grads.cases["case"]
    before_inputs, before_kernel = case.inputs, case.kernel
    grads._mover(case, poison_output=True)(1)
    assert case.kernel is not before_kernel and isinstance(case.inputs, core.OpCase)
    assert case.inputs.shape == before_inputs.shape and grads.backend.cases[-1] is case.inputs
    for name, old in before_inputs.inputs.items():
        new = case.inputs.inputs[name]
        assert new.data_ptr() != old.data_ptr() and torch.equal(new, old)
    got = dict(zip(("dq", "dk", "dv"), case.kernel.run()))
    assert_grads_close(got, {n: tensors["want"][n] for n in got}, "fp32")


def test_capabilities_list_the_modes():
    assert core.capabilities(("fp16",))["modes"] == ["fwd"]
    assert core.capabilities(("fp16",), modes=core.MODES)["modes"] == ["fwd", "bwd", "fwd+bwd"]
    with pytest.raises(ValueError, match="mode 'backward' is not one of"):
        core.capabilities(("fp16",), modes=("fwd", "backward"))


def test_a_shape_names_its_mode_unless_it_is_the_forward():
    assert str(shape(1, 4, 2, 13, 21, 16, True, "fp16")) == "B1 H4/2 S13x21 D16 fp16 causal"
    assert str(core.Shape(1, 4, 4, 8, 8, 16, False, "bf16", "fwd+bwd")) == "B1 H4 S8 D16 bf16 fwd+bwd"


@pytest.mark.parametrize("no_cross_check", [False, True])
def test_run_takes_no_cross_check_when_asked(worker, tmp_path, monkeypatch, no_cross_check):
    """The host's clock batch times exactly the calls it asked for: with
    no_cross_check the worker makes no cross-check calls of its own."""
    s = shape(1, 2, 2, 9, 9, 16, False, "fp32")
    params, _, _ = make_case(tmp_path, s, "math")
    worker.handle("prepare", params)
    asked = []
    monkeypatch.setattr(worker, "_cross_check", lambda *args: asked.append(args) or [])
    samples = worker.handle("run", {"case_id": "case", "measurement": {**QUICK, "no_cross_check": no_cross_check}})
    assert len(asked) == (0 if no_cross_check else 1)
    assert ("timed calls alone" in samples["facts"].get("cross_check_note", "")) == no_cross_check


class _NoVariants:
    def variants(self):
        return []


@pytest.mark.parametrize("device_type, under_profiler, started", [("cuda", False, True), ("cuda", True, False),
                                                                   ("cpu", False, False)])
def test_cupti_starts_with_the_worker_on_a_gpu(monkeypatch, device_type, under_profiler, started):
    """CUPTI's first session (seconds on an H100) is paid as the worker
    starts, in parallel with the other plugins' starts, not in a row's
    warm-up; not under a profiler, which holds CUPTI, nor on a CPU."""
    calls = []
    monkeypatch.setattr(core.cupti, "start_profiler", lambda torch: calls.append(torch) or 1.5)
    monkeypatch.setenv(core.UNDER_PROFILER_ENV, "1" if under_profiler else "0")
    worker = core.Worker(_NoVariants(), torch.device(device_type))
    assert (len(calls) == 1) is started
    assert worker.profiler_start_s == (1.5 if started else 0.0)
