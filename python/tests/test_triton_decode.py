"""The triton backend's split-KV paged decode kernel (triton_decode.py) and
its op "decode", under Triton's CPU interpreter (or on a GPU where there is
one), against a float64 reference written here.

The caches are built as the core builds them: pages scattered through the
pool by a seeded permutation, block-table entries past each sequence's last
page pointing at POISON pages, and the slots of the last page past its
length poisoned too (keys of magnitude 8 with random signs, values 100). A
kernel that reads a key it should not, reads pages in order or aligns
causal masking top-left is far off the reference; the tests at the end
show that such kernels fail the comparison."""

import dataclasses
import math

import pytest
import torch

import flashcore_worker as core
from helpers import DTYPES, make_op_case, read_tensor

triton_backend = pytest.importorskip("triton_backend")
import triton_decode  # noqa: E402  (after triton_backend set TRITON_INTERPRET)

DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")
if DEVICE.type == "cpu":
    try:
        triton_backend.check_interpreter_numpy()
    except RuntimeError as why:
        pytest.skip(str(why), allow_module_level=True)

# Absolute error allowed, relative to the reference's largest magnitude (at
# least 1): fp32 is computed in fp32 (an fp16 or TF32 shortcut would miss by
# about 1e-3), fp16 rounds its inputs, P and the output.
TOLERANCE = {"fp32": 2e-5, "fp16": 1e-2}
POISON_KEY = 8.0
POISON_VALUE = 100.0


@dataclasses.dataclass(frozen=True)
class Case:
    batch: int
    heads: int
    kv_heads: int
    q_len: int
    head_dim: int
    page_size: int
    lens: tuple  # cache_seqlens, one per sequence
    dtype: str = "fp16"
    causal: bool = True
    window_left: int = -1
    softcap: float = 0.0
    block_n: int = None  # None: the kernel's default

    def __str__(self):
        heads = f"H{self.heads}" if self.heads == self.kv_heads else f"H{self.heads}/{self.kv_heads}"
        text = (f"B{self.batch} {heads} T{self.q_len} D{self.head_dim} P{self.page_size} "
                f"L{','.join(map(str, self.lens))} {self.dtype}")
        text += " causal" if self.causal else ""
        text += f" W{self.window_left}" if self.window_left >= 0 else ""
        text += f" cap{self.softcap:g}" if self.softcap else ""
        return text + (f" N{self.block_n}" if self.block_n else "")

    @property
    def max_pages(self):
        return math.ceil(max(self.lens) / self.page_size)


def build(case, seed=0):
    """q, k_cache, v_cache, block_table and cache_seqlens of the case, on
    DEVICE: the live pages at places in the pool a seeded permutation
    picks, every other table entry a poison page, the tail of each last
    page poisoned."""
    gen = torch.Generator().manual_seed(seed)
    dtype = DTYPES[case.dtype]
    kv = (case.page_size, case.kv_heads, case.head_dim)
    live = [math.ceil(n / case.page_size) for n in case.lens]
    spare = 3  # poison pages, shared by every entry past a sequence's end
    num_pages = sum(live) + spare
    order = torch.randperm(num_pages, generator=gen)
    k_cache = torch.randn(num_pages, *kv, generator=gen)
    v_cache = torch.randn(num_pages, *kv, generator=gen)

    def poison(index, first_slot=0):
        signs = torch.randint(0, 2, (kv[0] - first_slot, *kv[1:]), generator=gen) * 2 - 1
        k_cache[index, first_slot:] = POISON_KEY * signs
        v_cache[index, first_slot:] = POISON_VALUE

    poisoned = order[sum(live):]
    for index in poisoned:
        poison(index)
    table = poisoned[torch.randint(0, spare, (case.batch, case.max_pages), generator=gen)]
    taken = 0
    for b, (n, pages) in enumerate(zip(case.lens, live)):
        table[b, :pages] = order[taken:taken + pages]
        taken += pages
        if n % case.page_size:
            poison(table[b, pages - 1], n % case.page_size)
    q = torch.randn(case.batch, case.q_len, case.heads, case.head_dim, generator=gen)
    tensors = (q.to(dtype), k_cache.to(dtype), v_cache.to(dtype), table.to(torch.int32),
               torch.tensor(case.lens, dtype=torch.int32))
    return tuple(t.to(DEVICE) for t in tensors)


def reference(q, k_cache, v_cache, block_table, cache_seqlens, causal, window_left=-1, softcap=0.0,
              top_left=False):
    """The decode op in float64, one sequence at a time: gathers the L keys
    and values of sequence b page by page through the block table, then
    softmax(scale·q·kᵀ, capped and masked)·v per query head. Causal masking
    is bottom-right (query i at position L − q_len + i sees keys up to its
    own), or top-left (query i sees keys 0..i) for the tests that show the
    comparison catches a kernel that aligns it so."""
    q, k_cache, v_cache = (t.detach().cpu().double() for t in (q, k_cache, v_cache))
    block_table, cache_seqlens = block_table.cpu().long(), cache_seqlens.cpu().long()
    batch, q_len, heads, head_dim = q.shape
    page_size, kv_heads = k_cache.shape[1], k_cache.shape[2]
    group = heads // kv_heads
    out = torch.empty_like(q)
    for b in range(batch):
        length = int(cache_seqlens[b])
        k = torch.cat([k_cache[block_table[b, j // page_size], j % page_size][None] for j in range(length)])
        v = torch.cat([v_cache[block_table[b, j // page_size], j % page_size][None] for j in range(length)])
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)  # [L, H, D]
        scores = torch.einsum("ihd,jhd->hij", q[b], k) / math.sqrt(head_dim)
        if softcap > 0:
            scores = softcap * torch.tanh(scores / softcap)
        keys = torch.arange(length)[None, :]
        position = torch.arange(q_len)[:, None] + (0 if top_left else length - q_len)
        seen = torch.ones(q_len, length, dtype=torch.bool)
        if causal:
            seen &= keys <= position
        if window_left >= 0:
            seen &= keys >= position - window_left
        scores = scores.masked_fill(~seen, float("-inf"))
        out[b] = torch.einsum("hij,jhd->ihd", torch.softmax(scores, -1), v)
    return out


def run_kernel(case, tensors, **launch):
    """The kernel's output (into a NaN-filled buffer, so an unwritten element
    shows) and the config it launched."""
    q = tensors[0]
    out = torch.full_like(q, float("nan"))
    config = triton_decode.decode(*tensors, out, causal=case.causal, scale=case.head_dim ** -0.5,
                                  window_left=case.window_left, softcap=case.softcap, block_n=case.block_n, **launch)
    return out, config


def error(got, want):
    """The largest absolute error over the reference's largest magnitude (at least 1)."""
    got = got.detach().cpu().double()
    assert not torch.isnan(got).any(), "the output has NaN (an element left unwritten, or 0/0)"
    return (got - want).abs().max().item() / max(1.0, want.abs().max().item())


def assert_close(got, want, dtype, what=""):
    err = error(got, want)
    assert err <= TOLERANCE[dtype], f"{what}: error {err:.3g} > {TOLERANCE[dtype]}"


def want_of(case, tensors, **kwargs):
    return reference(*tensors, case.causal, case.window_left, case.softcap, **kwargs)


CASES = [
    # q_len 1 and 4, causal and not, GQA 4:1 and 1:1; lengths below a page,
    # a whole number of pages and ragged.
    Case(3, 8, 2, 1, 64, 16, (5, 64, 150)),
    Case(3, 8, 2, 4, 64, 16, (5, 64, 150)),
    Case(3, 8, 2, 4, 64, 16, (5, 64, 150), causal=False),
    Case(2, 4, 4, 1, 64, 16, (33, 96), causal=False),
    Case(2, 4, 4, 4, 64, 16, (33, 96)),
    # Pages of 64 (larger than the interpreter's BLOCK_N 32), fp32.
    Case(3, 8, 2, 4, 64, 64, (7, 128, 200), dtype="fp32"),
    Case(3, 8, 2, 1, 64, 64, (7, 128, 200), dtype="fp32", causal=False),
    Case(2, 4, 4, 4, 128, 64, (64, 190)),
    # A page smaller than BLOCK_N (four pages per block), one much larger
    # (eight blocks per page), one that is no power of two.
    Case(2, 8, 2, 4, 64, 8, (5, 77), block_n=32),
    Case(2, 8, 2, 4, 64, 128, (100, 300), block_n=16, dtype="fp32"),
    Case(2, 4, 2, 2, 32, 24, (24, 61), block_n=16),
    # Sliding windows (a row sees W + 1 keys ending at its own), with and
    # without causal masking, and a window longer than the context.
    Case(3, 8, 2, 4, 64, 16, (5, 64, 150), window_left=20),
    Case(2, 8, 2, 4, 64, 16, (40, 150), window_left=0, dtype="fp32"),
    Case(2, 8, 2, 4, 64, 16, (40, 150), window_left=33, causal=False),
    Case(2, 4, 4, 1, 64, 16, (40, 150), window_left=500, dtype="fp32"),
    # Softcap, alone and with a window.
    Case(3, 8, 2, 4, 64, 16, (5, 64, 150), softcap=5.0),
    Case(2, 8, 2, 1, 64, 64, (70, 150), softcap=2.0, window_left=45, dtype="fp32"),
    # q_len 16 with MQA: 128 rows, one tile of the most rows (and, at 8 splits of
    # 16 keys, a last split [80, 90) that rows 0-5 see nothing of); 256 rows: two tiles.
    Case(1, 8, 1, 16, 64, 16, (90,), dtype="fp32", block_n=16),
    Case(1, 32, 2, 16, 16, 16, (70,)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_decode_matches_the_float64_reference_whatever_the_splits(case):
    """One split (no combine), a few, more splits than the short sequences
    have blocks (empty splits), and the heuristic's choice: all within the
    dtype's tolerance of the reference and of each other."""
    tensors = build(case)
    want = want_of(case, tensors)
    outputs = {}
    for num_splits in (1, 3, 8, None):
        out, config = run_kernel(case, tensors, num_splits=num_splits)
        assert num_splits is None or config["num_splits"] == num_splits
        assert_close(out, want, case.dtype, f"{num_splits} splits")
        outputs[config["num_splits"]] = out
    one = outputs[1]
    for count, out in outputs.items():
        # The splits change the order of the sums alone.
        assert error(out, one.cpu().double()) <= TOLERANCE[case.dtype] / 2, f"{count} splits against 1"


def test_the_reference_matches_torch_attention_on_gathered_keys():
    """The reference against PyTorch's SDPA on keys gathered another way
    (the pages' rows concatenated, then cut at L), bottom-right causal as
    an explicit mask."""
    case = Case(2, 8, 2, 3, 32, 16, (21, 40), dtype="fp32")
    q, k_cache, v_cache, table, lens = build(case, seed=4)
    want = reference(q, k_cache, v_cache, table, lens, True)
    for b, length in enumerate(case.lens):
        pages = table[b, :math.ceil(length / case.page_size)].long().cpu()
        k = k_cache.cpu()[pages].flatten(0, 1)[:length].double().transpose(0, 1)  # [KVH, L, D]
        v = v_cache.cpu()[pages].flatten(0, 1)[:length].double().transpose(0, 1)
        rows = torch.arange(case.q_len)[:, None] + length - case.q_len
        mask = torch.arange(length)[None, :] <= rows
        got = torch.nn.functional.scaled_dot_product_attention(
            q.cpu()[b].double().transpose(0, 1), k, v, attn_mask=mask, enable_gqa=True)
        torch.testing.assert_close(got.transpose(0, 1), want[b], rtol=1e-10, atol=1e-10)


def test_a_window_of_zero_returns_each_rows_own_value():
    """Causal with window_left 0: each query sees only its own key, so the
    output is that key's value row, whatever the scores."""
    case = Case(2, 8, 2, 4, 64, 16, (9, 50), dtype="fp32", window_left=0)
    tensors = build(case)
    out, _ = run_kernel(case, tensors, num_splits=3)
    _, _, v_cache, table, lens = (t.cpu() for t in tensors)
    for b, length in enumerate(case.lens):
        for i in range(case.q_len):
            j = length - case.q_len + i
            own = v_cache[table[b, j // case.page_size].long(), j % case.page_size]  # [KVH, D]
            assert torch.equal(out.cpu()[b, i], own.repeat_interleave(case.heads // case.kv_heads, 0))


def test_a_split_a_row_sees_nothing_of_is_zero_with_lse_minus_infinity():
    """Causal q_len 16 over 90 keys in 8 splits of 16: the last split holds
    keys 80..89, which rows 0-5 (positions 74-79) do not see. The split
    stores a zero partial output and lse −inf for them, no NaN anywhere, and
    the combine gives them no weight."""
    case = Case(1, 8, 1, 16, 64, 16, (90,), dtype="fp32", block_n=16)
    tensors = build(case)
    buffers = tuple(torch.full_like(t, float("nan")) for t in triton_decode.workspace(tensors[0], 8))
    out, config = run_kernel(case, tensors, num_splits=8, workspace_buffers=buffers)
    assert config["num_splits"] == 8
    o_part, lse_part = (t.cpu() for t in buffers)
    assert not o_part.isnan().any() and not lse_part.isnan().any()
    assert (lse_part[0, :6, :, 5] == float("-inf")).all() and (o_part[0, :6, :, 5] == 0).all()
    assert (lse_part[0, 6:, :, 5] > float("-inf")).all()
    assert (lse_part[0, :, :, 6:] == float("-inf")).all()  # splits past the keys: empty
    assert_close(out, want_of(case, tensors), case.dtype)


def test_masks_change_the_result():
    """Window, softcap and causal each change the output at this case, so
    the cases above test them rather than a no-op."""
    case = Case(2, 8, 2, 4, 64, 16, (40, 150), dtype="fp32", causal=False)
    tensors = build(case)
    plain = reference(*tensors, False)
    for variant in (dict(causal=True), dict(window_left=20), dict(softcap=1.0)):
        changed = dataclasses.replace(case, **variant)
        assert error(plain, want_of(changed, tensors)) > 100 * TOLERANCE["fp32"], variant
        assert_close(run_kernel(changed, tensors)[0], want_of(changed, tensors), "fp32", str(variant))


# ---------------------------------------------------------------- the check has teeth


def test_reading_pages_in_order_fails():
    """A kernel that ignores the block table (page b·max_pages + j //
    page_size, as if the pool were in order) reads the wrong keys."""
    case = Case(2, 8, 2, 4, 64, 16, (40, 150))
    tensors = build(case)
    in_order = torch.arange(case.batch * case.max_pages, dtype=torch.int32).view(case.batch, -1)
    in_order = in_order.remainder(tensors[1].shape[0]).to(DEVICE)
    wrong, _ = run_kernel(case, (*tensors[:3], in_order, tensors[4]))
    with pytest.raises(AssertionError):
        assert_close(wrong, want_of(case, tensors), case.dtype)


def test_reading_past_the_length_fails():
    """A kernel that reads the last page whole (or one page too many) sees
    the poison: lengths rounded up to the next page."""
    case = Case(2, 8, 2, 1, 64, 16, (40, 150), dtype="fp32", causal=False)
    tensors = build(case)
    rounded = torch.tensor([math.ceil((n + 1) / 16) * 16 for n in case.lens], dtype=torch.int32, device=DEVICE)
    wrong, _ = run_kernel(case, (*tensors[:4], rounded))
    with pytest.raises(AssertionError):
        assert_close(wrong, want_of(case, tensors), case.dtype)


def test_top_left_causal_alignment_fails():
    """A kernel aligned top-left (query i sees keys 0..i) computes the
    top-left reference; that misses the bottom-right one by far more than
    the tolerance, and the kernel matches the bottom-right one."""
    case = Case(2, 8, 2, 4, 64, 16, (40, 150))
    tensors = build(case)
    top_left = want_of(case, tensors, top_left=True)
    with pytest.raises(AssertionError):
        assert_close(top_left, want_of(case, tensors), case.dtype)
    assert_close(run_kernel(case, tensors)[0], want_of(case, tensors), case.dtype)


# ---------------------------------------------------------------- the heuristic


@pytest.mark.parametrize("programs, visible, block_n, sms, want", [
    (256, 4096, 64, 132, 2),      # batch 32 × 8 kv heads: two programs per SM's worth, nearly
    (512, 4096, 64, 132, 1),      # a large batch fills the GPU alone: no combine
    (8, 4096, 64, 132, 16),       # batch 1: limited by splits of 4 blocks (4096 / 256)
    (8, 65536, 64, 132, 33),      # long context: 2 × 132 / 8 programs
    (1, 1 << 20, 64, 132, 64),    # capped at MAX_SPLITS
    (4, 100, 64, 132, 1),         # shorter than one split's minimum
])
def test_num_splits_heuristic(programs, visible, block_n, sms, want):
    assert triton_decode.pick_num_splits(programs, visible, block_n, sms) == want


def test_the_launcher_bounds_splits_by_the_window():
    """With a window, a row sees window_left + q_len keys at most: that, not
    the table's reach, bounds the splits."""
    case = Case(1, 4, 1, 1, 64, 16, (1000,), window_left=63, block_n=16)
    tensors = build(case)
    want = want_of(case, tensors)
    out, config = run_kernel(case, tensors)
    sms = triton_decode.multiprocessors(DEVICE)
    assert config["num_splits"] == triton_decode.pick_num_splits(1, 64, 16, sms) == 1
    assert_close(out, want, case.dtype)
    no_window = dataclasses.replace(case, window_left=-1)
    _, config = run_kernel(no_window, tensors)
    assert config["num_splits"] == triton_decode.pick_num_splits(1, case.max_pages * 16, 16, sms) > 1


# ---------------------------------------------------------------- the backend


def decode_params(case):
    return {"batch": str(case.batch), "heads": str(case.heads), "kv_heads": str(case.kv_heads),
            "q_len": str(case.q_len), "head_dim": str(case.head_dim), "page_size": str(case.page_size),
            "context_len": str(max(case.lens)), "dtype": case.dtype, "causal": str(case.causal).lower(),
            "window_left": str(case.window_left), "softcap": f"{case.softcap:g}",
            "max_pages": str(case.max_pages)}


def op_case(case, seed=0):
    """A decode OpCase as the worker builds it, and the reference."""
    tensors = build(case, seed)
    named = dict(zip(triton_backend.DECODE_INPUTS, tensors))
    dims = tuple(tensors[0].shape)
    outputs = [core.TensorFile("o", "/nonexistent/o.bin", case.dtype, dims)]
    opcase = core.OpCase("case", "triton", "decode", decode_params(case), {}, DEVICE, named, outputs)
    return opcase, want_of(case, tensors)


@pytest.mark.parametrize("case", [CASES[1], CASES[5], CASES[16]], ids=str)
def test_prepare_op_runs_decode(case):
    opcase, want = op_case(case)
    kernel = triton_backend.Backend(DEVICE).prepare_op(opcase)
    for buffer in core.as_tensors(kernel.output):
        core.poison(buffer)
    (got,) = core.check_outputs(kernel.run(), opcase.outputs, "decode")
    assert_close(got, want, case.dtype)
    assert_close(kernel.run(), want, case.dtype, "second call")
    facts = kernel.facts
    assert facts["op"] == "decode" and facts["function"] == "triton_decode.decode"
    assert facts["config"].startswith(f"splits={facts['num_splits']} BLOCK_M=")
    assert ("_decode_combine" in facts["kernels"]) == (int(facts["num_splits"]) > 1)
    if DEVICE.type == "cpu":
        assert facts["interpreter"] == "true" and facts["block_n"] == str(triton_decode.INTERPRETER_BLOCK_N)


def test_the_variant_lists_decode_with_its_own_capabilities():
    backend = triton_backend.Backend(DEVICE)
    for interpreted in (True, False):
        backend.interpreted = interpreted
        (variant,) = backend.variants()
        assert variant["ops"][:2] == ["attention", "decode"]
        caps = variant["op_capabilities"]["decode"]
        assert caps["head_dims"] == [64, 128] and caps["masks"] == ["window", "softcap"]
        assert caps["grouped_query_heads"] and caps["causal"] and caps["non_causal"]
        assert ("bf16" in caps["dtypes"]) == (not interpreted) and caps["needs_gpu"] == (not interpreted)
        assert (caps["max_elements"] > 0) == interpreted
        # attention's capabilities and tunables stay attention's
        assert variant["capabilities"]["modes"] == ["fwd", "bwd", "fwd+bwd"]
        assert all(t["ops"] == ["attention"] for t in variant.get("tunables", ()))
        assert "decode" in variant["description"]


@pytest.mark.skipif("int32" not in core.DTYPE_SIZES, reason="needs the worker core that reads int32 tensors")
def test_worker_round_trip_of_a_decode_case(tmp_path):
    case = CASES[3]
    tensors = build(case, seed=2)
    want = want_of(case, tensors)
    named = {name: t.cpu() for name, t in zip(triton_backend.DECODE_INPUTS, tensors)}
    request, digest = make_op_case(tmp_path, "decode", "triton", named,
                                   [("o", list(want.shape), case.dtype)], decode_params(case))
    worker = core.Worker(triton_backend.Backend(DEVICE), DEVICE)
    prepared = worker.handle("prepare", request)
    assert prepared["loaded_sha256"] == digest
    assert prepared["facts"]["op"] == "decode"
    worker.handle("fetch", {"case_id": "case"})
    (f,) = request["outputs"]
    assert_close(read_tensor(f["path"], f["dims"], f["dtype"]), want, case.dtype)
