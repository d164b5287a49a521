"""What the worker does under a profiler: NVTX ranges around each call,
named the way internal/ncu reads them back, and no CUPTI cross-check."""

import pytest
import torch

import flashcore_worker as core
import probe_backend
from helpers import make_case, shape


class FakeNVTX:
    """Records range pushes and pops, as torch.cuda.nvtx would make them."""

    def __init__(self):
        self.events = []

    def range_push(self, name):
        self.events.append(("push", name))

    def range_pop(self):
        self.events.append(("pop",))


def test_call_range_is_the_name_internal_ncu_parses():
    # The same literal as internal/ncu's TestCallRangeIsTheWorkersName.
    assert core.call_range("b1-h8-s512-d64-fp16", "sdpa", 3) == "flashcore call b1-h8-s512-d64-fp16 sdpa #3"


@pytest.mark.parametrize("variant, tunables, want", [
    ("sdpa", {}, "sdpa"),
    ("triton", {"warps": "4", "BLOCK_M": "64"}, "triton[BLOCK_M=64,warps=4]"),
])
def test_row_label_is_the_hosts(variant, tunables, want):
    assert core.row_label(variant, tunables) == want


def test_each_call_runs_inside_its_own_range_and_numbering_goes_on():
    case = core.PreparedCase(kernel=None, shape=None, output_path="", case_id="c", label="sdpa")
    nvtx = FakeNVTX()
    first = core.nvtx_marked(lambda: "out", case, nvtx)
    assert first() == "out"
    second = core.nvtx_marked(lambda: "out", case, nvtx)  # a later Run of the same row
    second()
    assert nvtx.events == [
        ("push", "flashcore"), ("push", "flashcore call c sdpa #1"), ("pop",), ("pop",),
        ("push", "flashcore"), ("push", "flashcore call c sdpa #2"), ("pop",), ("pop",),
    ]


def test_ranges_are_closed_when_a_call_raises():
    case = core.PreparedCase(kernel=None, shape=None, output_path="", case_id="c", label="sdpa")
    nvtx = FakeNVTX()

    def fails():
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError):
        core.nvtx_marked(fails, case, nvtx)()
    assert nvtx.events.count(("pop",)) == 2


def test_prepare_keeps_the_rows_label(tmp_path):
    device = torch.device("cpu")
    worker = core.Worker(probe_backend.Backend(device), device)
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 4, 4, 8, False, "fp32"), "math", case_id="c7")
    params["tunables"] = {"b": "2", "a": "1"}
    # The worker refuses tunables a variant does not declare: declare these.
    worker._variants["math"]["tunables"] = [{"name": "a", "values": ["1"]}, {"name": "b", "values": ["2"]}]
    worker.prepare(params)
    assert worker.cases["c7"].label == "math[a=1,b=2]"
    assert worker.cases["c7"].case_id == "c7"
