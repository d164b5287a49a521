"""The worker core's path for ops other than attention, on the CPU: the
generic loader and writer, and rmsnorm through the bridge's probe backend
(internal/bridge/testdata/probe_backend.py)."""

import hashlib

import pytest
import torch

import flashcore_worker as core
import probe_backend
from helpers import assert_close, make_op_case, make_rmsnorm_case, read_tensor, rmsnorm_reference, tensor_file

CPU = torch.device("cpu")
QUICK = {"warmup_runs": 1, "warmup_time": 0, "min_samples": 3, "max_samples": 6, "target_noise": 0.5,
         "time_cap": 5_000_000_000, "l2": "hot", "call_samples": 2}


@pytest.fixture
def worker():
    return core.Worker(probe_backend.Backend(CPU), CPU)


# ---------------------------------------------------------------- loading and writing


def test_load_tensors_hashes_every_file_in_order(tmp_path):
    x = torch.randn(3, 5).to(torch.bfloat16)
    w = torch.randn(5).to(torch.bfloat16)
    params, digest = make_op_case(tmp_path, "rmsnorm", "rmsnorm", {"x": x, "weight": w}, [("y", [3, 5], "bf16")])
    files = [core.TensorFile.from_json(t) for t in params["inputs"]]
    tensors, loaded = core.load_tensors(files, CPU)
    whole = b"".join(open(f.path, "rb").read() for f in files)
    assert loaded == digest == hashlib.sha256(whole).hexdigest()
    assert list(tensors) == ["x", "weight"]
    assert torch.equal(tensors["x"], x) and torch.equal(tensors["weight"], w)
    assert tensors["x"].dtype == torch.bfloat16 and tuple(tensors["x"].shape) == (3, 5)


def test_the_hash_follows_the_order_the_host_names_the_files_in(tmp_path):
    x, w = torch.ones(2, 4), torch.zeros(4)
    params, digest = make_op_case(tmp_path, "rmsnorm", "rmsnorm", {"x": x, "weight": w}, [("y", [2, 4], "fp32")])
    files = [core.TensorFile.from_json(t) for t in params["inputs"]]
    _, forward = core.load_tensors(files, CPU)
    _, backward = core.load_tensors(files[::-1], CPU)
    assert forward == digest != backward


def test_load_tensors_names_a_file_of_the_wrong_size(tmp_path):
    params, _ = make_op_case(tmp_path, "rmsnorm", "rmsnorm", {"x": torch.zeros(2, 8, dtype=torch.float16)},
                             [("y", [2, 8], "fp16")])
    with open(params["inputs"][0]["path"], "ab") as f:
        f.write(b"\0\0")
    with pytest.raises(ValueError, match=r"x\.bin: 34 bytes, want 32 for x\[2, 8\] fp16"):
        core.load_tensors([core.TensorFile.from_json(params["inputs"][0])], CPU)


def test_load_tensors_refuses_an_unknown_dtype_and_a_name_given_twice(tmp_path):
    path = tmp_path / "i.bin"
    path.write_bytes(b"\0" * 8)
    with pytest.raises(ValueError, match="dtype 'int64' is not one the worker reads"):
        core.load_tensors([core.TensorFile("i", str(path), "int64", (1,))], CPU)
    index, _ = core.load_tensors([core.TensorFile("i", str(path), "int32", (2,))], CPU)
    assert index["i"].dtype == torch.int32 and index["i"].tolist() == [0, 0]
    twice = core.TensorFile("x", str(path), "fp32", (2,))
    with pytest.raises(ValueError, match="input 'x' is named twice"):
        core.load_tensors([twice, twice], CPU)


def test_check_outputs_holds_each_output_to_its_file():
    files = [core.TensorFile("y", "y.bin", "fp16", (2, 3)), core.TensorFile("z", "z.bin", "fp32", (3,))]
    y, z = torch.zeros(2, 3, dtype=torch.float16), torch.zeros(3)
    assert core.check_outputs((y, z), files, "pair") == [y, z]
    with pytest.raises(ValueError, match=r"pair returned 1 outputs, want 2 \(y\[2, 3\] fp16, z\[3\] fp32\)"):
        core.check_outputs(y, files, "pair")
    with pytest.raises(ValueError, match=r"output y has shape \(3, 2\), want \(2, 3\)"):
        core.check_outputs((y.T, z), files, "pair")
    with pytest.raises(ValueError, match="output z is torch.float16, want torch.float32"):
        core.check_outputs((y, z.half()), files, "pair")
    with pytest.raises(TypeError, match="returned list for y"):
        core.check_outputs(([1], z), files, "pair")


# ---------------------------------------------------------------- rmsnorm through the worker


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_rmsnorm_prepare_fetch_run_release(worker, tmp_path, dtype):
    params, (x, w), digest = make_rmsnorm_case(tmp_path, 7, 33, dtype, "rmsnorm")
    prepared = worker.handle("prepare", params)
    assert prepared == {"loaded_sha256": digest, "facts": {"probe": "yes"}}
    assert worker.handle("fetch", {"case_id": "case"}) == {}
    y = params["outputs"][0]
    assert_close(read_tensor(y["path"], [7, 33], dtype), rmsnorm_reference(x, w), dtype)
    timed = tensor_file("y", tmp_path / "timed-out.bin", [7, 33], dtype)
    samples = worker.handle("run", {"case_id": "case", "measurement": QUICK, "output": timed["path"],
                                    "outputs": [timed]})
    assert samples["method"] == "wall-clock" and 3 <= len(samples["kernel_times"]) <= 6
    assert_close(read_tensor(timed["path"], [7, 33], dtype), rmsnorm_reference(x, w), dtype)
    worker.handle("release", {"case_id": "case"})
    with pytest.raises(KeyError, match="not prepared"):
        worker.handle("fetch", {"case_id": "case"})


def test_run_writes_the_first_output_where_only_output_names_it(worker, tmp_path):
    params, (x, w), _ = make_rmsnorm_case(tmp_path, 2, 16, "fp32", "rmsnorm")
    worker.handle("prepare", params)
    path = tmp_path / "timed.bin"
    worker.handle("run", {"case_id": "case", "measurement": QUICK, "output": str(path)})
    assert_close(read_tensor(path, [2, 16], "fp32"), rmsnorm_reference(x, w), "fp32")


def test_run_without_an_output_writes_nothing(worker, tmp_path):
    params, _, _ = make_rmsnorm_case(tmp_path, 2, 16, "fp32", "rmsnorm")
    worker.handle("prepare", params)
    worker.handle("run", {"case_id": "case", "measurement": QUICK})
    assert not (tmp_path / "out.bin").exists()


def test_an_op_output_is_poisoned_before_the_checked_and_the_timed_runs(worker, tmp_path):
    params, _, _ = make_rmsnorm_case(tmp_path, 3, 8, "fp16", "rmsnorm-untouched")
    worker.handle("prepare", params)
    worker.handle("fetch", {"case_id": "case"})
    raw = (tmp_path / "out.bin").read_bytes()
    assert raw == b"\xff" * 3 * 8 * 2
    timed = tmp_path / "timed.bin"
    worker.handle("run", {"case_id": "case", "measurement": QUICK, "output": str(timed)})
    assert timed.read_bytes() == raw


def test_an_op_case_moves_to_new_buffers_and_is_prepared_again(worker, tmp_path):
    params, (x, w), _ = make_rmsnorm_case(tmp_path, 4, 16, "fp32", "rmsnorm")
    worker.handle("prepare", params)
    case = worker.cases["case"]
    before_inputs, before_kernel = case.inputs, case.kernel
    worker._mover(case, poison_output=True)(1)
    assert case.kernel is not before_kernel
    for name in ("x", "weight"):
        old, new = before_inputs.inputs[name], case.inputs.inputs[name]
        assert new.data_ptr() != old.data_ptr() and torch.equal(new, old)
    assert_close(case.kernel.run(), rmsnorm_reference(x, w), "fp32")


def test_a_request_without_output_files_is_an_error(worker, tmp_path):
    params, _, _ = make_rmsnorm_case(tmp_path, 2, 8, "fp32", "rmsnorm")
    with pytest.raises(ValueError, match="op rmsnorm: the request names no output file"):
        worker.handle("prepare", {**params, "outputs": []})


# ---------------------------------------------------------------- an op with two outputs


class PairBackend:
    """A made-up op, pair(x) -> (x + 1, 2·x in fp32): what the generic path
    does with more than one output (wrong=True returns only the first)."""

    version = "pair-1"
    build = "test"

    def __init__(self, wrong=False):
        self.wrong = wrong

    def variants(self):
        return [{"name": "pair", "ops": ["pair"], "capabilities": core.capabilities(("fp16",))}]

    def prepare_op(self, case):
        x = case.inputs["x"]
        plus = torch.empty_like(x)
        if self.wrong:
            return core.Kernel(lambda: plus, output=plus)

        def run():
            torch.add(x, 1, out=plus)
            return plus, x.float() * 2

        return core.Kernel(run, output=(plus,))


def pair_case(tmp_path):
    x = torch.arange(6, dtype=torch.float16).reshape(2, 3)
    params, _ = make_op_case(tmp_path, "pair", "pair", {"x": x}, [("plus", [2, 3], "fp16"), ("twice", [2, 3], "fp32")])
    return params, x


def test_an_op_with_two_outputs_writes_each_file(tmp_path):
    worker = core.Worker(PairBackend(), CPU)
    params, x = pair_case(tmp_path)
    worker.handle("prepare", params)
    worker.handle("fetch", {"case_id": "case"})
    assert torch.equal(read_tensor(tmp_path / "out-plus.bin", [2, 3], "fp16"), x + 1)
    assert torch.equal(read_tensor(tmp_path / "out-twice.bin", [2, 3], "fp32"), x.float() * 2)
    timed = [tensor_file("plus", tmp_path / "t-plus.bin", [2, 3], "fp16"),
             tensor_file("twice", tmp_path / "t-twice.bin", [2, 3], "fp32")]
    worker.handle("run", {"case_id": "case", "measurement": QUICK, "output": timed[0]["path"], "outputs": timed})
    assert torch.equal(read_tensor(tmp_path / "t-twice.bin", [2, 3], "fp32"), x.float() * 2)
    with pytest.raises(ValueError, match="run names 1 timed outputs, the case has 2"):
        worker.handle("run", {"case_id": "case", "measurement": QUICK, "outputs": timed[:1]})


def test_a_kernel_that_returns_too_few_outputs_is_an_error_naming_the_row(tmp_path):
    worker = core.Worker(PairBackend(wrong=True), CPU)
    params, _ = pair_case(tmp_path)
    worker.handle("prepare", params)
    with pytest.raises(ValueError, match=r"pair of pair returned 1 outputs, want 2"):
        worker.handle("fetch", {"case_id": "case"})


class AttentionOnly:
    """A backend written before ops: prepare, no prepare_op. One of its
    variants lists rmsnorm by mistake."""

    version = "old-1"
    build = "test"

    def variants(self):
        return [{"name": "rmsnorm", "ops": ["rmsnorm"], "capabilities": core.capabilities(("fp32",))}]

    def prepare(self, case):
        raise AssertionError("attention was not asked for")


def test_a_backend_without_prepare_op_is_an_error(tmp_path):
    worker = core.Worker(AttentionOnly(), CPU)
    params, _, _ = make_rmsnorm_case(tmp_path, 2, 8, "fp32", "rmsnorm")
    with pytest.raises(ValueError, match="variant rmsnorm lists op rmsnorm, but its backend has no prepare_op"):
        worker.handle("prepare", params)
