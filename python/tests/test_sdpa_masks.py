"""Dense attention's masks (bottom-right alignment, sliding windows,
softcap) on the pytorch-sdpa backend's CPU variants, against a float64
reference written from the definitions."""

import dataclasses
import os

import pytest
import torch

import flashcore_worker as core
import sdpa_backend
from helpers import assert_close, make_case, masked, masked_reference, read_output, shape

CPU = torch.device("cpu")


CHUNK = shape(1, 4, 2, 24, 80, 32, True, "fp32")  # GQA, a chunk of prefill: Sq < Sk
TALL = shape(1, 2, 1, 70, 33, 16, True, "fp16")  # Sq > Sk: bottom-right rows above the first key see none
SQUARE = shape(2, 2, 2, 40, 40, 16, False, "bf16")
SDPA_MASKS = [
    masked(CHUNK, causal_align="bottom-right"),
    masked(CHUNK, causal_align="bottom-right", window_left=9),
    masked(CHUNK, window_left=5),
    masked(TALL, causal_align="bottom-right"),
    masked(TALL, causal_align="bottom-right", window_left=4),
    masked(SQUARE, window_left=4, window_right=3),
]
FLEX_MASKS = SDPA_MASKS + [
    masked(CHUNK, softcap=2),
    masked(CHUNK, causal_align="bottom-right", window_left=16, softcap=30),
    masked(TALL, softcap=1.5),
]


@pytest.fixture(scope="module")
def worker():
    return core.Worker(sdpa_backend.Backend(CPU), CPU)


def prepare_masked(worker, tmp_path, s, variant):
    """A prepare request for s as the host sends it: the mask axes in the
    params, set away from their defaults alone."""
    params, (q, k, v), _ = make_case(tmp_path, s, variant, seed=5)
    return params, (q, k, v), worker.handle("prepare", params)


# SDPA's variants take no softcap (they do not declare it); flex-attention
# takes every mask.
CASES = [(v, s) for v in ("sdpa", "sdpa-math", "sdpa-flash") for s in SDPA_MASKS] + \
        [("flex-attention", s) for s in FLEX_MASKS]


@pytest.mark.parametrize("variant, s", CASES, ids=lambda x: str(x))
def test_masks_match_reference(worker, tmp_path, variant, s):
    params, (q, k, v), prepared = prepare_masked(worker, tmp_path, s, variant)
    assert "diagnostics" not in prepared, prepared
    worker.handle("fetch", {"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), masked_reference(q, k, v, s), s.dtype)
    worker.handle("release", {"case_id": "case"})


def test_shape_reads_the_mask_params():
    s = core.attention_shape({"shape": {"batch": 1, "heads": 2, "seq_q": 4, "seq_k": 9, "head_dim": 8,
                                        "causal": True, "dtype": "fp16"},
                              "params": {"causal_align": "bottom-right", "window_left": "3", "softcap": "30"}})
    assert (s.causal_align, s.window_left, s.window_right, s.softcap) == ("bottom-right", 3, -1, 30.0)
    assert s.masks == ("bottom-right", "window", "softcap") and s.key_offset == 5
    assert s.mask_keywords() == {"causal_align": "bottom-right", "window_left": 3, "softcap": 30.0}
    assert str(s) == "B1 H2 S4x9 D8 fp16 causal bottom-right window 3,-1 softcap 30"
    plain = core.attention_shape({"shape": {"batch": 1, "heads": 2, "seq_q": 4, "seq_k": 4, "head_dim": 8,
                                            "causal": True, "dtype": "fp16"},
                                  "params": {"causal_align": "bottom-right"}})
    assert not plain.masked and plain.mask_keywords() == {"causal_align": "bottom-right"}
    with pytest.raises(ValueError, match="causal_align 'middle'"):
        core.attention_shape({"shape": {"batch": 1, "heads": 1, "seq_q": 1, "seq_k": 1, "head_dim": 8,
                                        "dtype": "fp16"}, "params": {"causal_align": "middle"}})


def test_sdpa_mask_is_causal_lower_right_or_boolean():
    """Bottom-right causal alone goes to PyTorch's own lower-right bias
    (its fused kernels place the cut); a window is a boolean [Sq, Sk]
    mask that agrees with the case's mask_mod."""
    mask, fact = sdpa_backend.sdpa_mask(masked(CHUNK, causal_align="bottom-right"), "sdpa", CPU)
    assert type(mask).__name__ == "CausalBias" and "causal_lower_right(24, 80)" in fact
    s = masked(CHUNK, causal_align="bottom-right", window_left=9)
    mask, fact = sdpa_backend.sdpa_mask(s, "sdpa", CPU)
    assert mask.dtype == torch.bool and list(mask.shape) == [24, 80] and fact.startswith("boolean")
    assert mask[0].nonzero().flatten().tolist() == list(range(47, 57))  # row 0 sits at key 56
    with pytest.raises(core.Unsupported, match="no softcap"):
        sdpa_backend.sdpa_mask(masked(CHUNK, softcap=5), "sdpa", CPU)


def test_capabilities_declare_the_masks(worker):
    variants = {v["name"]: v for v in worker.handle("describe", {})["variants"]}
    for name in ("sdpa", "sdpa-math", "sdpa-flash"):
        assert variants[name]["capabilities"]["masks"] == ["bottom-right", "window"], name
    for name in ("sdpa-efficient", "sdpa-cudnn"):
        assert "masks" not in variants[name]["capabilities"], name
    flex = variants["flex-attention"]["op_capabilities"]["attention"]
    assert flex["masks"] == ["bottom-right", "window", "softcap"] and flex["modes"] == ["fwd"]
    assert flex["max_seq_len"] == sdpa_backend.CPU_FLEX_MAX_SEQ_LEN


def test_rows_that_see_no_key_must_be_zeros():
    s = masked(TALL, causal_align="bottom-right")
    out = torch.zeros(s.q_shape)
    sdpa_backend.refuse_unseeing_rows(out, s, "sdpa")
    out[0, 0, 0, 0] = float("nan")
    with pytest.raises(core.Unsupported, match="writes NaN in the 37 query rows that see no key"):
        sdpa_backend.refuse_unseeing_rows(out, s, "sdpa")


def test_masked_backward_is_refused():
    s = masked(shape(1, 2, 2, 8, 16, 8, True, "fp32"), causal_align="bottom-right")
    s = dataclasses.replace(s, mode=core.BWD)
    case = core.OpCase("case", "sdpa", core.ATTENTION, {}, {}, CPU, {}, [], s)
    with pytest.raises(core.Unsupported, match="masks beyond top-left causal in mode bwd"):
        sdpa_backend.Backend(CPU).prepare_op(case)


def test_a_compiler_that_finds_no_kernel_is_a_skip(monkeypatch, tmp_path):
    """Inductor's NoValidChoicesError (seen on an H100 for a GQA case of
    lengths 96 and 160) is torch.compile refusing the case: a skip with its
    words. Any other error of the first call stays an error."""
    backend = sdpa_backend.Backend(CPU)
    worker = core.Worker(backend, CPU)

    class NoValidChoicesError(Exception):
        pass

    def refuse(*args, **kwargs):
        raise RuntimeError("LoweringException: wrapped") from NoValidChoicesError("No choices to select")

    import torch.nn.attention.flex_attention as flex

    monkeypatch.setattr(flex, "flex_attention", refuse)
    params, _, _ = make_case(tmp_path, shape(1, 4, 2, 96, 160, 64, True, "fp32"), "flex-attention")
    (diag,) = worker.handle("prepare", params)["diagnostics"]
    assert diag["summary"] == "flex-attention: torch.compile found no kernel for this case"
    assert diag["detail"].startswith("RuntimeError: LoweringException")

    def broken(*args, **kwargs):
        raise RuntimeError("something else")

    monkeypatch.setattr(flex, "flex_attention", broken)
    with pytest.raises(RuntimeError, match="something else"):
        worker.handle("prepare", params)


def test_a_compile_refusal_is_kept_for_later_workers(monkeypatch, tmp_path):
    """A case torch.compile refused is refused by a later worker of the same
    plugin without compiling (the refusal is kept in FLASHCORE_CACHE_DIR),
    with the same summary and a detail that says where it was kept; another
    compiler setting, or no cache, compiles again. Errors that are not a
    refusal are never kept."""
    class NoValidChoicesError(Exception):
        pass

    compiles = []

    def compiled():
        def refuse(*args, **kwargs):
            compiles.append(1)
            raise RuntimeError("LoweringException: wrapped") from NoValidChoicesError("No choices to select")
        return refuse

    monkeypatch.setattr(sdpa_backend, "compiled_flex_attention", compiled)
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("FLASHCORE_CACHE_DIR", str(cache))
    params, _, _ = make_case(tmp_path, shape(1, 4, 2, 96, 160, 64, True, "fp32"), "flex-attention")

    def prepare():
        backend = sdpa_backend.Backend(CPU)
        backend.compile_flex = True
        (diag,) = core.Worker(backend, CPU).handle("prepare", params)["diagnostics"]
        assert diag["summary"] == "flex-attention: torch.compile found no kernel for this case"
        return diag["detail"]

    assert prepare().startswith("RuntimeError: LoweringException") and len(compiles) == 1
    detail = prepare()
    assert len(compiles) == 1, "the kept refusal was compiled again"
    assert detail.startswith("RuntimeError: LoweringException") and "kept in" in detail
    assert str(cache / sdpa_backend.CompileRefusals.FILE) in detail
    monkeypatch.setenv("TORCHINDUCTOR_MAX_AUTOTUNE", "1")
    prepare()
    assert len(compiles) == 2, "another compiler setting must compile again"
    monkeypatch.delenv("FLASHCORE_CACHE_DIR")
    prepare()
    prepare()
    assert len(compiles) == 4, "without a cache every worker compiles"

    def broken():
        def fail(*args, **kwargs):
            raise RuntimeError("something else")
        return fail

    monkeypatch.setenv("FLASHCORE_CACHE_DIR", str(cache))
    (tmp_path / "other").mkdir()
    other, _, _ = make_case(tmp_path / "other", shape(1, 2, 2, 64, 64, 32, False, "fp32"), "flex-attention")
    monkeypatch.setattr(sdpa_backend, "compiled_flex_attention", broken)
    for _ in range(2):
        backend = sdpa_backend.Backend(CPU)
        backend.compile_flex = True
        with pytest.raises(RuntimeError, match="something else"):
            core.Worker(backend, CPU).handle("prepare", other)
    import json

    kept = json.loads((cache / sdpa_backend.CompileRefusals.FILE).read_text())
    assert len(kept) == 2, "only the two refusals are kept, not the other error"


def test_a_kept_refusal_outlives_what_a_first_compile_sets(monkeypatch, tmp_path):
    """The compiler's variables a refusal is kept under are the worker's
    as it started: a first compile that sets one of its own (seen on an
    H100, in a run with cold caches) must not hide the refusal from the
    next worker, which starts without it."""
    from torch.nn.attention.flex_attention import flex_attention

    class NoValidChoicesError(Exception):
        pass

    compiles = []

    def compiled():
        def call(q, k, v, **kwargs):
            compiles.append(q.shape[2])
            if q.shape[2] == 96:
                raise RuntimeError("LoweringException: wrapped") from NoValidChoicesError("No choices to select")
            os.environ["TORCHINDUCTOR_SET_BY_A_FIRST_COMPILE"] = "1"
            return flex_attention(q, k, v, **kwargs)
        return call

    monkeypatch.setattr(sdpa_backend, "compiled_flex_attention", compiled)
    monkeypatch.setenv("FLASHCORE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TORCHINDUCTOR_SET_BY_A_FIRST_COMPILE", raising=False)
    fine, refused = tmp_path / "fine", tmp_path / "refused"
    fine.mkdir(), refused.mkdir()
    fine_params, _, _ = make_case(fine, shape(1, 2, 2, 64, 64, 32, False, "fp32"), "flex-attention")
    refused_params, _, _ = make_case(refused, shape(1, 4, 2, 96, 160, 64, True, "fp32"), "flex-attention")
    backend = sdpa_backend.Backend(CPU)
    backend.compile_flex = True
    worker = core.Worker(backend, CPU)
    worker.handle("prepare", fine_params)
    assert os.environ.get("TORCHINDUCTOR_SET_BY_A_FIRST_COMPILE") == "1"
    worker.handle("prepare", refused_params)
    assert compiles.count(96) == 1
    os.environ.pop("TORCHINDUCTOR_SET_BY_A_FIRST_COMPILE")
    backend = sdpa_backend.Backend(CPU)
    backend.compile_flex = True
    (diag,) = core.Worker(backend, CPU).handle("prepare", refused_params)["diagnostics"]
    assert compiles.count(96) == 1, "the next worker compiled the kept refusal again"
    assert "kept in" in diag["detail"]


@pytest.mark.parametrize("threads, want", [(None, ["1", "1"]), ("3", ["3", "3"])])
def test_flex_compiles_in_the_worker_unless_told(threads, want):
    """torch.compile of flex-attention runs in the worker (compile_threads
    1: no pool of compile workers, which Inductor starts at a first compile
    even from a warm cache, and which would run beside the plugin's timed
    rows); a user's TORCHINDUCTOR_COMPILE_THREADS is left as set. A fresh
    interpreter, since Inductor's config is the process's."""
    import subprocess
    import sys

    script = (
        "import sdpa_backend, torch._inductor.config as config\n"
        "from torch._inductor.async_compile import get_compile_threads\n"
        "sdpa_backend.compiled_flex_attention()\n"
        "print(config.compile_threads, get_compile_threads())\n"
    )
    env = {k: v for k, v in os.environ.items() if k != sdpa_backend.COMPILE_THREADS_VARIABLE}
    if threads is not None:
        env[sdpa_backend.COMPILE_THREADS_VARIABLE] = threads
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == want, out.stdout + out.stderr
