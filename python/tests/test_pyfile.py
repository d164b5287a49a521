"""The python-file backend (internal/bridge/python/pyfile_backend.py): how it
loads a user's file, reads capabilities() and TUNABLES, and serves the file
through the worker core; and the examples under examples/python."""

import ast
import os
import pathlib
import sys
import textwrap
import types

import pytest
import torch

import flashcore_worker as core
import pyfile_backend as pyfile
import worker_main
from helpers import (
    DTYPES,
    assert_close,
    assert_decode_close,
    assert_grads_close,
    decode_error,
    decode_reference,
    make_attention_case,
    make_case,
    make_decode_case,
    make_decode_tensors,
    make_rmsnorm_case,
    make_varlen_case,
    make_varlen_tensors,
    read_output,
    read_outputs,
    read_tensor,
    reference,
    reference_backward,
    restore_triton_autotune,
    rmsnorm_reference,
    shape,
    assert_varlen_close,
    varlen_reference,
)

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"
QUICK = {"warmup_runs": 1, "warmup_time": 0, "min_samples": 3, "max_samples": 6, "target_noise": 0.5,
         "time_cap": 5_000_000_000, "l2": "hot", "call_samples": 2}
CPU = torch.device("cpu")

SDPA_FILE = """
import torch.nn.functional as F

def attention(q, k, v, *, causal, scale):
    return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale,
                                          enable_gqa=q.shape[1] != k.shape[1])
"""


def write(tmp_path, source, name="kernel.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return str(path)


def served(monkeypatch, path, name="my-kernel"):
    """A worker serving the file at path, as the python-file plugin starts it."""
    monkeypatch.setenv(pyfile.FILE_ENV, path)
    monkeypatch.setenv(pyfile.NAME_ENV, name)
    restore_triton_autotune(monkeypatch)  # the backend replaces it under the interpreter
    return core.Worker(pyfile.Backend(CPU), CPU)


def unavailable(path):
    with pytest.raises(pyfile.FileUnavailable) as caught:
        pyfile.load_kernel_file(path)
    return caught.value.unavailable


# ---------------------------------------------------------------- loading


def test_a_file_without_capabilities_gets_the_documented_defaults(tmp_path):
    f = pyfile.load_kernel_file(write(tmp_path, SDPA_FILE))
    assert f.capabilities == pyfile.CAPABILITY_DEFAULTS
    assert f.tunables == {} and f.setup is None and not f.takes_out


def test_capabilities_are_read_key_by_key(tmp_path):
    path = write(tmp_path, SDPA_FILE + """
import torch
def capabilities():
    return {"dtypes": [torch.float16, "bf16"], "head_dims": [64, 128], "causal": False, "gqa": False,
            "unequal_lengths": False, "max_seq_len": 4096, "seq_multiple": 64}
""")
    caps = pyfile.load_kernel_file(path).capabilities
    assert caps["dtypes"] == ("fp16", "bf16")
    assert caps["head_dims"] == (64, 128)
    assert (caps["causal"], caps["non_causal"], caps["gqa"], caps["unequal_lengths"]) == (False, True, False, False)
    assert (caps["max_seq_len"], caps["seq_multiple"], caps["needs_gpu"]) == (4096, 64, False)


@pytest.mark.parametrize("body, message", [
    ('{"dtype": ["fp16"]}', "capabilities() returned unknown key 'dtype' (known: dtypes, head_dims"),
    ('{"dtypes": "fp16"}', "capabilities()['dtypes'] is 'fp16', want a list"),
    ('{"dtypes": ["fp8"]}', "capabilities()['dtypes'] is ['fp8'], want a non-empty list"),
    ('{"head_dims": [64, "128"]}', "capabilities()['head_dims'] is [64, '128'], want a list of positive ints"),
    ('{"causal": 1}', "capabilities()['causal'] is 1, want True or False"),
    ('{"seq_multiple": 0}', "capabilities()['seq_multiple'] is 0, want an int of at least 1"),
    ('[("dtypes", ["fp16"])]', "capabilities() returned list, want a dict"),
    ('1 / 0', ":10: capabilities() failed: ZeroDivisionError: division by zero"),
])
def test_bad_capabilities_name_the_file_and_the_key(tmp_path, body, message):
    path = write(tmp_path, SDPA_FILE + f"\n\ndef capabilities():\n    return {body}\n")
    reason = unavailable(path)
    assert reason.startswith(path) and message in reason, reason


def test_an_import_error_names_the_file_its_line_and_the_last_line(tmp_path):
    path = write(tmp_path, "import torch\nimport flash_attn_not_installed\n" + SDPA_FILE)
    assert unavailable(path) == (f"{path}:2: import failed: "
                                 "ModuleNotFoundError: No module named 'flash_attn_not_installed'")


def test_a_syntax_error_names_its_line(tmp_path):
    path = write(tmp_path, "import torch\n\ndef attention(q, k, v, *, causal, scale)\n    return q\n")
    reason = unavailable(path)
    assert reason.startswith(f"{path}:3: import failed: SyntaxError"), reason


def test_an_error_raised_deeper_names_the_files_line(tmp_path):
    write(tmp_path, "def find_gpu():\n    raise RuntimeError('no GPU found')\n", name="gpu_lookup.py")
    path = write(tmp_path, "import gpu_lookup\n\ngpu_lookup.find_gpu()\n")
    assert unavailable(path) == f"{path}:3: import failed: RuntimeError: no GPU found"


@pytest.mark.parametrize("source, message", [
    ("x = 1\n", "defines no function attention(q, k, v, *, causal, scale) or rmsnorm(x, weight, *, eps)"),
    ("def rmsnorm(x, weight):\n    return x\n", "takes no keyword 'eps': define rmsnorm(x, weight, *, eps)"),
    ("def rmsnorm(x, weight, *, eps):\n    return x\nTUNABLES = {'block': [64]}\n",
     "takes no keyword 'config' (it defines TUNABLES)"),
    ("rmsnorm = 3\n", "rmsnorm is a int, not a function"),
    ("attention = 3\n", "attention is a int, not a function"),
    ("def attention(q, k, v, causal):\n    return q\n", "takes no keyword 'scale'"),
    ("def attention(q, k, v, *, causal, scale):\n    return q\nTUNABLES = {'block': [64]}\n",
     "takes no keyword 'config' (it defines TUNABLES)"),
    ("def attention(q, k, v, **kw):\n    return q\nTUNABLES = {'block': []}\n", "TUNABLES['block'] is [], want a non-empty list"),
    ("def attention(q, k, v, **kw):\n    return q\nTUNABLES = {'block': [64, '64']}\n", "TUNABLES['block'] lists '64' twice"),
    ("def attention(q, k, v, **kw):\n    return q\nTUNABLES = [64]\n", "TUNABLES is a list, want a dict"),
])
def test_a_file_that_breaks_the_contract_is_unavailable_with_the_reason(tmp_path, source, message):
    path = write(tmp_path, source)
    reason = unavailable(path)
    assert reason.startswith(path) and message in reason, reason


def test_keyword_arguments_may_arrive_through_kwargs(tmp_path):
    f = pyfile.load_kernel_file(write(tmp_path, "def attention(q, k, v, **options):\n    return q\n"))
    assert f.attention is not None


def test_worker_main_reports_the_files_reason_as_is():
    exc = pyfile.FileUnavailable("/k/my_fa.py:2: import failed: ModuleNotFoundError: No module named 'flash_attn'")
    assert worker_main.startup_failure("pyfile_backend", exc) == exc.unavailable
    assert worker_main.startup_failure("sdpa_backend", ValueError("x")) == "sdpa_backend failed to start: ValueError: x"


def test_the_backend_refuses_to_start_without_a_file(monkeypatch):
    monkeypatch.delenv(pyfile.FILE_ENV, raising=False)
    with pytest.raises(pyfile.FileUnavailable, match="names no file"):
        pyfile.Backend(CPU)


# ---------------------------------------------------------------- serving


def test_describe_offers_one_variant_named_as_the_backend_with_its_tunables(tmp_path, monkeypatch):
    path = write(tmp_path, '"""Blocked attention."""\n' + SDPA_FILE.replace("scale):", "scale, config):") +
                 "\nTUNABLES = {'BLOCK_M': [64, 128], 'stages': [2, 3]}\n"
                 "def capabilities():\n    return {'seq_multiple': 16, 'needs_gpu': False}\n")
    d = served(monkeypatch, path).describe({})
    (variant,) = d["variants"]
    assert variant["name"] == "my-kernel"
    assert variant["description"] == "Blocked attention.; Sq and Sk must be multiples of 16 (other cases are skipped)"
    assert variant["tunables"] == [
        {"name": "BLOCK_M", "values": ["64", "128"], "default": "64", "description": "TUNABLES['BLOCK_M'] of kernel.py"},
        {"name": "stages", "values": ["2", "3"], "default": "2", "description": "TUNABLES['stages'] of kernel.py"},
    ]
    assert variant["capabilities"] == core.capabilities(("fp16", "bf16", "fp32"), seq_multiple=16)
    assert d["version"].startswith("sha256:") and path in d["build"]


@pytest.mark.parametrize("s", [
    shape(1, 4, 2, 33, 47, 16, True, "fp16"),
    shape(2, 2, 2, 24, 24, 32, False, "fp32"),
    shape(1, 2, 1, 20, 9, 16, True, "bf16"),
])
def test_a_file_runs_through_the_worker_core(tmp_path, monkeypatch, s):
    worker = served(monkeypatch, str(EXAMPLES / "torch_attention.py"))
    params, (q, k, v), digest = make_case(tmp_path, s, "my-kernel")
    prepared = worker.prepare(params)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared
    assert prepared["facts"]["output_poison"].startswith("not applied")
    worker.fetch({"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, s.causal), s.dtype)
    samples = worker.run({"case_id": "case", "measurement": QUICK})
    assert samples["method"] == "wall-clock" and len(samples["kernel_times"]) >= 3


def test_the_chosen_tunables_arrive_as_config_values(tmp_path, monkeypatch):
    seen = tmp_path / "seen.txt"
    path = write(tmp_path, SDPA_FILE.replace("scale):", "scale, config):\n    open(%r, 'w').write(repr(config))" % str(seen)) +
                 "\nTUNABLES = {'BLOCK_M': [64, 128], 'warps': [4, 8]}\n")
    worker = served(monkeypatch, path)
    params, _, _ = make_case(tmp_path, shape(1, 1, 1, 8, 8, 16, False, "fp32"), "my-kernel")
    worker.prepare({**params, "tunables": {"BLOCK_M": "128"}})
    assert seen.read_text() == "{'BLOCK_M': 128, 'warps': 4}"
    # A value TUNABLES does not list is refused in Go before a request
    # reaches the worker (internal/bridge); one that gets here anyway is an
    # error, never a silent default.
    with pytest.raises(ValueError, match="tunable BLOCK_M: value '96' not in TUNABLES"):
        worker.prepare({**params, "tunables": {"BLOCK_M": "96"}})


def test_sequence_multiples_and_setup_refusals_are_skips(tmp_path, monkeypatch):
    path = write(tmp_path, SDPA_FILE + """
def capabilities():
    return {"seq_multiple": 16}

def setup(shape):
    if shape.causal:
        raise NotImplementedError("no causal masking yet")
""")
    worker = served(monkeypatch, path)
    for s, reason in ((shape(1, 1, 1, 24, 32, 16, False, "fp32"), "my-kernel: Sq 24 and Sk 32 must be multiples of 16"),
                      (shape(1, 1, 1, 16, 32, 16, True, "fp32"), "my-kernel: no causal masking yet")):
        params, _, _ = make_case(tmp_path, s, "my-kernel")
        (diagnostic,) = worker.prepare(params)["diagnostics"]
        assert (diagnostic["severity"], diagnostic["summary"]) == ("unsupported", reason)


def test_an_out_parameter_gets_a_buffer_the_core_poisons(tmp_path, monkeypatch):
    path = write(tmp_path, SDPA_FILE.replace("def attention(q, k, v, *, causal, scale):\n    return ",
                                             "def attention(q, k, v, *, causal, scale, out):\n    out[:, :, 1:] = ")
                 .replace("enable_gqa=q.shape[1] != k.shape[1])", "enable_gqa=q.shape[1] != k.shape[1])[:, :, 1:]\n    return out"))
    worker = served(monkeypatch, path)
    s = shape(1, 2, 2, 6, 6, 16, False, "fp16")
    params, _, _ = make_case(tmp_path, s, "my-kernel")
    assert worker.prepare(params)["facts"]["output_poison"].startswith("applied")
    worker.fetch({"case_id": "case"})
    out = read_output(params["files"]["Output"], s)
    # The kernel skips row 0: the poison the core put there is what the host sees.
    assert bool((out[:, :, 0].contiguous().view(torch.uint8) == core.POISON_BYTE).all())
    assert not torch.isnan(out[:, :, 1:]).any()


@pytest.mark.parametrize("body, message", [
    ("return (q,)", "returned tuple, want a torch.Tensor"),
    ("return q.float()", "returned torch.float32, want torch.float16 (q's dtype)"),
    ("return q[:, :, :-1]", "returned shape (1, 2, 5, 16), want (1, 2, 6, 16)"),
])
def test_a_result_the_host_cannot_check_is_an_error_naming_the_file(tmp_path, monkeypatch, body, message):
    path = write(tmp_path, f"def attention(q, k, v, *, causal, scale):\n    {body}\n")
    worker = served(monkeypatch, path)
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 6, 6, 16, False, "fp16"), "my-kernel")
    with pytest.raises((TypeError, ValueError)) as caught:
        worker.prepare(params)
    assert f"attention() in {path}" in str(caught.value) and message in str(caught.value)


def test_an_error_inside_torch_points_at_the_users_line(tmp_path, monkeypatch):
    path = write(tmp_path, "import torch\n\ndef attention(q, k, v, *, causal, scale):\n"
                 "    scores = q @ k.transpose(-1, -2)\n    return torch.matmul(scores, q)\n")
    worker = served(monkeypatch, path)
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 6, 9, 16, False, "fp32"), "my-kernel")
    with pytest.raises(RuntimeError) as caught:
        worker.prepare(params)
    assert core.error_payload(caught.value)["message"].endswith("(kernel.py:5 in attention)")


# ---------------------------------------------------------------- examples


def test_the_plain_torch_example_is_short():
    """Its forward is the walkthrough's few lines; the backward and the
    two in one call, written out too, keep it under 60."""
    lines = (EXAMPLES / "torch_attention.py").read_text().splitlines()
    assert len(lines) < 60
    forward = lines[lines.index(next(line for line in lines if line.startswith("def attention("))):]
    assert forward.index("") < 6


@pytest.mark.parametrize("name", ["torch_attention.py", "triton_attention.py", "triton_autotuned_attention.py",
                                  "flash_attn_wrapper.py"])
def test_every_example_parses_and_defines_attention(name):
    tree = ast.parse((EXAMPLES / name).read_text(), filename=name)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    attention = functions["attention"]
    assert [a.arg for a in attention.args.args] == ["q", "k", "v"]
    assert {"causal", "scale"} <= {a.arg for a in attention.args.kwonlyargs}


@pytest.fixture
def fake_flash_attn(monkeypatch):
    """flash_attn.flash_attn_func on the CPU, [B, S, H, D] in and out, with
    flash-attn's bottom-right causal alignment, so the wrapper's layout
    handling and its refusal are tested without a GPU."""

    def flash_attn_func(q, k, v, softmax_scale=None, causal=False):
        assert q.shape[2] % k.shape[2] == 0 and q.shape[-1] == k.shape[-1], "layout [B, S, H, D] expected"
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        scores = (q.double() @ k.double().transpose(-1, -2)) * softmax_scale
        if causal:
            sq, sk = q.shape[2], k.shape[2]
            rows, cols = torch.arange(sq)[:, None], torch.arange(sk)[None, :]
            scores = scores.masked_fill(cols > rows + sk - sq, float("-inf"))
        return (scores.softmax(-1) @ v.double()).to(q.dtype).transpose(1, 2)

    monkeypatch.setitem(sys.modules, "flash_attn", types.SimpleNamespace(flash_attn_func=flash_attn_func))


def flash_attn_worker(monkeypatch):
    """The wrapper served on the CPU: its needs_gpu is lifted for the fake."""
    worker = served(monkeypatch, str(EXAMPLES / "flash_attn_wrapper.py"))
    worker._variants["my-kernel"]["capabilities"]["needs_gpu"] = False
    return worker


@pytest.mark.parametrize("s", [shape(1, 4, 2, 12, 12, 16, True, "fp16"), shape(2, 2, 2, 7, 13, 16, False, "bf16")])
def test_the_flash_attn_wrapper_transposes_both_ways(tmp_path, monkeypatch, fake_flash_attn, s):
    worker = flash_attn_worker(monkeypatch)
    params, (q, k, v), _ = make_case(tmp_path, s, "my-kernel")
    worker.prepare(params)
    worker.fetch({"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, s.causal), s.dtype)


def test_the_flash_attn_wrapper_refuses_causal_with_unequal_lengths(tmp_path, monkeypatch, fake_flash_attn):
    worker = flash_attn_worker(monkeypatch)
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 8, 12, 16, True, "fp16"), "my-kernel")
    (diagnostic,) = worker.prepare(params)["diagnostics"]
    assert diagnostic["severity"] == "unsupported" and "bottom-right" in diagnostic["summary"]


def test_the_triton_example_under_the_interpreter(tmp_path, monkeypatch):
    """The Triton example declares needs_gpu (the interpreter is far too slow
    to benchmark), but its kernel is checked here on the CPU all the same."""
    if not torch.cuda.is_available():
        monkeypatch.setenv("TRITON_INTERPRET", "1")  # read when triton.jit wraps the kernel
    f = pyfile.load_kernel_file(str(EXAMPLES / "triton_attention.py"))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    for s, config in ((shape(1, 2, 1, 40, 72, 16, True, "fp16"), {"BLOCK_M": 32, "BLOCK_N": 16}),
                      (shape(1, 2, 2, 33, 20, 32, False, "fp16"), {"BLOCK_M": 16, "BLOCK_N": 16})):
        gen = torch.Generator().manual_seed(3)
        q, k, v = (torch.randn(dims, generator=gen).half() for dims in (s.q_shape, s.kv_shape, s.kv_shape))
        out = torch.empty_like(q, device=device)
        got = f.attention(q.to(device), k.to(device), v.to(device), causal=s.causal, scale=s.scale,
                          config=config, out=out)
        assert got is out
        assert_close(got.cpu(), reference(q, k, v, s.causal), s.dtype)


def test_the_torch_example_matches_the_reference_across_dtypes():
    f = pyfile.load_kernel_file(str(EXAMPLES / "torch_attention.py"))
    for s in (shape(1, 8, 2, 17, 29, 64, True, "bf16"), shape(1, 2, 2, 5, 5, 128, False, "fp32")):
        gen = torch.Generator().manual_seed(1)
        q, k, v = (torch.randn(d, generator=gen).to(getattr(torch, {"bf16": "bfloat16", "fp32": "float32"}[s.dtype]))
                   for d in (s.q_shape, s.kv_shape, s.kv_shape))
        assert_close(f.attention(q, k, v, causal=s.causal, scale=s.scale), reference(q, k, v, s.causal), s.dtype)


def test_a_triton_file_runs_on_the_cpu_without_setting_the_interpreter(tmp_path, monkeypatch, keep_triton_autotune):
    """A py: Triton file that does not set TRITON_INTERPRET itself: with no
    GPU the worker sets it before the file is imported, so the kernel runs
    under the interpreter instead of failing for want of a driver."""
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the interpreter is not used")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv(pyfile.FILE_ENV, str(EXAMPLES / "triton_attention.py"))
    backend = pyfile.Backend(torch.device("cpu"))
    assert os.environ.get("TRITON_INTERPRET") == "1"
    s = shape(1, 2, 2, 33, 20, 32, False, "fp16")
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(dims, generator=gen).half() for dims in (s.q_shape, s.kv_shape, s.kv_shape))
    got = backend.file.attention(q, k, v, causal=s.causal, scale=s.scale, config={"BLOCK_M": 16, "BLOCK_N": 16},
                                 out=torch.empty_like(q))
    assert_close(got, reference(q, k, v, s.causal), s.dtype)


@pytest.mark.parametrize("s", [shape(1, 2, 1, 40, 24, 16, True, "fp16"), shape(2, 2, 2, 33, 33, 32, False, "fp16")])
def test_the_autotuned_triton_example_runs_through_the_worker_core_on_the_cpu(tmp_path, monkeypatch,
                                                                           keep_triton_autotune, s):
    """An autotuned kernel, unchanged: under the interpreter the worker
    launches its first config untimed (flashcore_triton_interpreter), and
    its guard keeps the driver out of the import."""
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the interpreter is not used")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    worker = served(monkeypatch, str(EXAMPLES / "triton_autotuned_attention.py"))
    params, (q, k, v), digest = make_case(tmp_path, s, "my-kernel")
    prepared = worker.prepare(params)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared
    assert prepared["facts"]["output_poison"].startswith("applied")
    worker.fetch({"case_id": "case"})
    assert_close(read_output(params["files"]["Output"], s), reference(q, k, v, s.causal), s.dtype)
    module = worker.backend.file.module
    assert module._attention_forward.best_config is module.CONFIGS[0]


# ---------------------------------------------------------------- rmsnorm

RMSNORM_FILE = """
import torch

def rmsnorm(x, weight, *, eps):
    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, eps=eps)
"""


def test_a_file_offers_the_ops_whose_functions_it_defines(tmp_path, monkeypatch):
    (only_rmsnorm,) = served(monkeypatch, write(tmp_path, RMSNORM_FILE, "norm.py")).describe({})["variants"]
    assert only_rmsnorm["ops"] == ["rmsnorm"] and only_rmsnorm["description"] == "rmsnorm() of norm.py"
    (both,) = served(monkeypatch, write(tmp_path, SDPA_FILE + RMSNORM_FILE, "both.py")).describe({})["variants"]
    assert both["ops"] == ["attention", "rmsnorm"] and both["description"] == "attention() and rmsnorm() of both.py"
    (attention,) = served(monkeypatch, write(tmp_path, SDPA_FILE, "sdpa.py")).describe({})["variants"]
    assert "ops" not in attention  # attention alone, as every file before ops


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_the_torch_rmsnorm_example_runs_through_the_worker_core(tmp_path, monkeypatch, dtype):
    worker = served(monkeypatch, str(EXAMPLES / "rmsnorm_torch.py"))
    params, (x, w), digest = make_rmsnorm_case(tmp_path, 11, 300, dtype, "my-kernel")
    prepared = worker.prepare(params)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared
    assert prepared["facts"]["output_poison"] == "not applied: rmsnorm() allocates its output; the returned tensor is written"
    worker.fetch({"case_id": "case"})
    assert_close(read_tensor(params["outputs"][0]["path"], [11, 300], dtype), rmsnorm_reference(x, w), dtype)
    timed = tmp_path / "timed.bin"
    samples = worker.run({"case_id": "case", "measurement": QUICK, "output": str(timed)})
    assert samples["method"] == "wall-clock" and len(samples["kernel_times"]) >= 3
    assert_close(read_tensor(timed, [11, 300], dtype), rmsnorm_reference(x, w), dtype)


def test_rmsnorm_gets_the_ops_eps_and_the_chosen_config(tmp_path, monkeypatch):
    seen = tmp_path / "seen.txt"
    path = write(tmp_path, f"""
def rmsnorm(x, weight, *, eps, config):
    open({str(seen)!r}, "w").write(repr((eps, config)))
    return x
TUNABLES = {{"BLOCK": [1024, 4096]}}
""")
    worker = served(monkeypatch, path)
    params, _, _ = make_rmsnorm_case(tmp_path, 2, 8, "fp32", "my-kernel")
    worker.prepare({**params, "tunables": {"BLOCK": "4096"}})
    assert seen.read_text() == "(1e-06, {'BLOCK': 4096})"


@pytest.mark.parametrize("body, message", [
    ("return (x,)", "returned tuple, want a torch.Tensor [rows, cols]"),
    ("return x.float()", "returned torch.float32, want torch.float16 (x's dtype)"),
    ("return x[:-1]", "returned shape (2, 8), want (3, 8) ([rows, cols], as x)"),
])
def test_an_rmsnorm_result_the_host_cannot_check_is_an_error_naming_the_file(tmp_path, monkeypatch, body, message):
    path = write(tmp_path, f"def rmsnorm(x, weight, *, eps):\n    {body}\n")
    worker = served(monkeypatch, path)
    params, _, _ = make_rmsnorm_case(tmp_path, 3, 8, "fp16", "my-kernel")
    with pytest.raises((TypeError, ValueError)) as caught:
        worker.prepare(params)
    assert f"rmsnorm() in {path}" in str(caught.value) and message in str(caught.value)


def test_rmsnorm_raising_not_implemented_is_a_skip(tmp_path, monkeypatch):
    path = write(tmp_path, "def rmsnorm(x, weight, *, eps):\n    raise NotImplementedError('rows of 8 only')\n")
    worker = served(monkeypatch, path)
    params, _, _ = make_rmsnorm_case(tmp_path, 3, 16, "fp32", "my-kernel")
    (diagnostic,) = worker.prepare(params)["diagnostics"]
    assert (diagnostic["severity"], diagnostic["summary"]) == ("unsupported", "my-kernel: rows of 8 only")


@pytest.mark.parametrize("name", ["rmsnorm_torch.py", "rmsnorm_triton.py"])
def test_every_rmsnorm_example_parses_and_defines_rmsnorm(name):
    tree = ast.parse((EXAMPLES / name).read_text(), filename=name)
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    rmsnorm = functions["rmsnorm"]
    assert [a.arg for a in rmsnorm.args.args] == ["x", "weight"]
    assert "eps" in {a.arg for a in rmsnorm.args.kwonlyargs}


@pytest.mark.parametrize("dtype, rows, cols", [("fp16", 5, 300), ("fp32", 3, 5000)])
def test_the_triton_rmsnorm_example_runs_through_the_worker_core(tmp_path, monkeypatch, keep_triton_autotune,
                                                                 dtype, rows, cols):
    """On the CPU under Triton's interpreter (the worker sets it before the
    import), and on a GPU as compiled; 5000 columns take two blocks."""
    if not torch.cuda.is_available():
        monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    worker = served(monkeypatch, str(EXAMPLES / "rmsnorm_triton.py"))
    (variant,) = worker.describe({})["variants"]
    assert variant["ops"] == ["rmsnorm"]
    params, (x, w), digest = make_rmsnorm_case(tmp_path, rows, cols, dtype, "my-kernel")
    prepared = worker.prepare(params)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared
    assert prepared["facts"]["output_poison"].startswith("applied: rmsnorm(out=)")
    worker.fetch({"case_id": "case"})
    assert_close(read_tensor(params["outputs"][0]["path"], [rows, cols], dtype), rmsnorm_reference(x, w), dtype)


# ---------------------------------------------------------------- attention's backward modes

BACKWARD_FILE = """
import torch

def attention_backward(q, k, v, o, do, lse, *, causal, scale):
    return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
"""

FORWARD_BACKWARD_FILE = """
def attention_forward_backward(q, k, v, do, *, causal, scale):
    return q.clone(), q.clone(), k.clone(), v.clone()
"""


@pytest.mark.parametrize("sources, modes, functions", [
    ((SDPA_FILE,), ["fwd"], "attention()"),
    ((SDPA_FILE, BACKWARD_FILE), ["fwd", "bwd"], "attention() and attention_backward()"),
    ((BACKWARD_FILE,), ["bwd"], "attention_backward()"),
    ((SDPA_FILE, BACKWARD_FILE, FORWARD_BACKWARD_FILE), ["fwd", "bwd", "fwd+bwd"],
     "attention(), attention_backward() and attention_forward_backward()"),
    ((FORWARD_BACKWARD_FILE, RMSNORM_FILE), ["fwd+bwd"], "attention_forward_backward() and rmsnorm()"),
])
def test_the_attention_functions_a_file_defines_are_its_modes(tmp_path, monkeypatch, sources, modes, functions):
    (variant,) = served(monkeypatch, write(tmp_path, "".join(sources), "k.py")).describe({})["variants"]
    assert variant["capabilities"]["modes"] == modes
    assert variant["description"] == f"{functions} of k.py"
    assert variant.get("ops", ["attention"]) == ["attention"] + (["rmsnorm"] if RMSNORM_FILE in sources else [])


def test_the_torch_example_declares_the_forward_and_both_backward_modes(monkeypatch):
    (variant,) = served(monkeypatch, str(EXAMPLES / "torch_attention.py")).describe({})["variants"]
    assert variant["capabilities"]["modes"] == ["fwd", "bwd", "fwd+bwd"] and "ops" not in variant


@pytest.mark.parametrize("source, message", [
    ("def attention_backward(q, k, v, o, do, lse, *, causal):\n    return q, k, v\n",
     "attention_backward(q, k, v, o, do, lse, *, causal) takes no keyword 'scale': "
     "define attention_backward(q, k, v, o, do, lse, *, causal, scale)"),
    ("def attention_forward_backward(q, k, v, do, *, scale):\n    return q\n",
     "takes no keyword 'causal': define attention_forward_backward(q, k, v, do, *, causal, scale)"),
    ("def attention_backward(q, k, v, o, do, lse, *, causal, scale):\n    return q\nTUNABLES = {'block': [64]}\n",
     "takes no keyword 'config' (it defines TUNABLES)"),
    ("attention_backward = 3\n", "attention_backward is a int, not a function"),
])
def test_a_backward_function_that_breaks_the_contract_is_unavailable(tmp_path, source, message):
    path = write(tmp_path, source)
    reason = unavailable(path)
    assert reason.startswith(path) and message in reason, reason


@pytest.mark.parametrize("mode", ["bwd", "fwd+bwd"])
@pytest.mark.parametrize("s", [
    shape(1, 4, 2, 33, 47, 16, True, "fp16"),     # GQA, top-left causal, Sq < Sk
    shape(2, 2, 2, 24, 24, 32, False, "fp32"),
    shape(1, 2, 1, 20, 9, 16, True, "bf16"),      # MQA, causal, Sq > Sk
])
def test_the_torch_examples_backward_runs_through_the_worker_core(tmp_path, monkeypatch, s, mode):
    worker = served(monkeypatch, str(EXAMPLES / "torch_attention.py"))
    request, tensors, digest = make_attention_case(tmp_path, s, "my-kernel", mode, seed=2)
    prepared = worker.prepare(request)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared
    name = {"bwd": "attention_backward", "fwd+bwd": "attention_forward_backward"}[mode]
    assert prepared["facts"]["function"] == f"{name}() of torch_attention.py"
    assert prepared["facts"]["output_poison"] == (f"not applied: {name}() allocates its outputs; "
                                                  "the returned tensors are written")
    worker.fetch({"case_id": "case"})
    got = read_outputs(request)
    assert_grads_close(got, {n: tensors["want"][n] for n in got}, s.dtype)
    samples = worker.run({"case_id": "case", "measurement": QUICK})
    assert samples["method"] == "wall-clock" and len(samples["kernel_times"]) >= 3


def test_attention_backward_gets_the_hosts_o_and_lse(tmp_path, monkeypatch):
    seen = tmp_path / "seen.pt"
    path = write(tmp_path, f"""
import torch

def attention_backward(q, k, v, o, do, lse, *, causal, scale, config):
    torch.save({{"args": (q, k, v, o, do, lse), "causal": causal, "scale": scale, "config": config}}, {str(seen)!r})
    return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)

TUNABLES = {{"BLOCK": [32, 64]}}
""")
    worker = served(monkeypatch, path)
    s = shape(1, 4, 2, 10, 14, 16, True, "fp16")
    request, tensors, _ = make_attention_case(tmp_path, s, "my-kernel", "bwd")
    worker.prepare({**request, "tunables": {"BLOCK": "64"}})
    got = torch.load(seen)
    for name, tensor in zip(("q", "k", "v", "o", "do", "lse"), got["args"]):
        assert torch.equal(tensor, tensors[name]), name
    assert got["args"][5].dtype == torch.float32 and tuple(got["args"][5].shape) == (1, 4, 10)
    assert (got["causal"], got["scale"], got["config"]) == (True, 0.25, {"BLOCK": 64})


def test_setup_sees_the_mode_and_may_refuse_it(tmp_path, monkeypatch):
    path = write(tmp_path, SDPA_FILE + BACKWARD_FILE + """
def setup(shape):
    if shape.mode == "bwd" and shape.causal:
        raise NotImplementedError(f"no causal backward yet ({shape.mode})")
""")
    worker = served(monkeypatch, path)
    request, _, _ = make_attention_case(tmp_path, shape(1, 2, 2, 8, 8, 16, True, "fp32"), "my-kernel", "bwd")
    (diagnostic,) = worker.prepare(request)["diagnostics"]
    assert (diagnostic["severity"], diagnostic["summary"]) == ("unsupported", "my-kernel: no causal backward yet (bwd)")
    params, _, _ = make_case(tmp_path, shape(1, 2, 2, 8, 8, 16, True, "fp32"), "my-kernel")
    assert "diagnostics" not in worker.prepare(params)


@pytest.mark.parametrize("body, message", [
    ("return dq", "attention_backward() in {path} returned Tensor, want a tuple (dq, dk, dv)"),
    ("return dq, k", "attention_backward() in {path} returned 2 values, want 3 (dq, dk, dv)"),
    ("return dq, k, v[:, :1]", "attention_backward() in {path}'s dv returned shape (1, 1, 9, 16), want (1, 2, 9, 16)"),
    ("return dq, k.float(), v", "attention_backward() in {path}'s dk returned torch.float32, want torch.float16 (k's dtype)"),
])
def test_a_backward_result_the_host_cannot_check_is_an_error_naming_the_file(tmp_path, monkeypatch, body, message):
    path = write(tmp_path, f"def attention_backward(q, k, v, o, do, lse, *, causal, scale):\n    dq = q\n    {body}\n")
    worker = served(monkeypatch, path)
    request, _, _ = make_attention_case(tmp_path, shape(1, 2, 2, 6, 9, 16, False, "fp16"), "my-kernel", "bwd")
    with pytest.raises((TypeError, ValueError)) as caught:
        worker.prepare(request)
    assert message.format(path=path) in str(caught.value)


@pytest.mark.parametrize("s", [
    shape(1, 8, 2, 17, 29, 64, True, "bf16"),     # GQA, causal, Sq < Sk
    shape(2, 4, 1, 31, 12, 32, True, "fp16"),     # MQA, causal, Sq > Sk
    shape(1, 2, 2, 5, 5, 128, False, "fp32"),
    shape(1, 6, 3, 40, 40, 16, False, "fp32"),
])
def test_the_torch_examples_backward_matches_fp64_autograd(s):
    f = pyfile.load_kernel_file(str(EXAMPLES / "torch_attention.py"))
    gen = torch.Generator().manual_seed(7)
    dtype = DTYPES[s.dtype]
    q, k, v, do = (torch.randn(d, generator=gen).to(dtype) for d in (s.q_shape, s.kv_shape, s.kv_shape, s.q_shape))
    o, lse, dq, dk, dv = reference_backward(q, k, v, do, s.causal)
    want = {"dq": dq, "dk": dk, "dv": dv}
    got = f.attention_modes["bwd"](q, k, v, o.to(dtype), do, lse.float(), causal=s.causal, scale=s.scale)
    assert_grads_close(dict(zip(want, got)), want, s.dtype)
    got = f.attention_modes["fwd+bwd"](q, k, v, do, causal=s.causal, scale=s.scale)
    assert_grads_close(dict(zip(["o", *want], got)), {"o": o, **want}, s.dtype)


# ---------------------------------------------------------------- decode

DECODE_FILE = """
import torch

def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal, scale):
    return torch.zeros_like(q)
"""


def decode_inputs(seed=0, q_len=4, page_size=16, lengths=(37, 5, 64), dtype="fp32", heads=8, kv_heads=2,
                  head_dim=32):
    return make_decode_tensors(seed, len(lengths), heads, kv_heads, q_len, head_dim, page_size, list(lengths), dtype)


@pytest.mark.parametrize("sources, ops", [
    ((DECODE_FILE,), ["decode"]),
    ((SDPA_FILE, DECODE_FILE), ["attention", "decode"]),
    ((RMSNORM_FILE, DECODE_FILE), ["rmsnorm", "decode"]),
])
def test_a_file_that_defines_decode_offers_it(tmp_path, monkeypatch, sources, ops):
    (variant,) = served(monkeypatch, write(tmp_path, "".join(sources), "k.py")).describe({})["variants"]
    assert variant["ops"] == ops and "decode()" in variant["description"]
    assert variant["op_capabilities"] == {"decode": core.op_capabilities(
        ("fp16", "bf16", "fp32"), grouped_query_heads=True, causal=True, non_causal=True)}
    assert "masks" not in variant["op_capabilities"]["decode"]  # no window_left=, no softcap=


@pytest.mark.parametrize("signature, masks", [
    ("causal, scale, window_left=-1", ["window"]),
    ("causal, scale, softcap=0.0", ["softcap"]),
    ("causal, scale, softcap=0.0, window_left=-1", ["window", "softcap"]),
    ("causal, scale, **options", ["window", "softcap"]),
])
def test_decodes_optional_keywords_are_its_masks(tmp_path, monkeypatch, signature, masks):
    path = write(tmp_path, f"def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, {signature}):\n"
                           f"    return q\n\ndef capabilities():\n    return {{'gqa': False, 'head_dims': [64]}}\n")
    (variant,) = served(monkeypatch, path).describe({})["variants"]
    caps = variant["op_capabilities"]["decode"]
    assert caps["masks"] == masks and caps["head_dims"] == [64] and "grouped_query_heads" not in caps


@pytest.mark.parametrize("spec", [
    dict(q_len=1, page_size=16, lengths=(37, 5, 64), dtype="fp32"),
    dict(q_len=4, page_size=16, lengths=(37, 5, 64, 16), dtype="fp16"),
    dict(q_len=4, page_size=64, lengths=(100, 4, 129), dtype="fp32", causal=False),
    dict(q_len=4, page_size=16, lengths=(50, 9, 33), dtype="bf16", window_left=7),
    dict(q_len=1, page_size=64, lengths=(70, 130), dtype="fp16", window_left=3, softcap=2.0),
    dict(q_len=4, page_size=16, lengths=(40, 17), dtype="fp32", causal=False, window_left=5, softcap=0.5),
], ids=str)
def test_the_torch_decode_example_runs_through_the_worker_core(tmp_path, monkeypatch, spec):
    masking = {k: spec.pop(k) for k in ("causal", "window_left", "softcap") if k in spec}
    inputs = decode_inputs(seed=2, **spec)
    worker = served(monkeypatch, str(EXAMPLES / "decode_torch.py"))
    (variant,) = worker.describe({})["variants"]
    assert variant["ops"] == ["decode"] and variant["op_capabilities"]["decode"]["masks"] == ["window", "softcap"]
    request, digest = make_decode_case(tmp_path, "my-kernel", inputs, spec["dtype"], **masking)
    prepared = worker.prepare(request)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared
    assert prepared["facts"]["output_poison"] == ("not applied: decode() allocates its output; "
                                                  "the returned tensor is written")
    worker.fetch({"case_id": "case"})
    got = read_outputs(request)["o"]
    want = decode_reference(inputs, **masking)
    assert_decode_close(got, want, spec["dtype"])
    if masking.get("causal", True) and spec["q_len"] > 1:
        assert decode_error(got, decode_reference(inputs, **masking, align="top-left")) > 0.1
    timed = tmp_path / "timed.bin"
    samples = worker.run({"case_id": "case", "measurement": QUICK, "output": str(timed)})
    assert samples["method"] == "wall-clock" and len(samples["kernel_times"]) >= 3
    assert_decode_close(read_tensor(timed, list(inputs["q"].shape), spec["dtype"]), want, spec["dtype"])


def test_decode_gets_the_cases_keywords_and_config(tmp_path, monkeypatch):
    seen = tmp_path / "seen.txt"
    path = write(tmp_path, f"""
def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal, scale, window_left, softcap, config):
    open({str(seen)!r}, "w").write(repr((causal, scale, window_left, softcap, config, block_table.dtype)))
    return q.clone()
TUNABLES = {{"BLOCK": [32, 64]}}
""")
    worker = served(monkeypatch, path)
    inputs = decode_inputs(head_dim=64)
    request, _ = make_decode_case(tmp_path, "my-kernel", inputs, "fp32", causal=False, window_left=12, softcap=30.0)
    prepared = worker.prepare({**request, "tunables": {"BLOCK": "64"}})
    assert seen.read_text() == "(False, 0.125, 12, 30.0, {'BLOCK': 64}, torch.int32)"
    assert prepared["facts"]["keywords"] == "causal=False, scale=0.125, window_left=12, softcap=30.0"


@pytest.mark.parametrize("masking, reason", [
    (dict(window_left=16), "my-kernel: decode() takes no window_left= (window mask), and the case sets window_left 16"),
    (dict(softcap=30.0), "my-kernel: decode() takes no softcap= (softcap mask), and the case sets softcap 30"),
])
def test_a_mask_decode_does_not_take_is_a_skip(tmp_path, monkeypatch, masking, reason):
    worker = served(monkeypatch, write(tmp_path, DECODE_FILE))
    request, _ = make_decode_case(tmp_path, "my-kernel", decode_inputs(), "fp32", **masking)
    (diagnostic,) = worker.prepare(request)["diagnostics"]
    assert (diagnostic["severity"], diagnostic["summary"]) == ("unsupported", reason)
    request, _ = make_decode_case(tmp_path, "my-kernel", decode_inputs(), "fp32")  # the defaults run
    assert "diagnostics" not in worker.prepare(request)


@pytest.mark.parametrize("body, message", [
    ("return (q,)", "returned tuple, want a torch.Tensor [B, q_len, H, D]"),
    ("return q.half()", "returned torch.float16, want torch.float32 (q's dtype)"),
    ("return q.transpose(1, 2)", "returned shape (3, 8, 4, 32), want (3, 4, 8, 32) ([B, q_len, H, D], as q)"),
])
def test_a_decode_result_the_host_cannot_check_is_an_error_naming_the_file(tmp_path, monkeypatch, body, message):
    path = write(tmp_path, f"def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal, scale):\n"
                           f"    {body}\n")
    worker = served(monkeypatch, path)
    request, _ = make_decode_case(tmp_path, "my-kernel", decode_inputs(), "fp32")
    with pytest.raises((TypeError, ValueError)) as caught:
        worker.prepare(request)
    assert f"decode() in {path}" in str(caught.value) and message in str(caught.value)


def test_a_decode_out_parameter_gets_a_buffer_the_core_poisons(tmp_path, monkeypatch):
    path = write(tmp_path, "def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal, scale, out):\n"
                           "    out[1:] = 0\n    return out\n")
    worker = served(monkeypatch, path)
    inputs = decode_inputs()
    request, _ = make_decode_case(tmp_path, "my-kernel", inputs, "fp32")
    assert worker.prepare(request)["facts"]["output_poison"] == ("applied: decode(out=) writes the buffer "
                                                                 "the harness poisons")
    worker.fetch({"case_id": "case"})
    raw = read_outputs(request)["o"]
    assert bool((raw[0].contiguous().view(torch.uint8) == core.POISON_BYTE).all()) and not raw[1:].any()


def test_a_decode_without_its_keywords_is_unavailable(tmp_path):
    path = write(tmp_path, "def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal):\n    return q\n")
    reason = unavailable(path)
    assert reason.startswith(path) and ("takes no keyword 'scale': define decode(q, k_cache, v_cache, block_table, "
                                        "cache_seqlens, *, causal, scale)") in reason, reason


def test_the_decode_example_parses_and_defines_decode():
    tree = ast.parse((EXAMPLES / "decode_torch.py").read_text(), filename="decode_torch.py")
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    decode = functions["decode"]
    assert [a.arg for a in decode.args.args] == ["q", "k_cache", "v_cache", "block_table", "cache_seqlens"]
    assert [a.arg for a in decode.args.kwonlyargs] == ["causal", "scale", "window_left", "softcap"]


# ---------------------------------------------------------------- varlen

VARLEN_FILE = """
import torch

def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal, scale):
    return torch.zeros_like(q)
"""


def varlen_inputs(seed=0, q_lens=(1, 37, 20, 5), prefix=0, dtype="fp32", heads=8, kv_heads=2, head_dim=32):
    return make_varlen_tensors(seed, list(q_lens), heads, kv_heads, head_dim, dtype, prefix=prefix)


@pytest.mark.parametrize("sources, ops", [
    ((VARLEN_FILE,), ["varlen"]),
    ((SDPA_FILE, VARLEN_FILE), ["attention", "varlen"]),
    ((DECODE_FILE, VARLEN_FILE), ["decode", "varlen"]),
])
def test_a_file_that_defines_attention_varlen_offers_varlen(tmp_path, monkeypatch, sources, ops):
    (variant,) = served(monkeypatch, write(tmp_path, "".join(sources), "k.py")).describe({})["variants"]
    assert variant["ops"] == ops and "attention_varlen()" in variant["description"]
    caps = core.op_capabilities(("fp16", "bf16", "fp32"), grouped_query_heads=True, causal=True, non_causal=True)
    assert variant["op_capabilities"]["varlen"] == caps
    assert "masks" not in variant["op_capabilities"]["varlen"]  # no window_left=, window_right=, softcap=


def test_a_file_named_for_the_op_alone_does_not_serve_varlen(tmp_path):
    """The op is varlen, its function attention_varlen: a function called
    varlen is not it."""
    path = write(tmp_path, "def varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal, "
                           "scale):\n    return q\n")
    assert "defines no function" in unavailable(path)


@pytest.mark.parametrize("signature, masks", [
    ("causal, scale, window_left=-1", ["window"]),
    ("causal, scale, window_right=-1", ["window"]),
    ("causal, scale, softcap=0.0", ["softcap"]),
    ("causal, scale, softcap=0.0, window_right=-1, window_left=-1", ["window", "softcap"]),
    ("causal, scale, **options", ["window", "softcap"]),
])
def test_attention_varlens_optional_keywords_are_its_masks(tmp_path, monkeypatch, signature, masks):
    path = write(tmp_path, f"def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
                           f"max_seqlen_k, *, {signature}):\n    return q\n\n"
                           f"def capabilities():\n    return {{'gqa': False, 'head_dims': [64]}}\n")
    (variant,) = served(monkeypatch, path).describe({})["variants"]
    caps = variant["op_capabilities"]["varlen"]
    assert caps["masks"] == masks and caps["head_dims"] == [64] and "grouped_query_heads" not in caps


@pytest.mark.parametrize("spec", [
    dict(q_lens=(1, 37, 20, 5), dtype="fp32"),
    dict(q_lens=(1, 37, 20, 5), prefix=12, dtype="fp16"),
    dict(q_lens=(30, 4, 9), prefix=7, dtype="fp32", causal=False),
    dict(q_lens=(30, 4, 9), prefix=3, dtype="bf16", window_left=5),
    dict(q_lens=(30, 4, 9), dtype="fp32", causal=False, window_left=4, window_right=2, kv_heads=8),
    dict(q_lens=(1, 37, 20, 5), prefix=6, dtype="fp16", window_left=9, softcap=2.0, kv_heads=1),
], ids=str)
def test_the_torch_varlen_example_runs_through_the_worker_core(tmp_path, monkeypatch, spec):
    masking = {k: spec.pop(k) for k in ("causal", "window_left", "window_right", "softcap") if k in spec}
    inputs = varlen_inputs(seed=2, **spec)
    worker = served(monkeypatch, str(EXAMPLES / "varlen_torch.py"))
    (variant,) = worker.describe({})["variants"]
    assert variant["ops"] == ["varlen"] and variant["op_capabilities"]["varlen"]["masks"] == ["window", "softcap"]
    request, digest = make_varlen_case(tmp_path, "my-kernel", inputs, spec["dtype"], **masking)
    prepared = worker.prepare(request)
    assert prepared["loaded_sha256"] == digest and "diagnostics" not in prepared
    assert prepared["facts"]["output_poison"] == ("not applied: attention_varlen() allocates its output; "
                                                  "the returned tensor is written")
    worker.fetch({"case_id": "case"})
    got = read_outputs(request)["o"]
    want = varlen_reference(inputs, **masking)
    assert_varlen_close(got, want, spec["dtype"])
    assert decode_error(got, varlen_reference(inputs, **masking, use_cu_seqlens=False)) > 0.1
    if masking.get("causal", True) and spec.get("prefix"):
        assert decode_error(got, varlen_reference(inputs, **masking, align="top-left")) > 0.1
    timed = tmp_path / "timed.bin"
    samples = worker.run({"case_id": "case", "measurement": QUICK, "output": str(timed)})
    assert samples["method"] == "wall-clock" and len(samples["kernel_times"]) >= 3
    assert_varlen_close(read_tensor(timed, list(inputs["q"].shape), spec["dtype"]), want, spec["dtype"])


def test_attention_varlen_gets_the_cases_arguments_keywords_and_config(tmp_path, monkeypatch):
    seen = tmp_path / "seen.txt"
    path = write(tmp_path, f"""
def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, *, causal, scale,
                     window_left, window_right, softcap, config):
    open({str(seen)!r}, "w").write(repr((max_seqlen_q, max_seqlen_k, type(max_seqlen_q).__name__, causal, scale,
                                         window_left, window_right, softcap, config, cu_seqlens_q.dtype)))
    return q.clone()
TUNABLES = {{"BLOCK": [32, 64]}}
""")
    worker = served(monkeypatch, path)
    inputs = varlen_inputs(head_dim=64, prefix=5)
    request, _ = make_varlen_case(tmp_path, "my-kernel", inputs, "fp32", causal=False, window_left=12,
                                  window_right=3, softcap=30.0)
    prepared = worker.prepare({**request, "tunables": {"BLOCK": "64"}})
    assert seen.read_text() == "(37, 42, 'int', False, 0.125, 12, 3, 30.0, {'BLOCK': 64}, torch.int32)"
    facts = prepared["facts"]
    assert facts["keywords"] == "causal=False, scale=0.125, window_left=12, window_right=3, softcap=30.0"
    assert facts["max_seqlen"] == "q 37, k 42"


@pytest.mark.parametrize("masking, reason", [
    (dict(window_left=16), "my-kernel: attention_varlen() takes no window_left= (window mask), and the case sets "
                           "window_left 16"),
    (dict(window_right=2), "my-kernel: attention_varlen() takes no window_right= (window mask), and the case sets "
                           "window_right 2"),
    (dict(softcap=30.0), "my-kernel: attention_varlen() takes no softcap= (softcap mask), and the case sets "
                         "softcap 30"),
])
def test_a_mask_attention_varlen_does_not_take_is_a_skip(tmp_path, monkeypatch, masking, reason):
    worker = served(monkeypatch, write(tmp_path, VARLEN_FILE))
    request, _ = make_varlen_case(tmp_path, "my-kernel", varlen_inputs(), "fp32", **masking)
    (diagnostic,) = worker.prepare(request)["diagnostics"]
    assert (diagnostic["severity"], diagnostic["summary"]) == ("unsupported", reason)
    request, _ = make_varlen_case(tmp_path, "my-kernel", varlen_inputs(), "fp32")  # the defaults run
    assert "diagnostics" not in worker.prepare(request)


def test_a_left_window_alone_still_skips_a_right_window(tmp_path, monkeypatch):
    path = write(tmp_path, "def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, "
                           "*, causal, scale, window_left=-1):\n    return q.clone()\n")
    worker = served(monkeypatch, path)
    request, _ = make_varlen_case(tmp_path, "my-kernel", varlen_inputs(), "fp32", window_left=4)
    assert "diagnostics" not in worker.prepare(request)
    request, _ = make_varlen_case(tmp_path, "my-kernel", varlen_inputs(), "fp32", window_left=4, window_right=1)
    (diagnostic,) = worker.prepare(request)["diagnostics"]
    assert diagnostic["summary"].startswith("my-kernel: attention_varlen() takes no window_right= (window mask)")


@pytest.mark.parametrize("body, message", [
    ("return (q,)", "returned tuple, want a torch.Tensor [total_q, H, D]"),
    ("return q.half()", "returned torch.float16, want torch.float32 (q's dtype)"),
    ("return q[1:]", "returned shape (62, 8, 32), want (63, 8, 32) ([total_q, H, D], as q)"),
])
def test_an_attention_varlen_result_the_host_cannot_check_is_an_error_naming_the_file(tmp_path, monkeypatch, body,
                                                                                       message):
    path = write(tmp_path, f"def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, "
                           f"*, causal, scale):\n    {body}\n")
    worker = served(monkeypatch, path)
    request, _ = make_varlen_case(tmp_path, "my-kernel", varlen_inputs(), "fp32")
    with pytest.raises((TypeError, ValueError)) as caught:
        worker.prepare(request)
    assert f"attention_varlen() in {path}" in str(caught.value) and message in str(caught.value)


def test_an_attention_varlen_out_parameter_gets_a_buffer_the_core_poisons(tmp_path, monkeypatch):
    path = write(tmp_path, "def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, "
                           "*, causal, scale, out):\n    out[1:] = 0\n    return out\n")
    worker = served(monkeypatch, path)
    inputs = varlen_inputs()
    request, _ = make_varlen_case(tmp_path, "my-kernel", inputs, "fp32")
    assert worker.prepare(request)["facts"]["output_poison"] == ("applied: attention_varlen(out=) writes the "
                                                                 "buffer the harness poisons")
    worker.fetch({"case_id": "case"})
    raw = read_outputs(request)["o"]
    assert bool((raw[0].contiguous().view(torch.uint8) == core.POISON_BYTE).all()) and not raw[1:].any()


def test_an_attention_varlen_without_its_keywords_is_unavailable(tmp_path):
    path = write(tmp_path, "def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, "
                           "*, causal):\n    return q\n")
    reason = unavailable(path)
    assert reason.startswith(path) and ("attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
                                        "max_seqlen_k, *, causal) takes no keyword 'scale': define "
                                        "attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, "
                                        "max_seqlen_k, *, causal, scale)") in reason, reason


def test_the_varlen_example_parses_and_defines_attention_varlen():
    tree = ast.parse((EXAMPLES / "varlen_torch.py").read_text(), filename="varlen_torch.py")
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    fn = functions["attention_varlen"]
    assert [a.arg for a in fn.args.args] == ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "max_seqlen_q",
                                             "max_seqlen_k"]
    assert [a.arg for a in fn.args.kwonlyargs] == ["causal", "scale", "window_left", "window_right", "softcap"]


# ---------------------------------------------------------------- attention's masks


def masked_attention_case(tmp_path, s, **masks):
    """A prepare request for s with mask axes in its params, as the host
    sends them (text, away from their defaults)."""
    params, tensors, _ = make_case(tmp_path, s, "my-kernel", seed=4)
    params["params"] = {name: str(value) for name, value in masks.items()}
    return params, tensors


def test_attention_gets_the_mask_keywords_it_takes_when_set(tmp_path, monkeypatch):
    seen = tmp_path / "seen.txt"
    path = write(tmp_path, f"""
def attention(q, k, v, *, causal, scale, causal_align="top-left", window_left=-1, softcap=0.0):
    open({str(seen)!r}, "w").write(repr((causal, scale, causal_align, window_left, softcap)))
    return q.clone()
""")
    worker = served(monkeypatch, path)
    (variant,) = worker.describe({})["variants"]
    assert variant["capabilities"]["masks"] == ["bottom-right", "window", "softcap"]
    s = shape(1, 2, 2, 8, 24, 16, True, "fp32")
    request, _ = masked_attention_case(tmp_path, s, causal_align="bottom-right", window_left=5)
    prepared = worker.prepare(request)
    assert seen.read_text() == "(True, 0.25, 'bottom-right', 5, 0.0)"
    assert prepared["facts"]["keywords"] == "causal=True, scale=0.25, causal_align=bottom-right, window_left=5"
    request, _ = masked_attention_case(tmp_path, s)  # the defaults: not passed
    assert "keywords" not in worker.prepare(request)["facts"]
    assert seen.read_text() == "(True, 0.25, 'top-left', -1, 0.0)"


@pytest.mark.parametrize("masks, reason", [
    (dict(causal_align="bottom-right"), "my-kernel: attention() takes no causal_align= (bottom-right mask), and the "
                                        "case sets causal_align bottom-right"),
    (dict(window_right=3), "my-kernel: attention() takes no window_right= (window mask), and the case sets "
                           "window_right 3"),
    (dict(softcap=30), "my-kernel: attention() takes no softcap= (softcap mask), and the case sets softcap 30"),
])
def test_a_mask_attention_does_not_take_is_a_skip(tmp_path, monkeypatch, masks, reason):
    worker = served(monkeypatch, write(tmp_path, SDPA_FILE))
    (variant,) = worker.describe({})["variants"]
    assert "masks" not in variant["capabilities"]
    request, _ = masked_attention_case(tmp_path, shape(1, 2, 2, 8, 24, 16, True, "fp32"), **masks)
    (diagnostic,) = worker.prepare(request)["diagnostics"]
    assert (diagnostic["severity"], diagnostic["summary"]) == ("unsupported", reason)
    # Bottom-right where it moves nothing (Sq = Sk) is top-left: it runs.
    request, _ = masked_attention_case(tmp_path, shape(1, 2, 2, 8, 8, 16, True, "fp32"), causal_align="bottom-right")
    assert "diagnostics" not in worker.prepare(request)
