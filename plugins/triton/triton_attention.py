"""FlashCore bench's own FlashAttention forward kernel, written in Triton.

One program computes a BLOCK_M × head_dim tile of the output for one
(batch, head): it walks the key/value blocks with an online softmax
(running max m, running sum l, rescaled accumulator), in base 2 with the
softmax scale folded into log2(e). Key blocks split in two loops:

1. blocks every row of the tile sees in full: no masks at all;
2. the rest (the causal diagonal, the ragged end of seq_k): masked.

Causal masking is top-left (query row i sees key rows j <= i), so every row
sees key 0 and the running max is finite after the first block. Grouped-query
heads read key/value head h // (heads / kv_heads). Rows past seq_q are
computed from zero queries and never stored.

With ``lse`` given, the kernel also stores each row's log-sum-exp (natural
log, fp32 [batch, heads, seq_q]), which the backward pass
(triton_attention_bwd.py) recomputes the softmax from. STORE_LSE is a
constexpr, so the forward-only kernel compiles without that store.

``attention`` launches the autotuned kernel; ``attention(..., tuned=False)``
launches one small fixed configuration, for Triton's CPU interpreter;
``attention(..., config=...)`` launches one chosen configuration (the
backend's tunables, see fixed_config).
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634

# (BLOCK_M, BLOCK_N, num_warps, num_stages): tiles that suit Hopper and
# Ampere at head dims 64 and 128. prune_by_shared_memory drops the ones
# whose K/V pipeline would not fit before they are compiled.
_TUNING_SPACE = [
    (128, 64, 4, 3),
    (128, 64, 8, 3),
    (128, 128, 8, 3),
    (128, 32, 4, 4),
    (64, 64, 4, 3),
    (64, 32, 4, 4),
]
# A conservative bound for the estimate below: Hopper has 227 KB per block,
# Ampere 163 KB; Triton's real use is about half the estimate.
_SHARED_MEMORY_BUDGET = 200 << 10
# The interpreter's time goes by the steps it interprets (programs, and key
# blocks in each), NumPy doing a tile's elements at once: 64 x 64 tiles
# ran the default suite's B1 H2 S128 D64 in a quarter of 32 x 32's time and
# its B1 H4/2 S96/160 causal in two thirds, on two cores, while the tests'
# odd lengths still span several tiles with ragged ends.
INTERPRETER_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64}

# The backend's tunables: the launch parameters the kernel is compiled for.
# "auto" everywhere is the autotuner over _TUNING_SPACE (the default); a
# number fixes that parameter, and a configuration with any number fixed is
# launched as is, with FALLBACK filling the parameters left on "auto".
TUNABLES = {
    "BLOCK_M": ("auto", "16", "32", "64", "128"),
    "BLOCK_N": ("auto", "16", "32", "64", "128"),
    "num_warps": ("auto", "2", "4", "8"),
    "num_stages": ("auto", "1", "2", "3", "4", "5"),
}
FALLBACK = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 3}


@triton.jit
def _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d, start, end, seq_k,
            qk_scale, MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr,
            PRECISION: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(start, end, BLOCK_N):
        cols = start_n + offs_n
        k_ptrs = k_base + cols[None, :] * stride_kn + offs_d[:, None]  # Kᵀ block, [D, BLOCK_N]
        v_ptrs = v_base + cols[:, None] * stride_vn + offs_d[None, :]  # [BLOCK_N, D]
        if MASKED:
            k = tl.load(k_ptrs, mask=cols[None, :] < seq_k, other=0.0)
            v = tl.load(v_ptrs, mask=cols[:, None] < seq_k, other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        s = tl.dot(q, k, input_precision=PRECISION) * qk_scale
        if MASKED:
            keep = cols[None, :] < seq_k
            if CAUSAL:
                keep = keep & (offs_m[:, None] >= cols[None, :])
            s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc, input_precision=PRECISION)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def _attention_forward(Q, K, V, O, LSE, qk_scale,
                       stride_qb, stride_qh, stride_qm,
                       stride_kb, stride_kh, stride_kn,
                       stride_vb, stride_vh, stride_vn,
                       stride_ob, stride_oh, stride_om,
                       heads, group, seq_q, seq_k,
                       HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, PRECISION: tl.constexpr,
                       STORE_LSE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_bh = tl.program_id(1)
    batch = pid_bh // heads
    head = pid_bh % heads
    kv_head = head // group
    m0 = pid_m * BLOCK_M
    offs_m = m0 + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)

    q_ptrs = Q + batch * stride_qb + head * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :]
    q = tl.load(q_ptrs, mask=offs_m[:, None] < seq_q, other=0.0)
    k_base = K + batch * stride_kb + kv_head * stride_kh
    v_base = V + batch * stride_vb + kv_head * stride_vh

    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    whole_blocks_end = seq_k // BLOCK_N * BLOCK_N
    if CAUSAL:
        # A key block is seen in full by every row of the tile when it ends
        # at or before row m0; the tile's last row sees keys below m0+BLOCK_M.
        unmasked_end = tl.minimum((m0 + 1) // BLOCK_N * BLOCK_N, whole_blocks_end)
        end = tl.minimum(seq_k, m0 + BLOCK_M)
    else:
        unmasked_end = whole_blocks_end
        end = seq_k
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d,
                            0, unmasked_end, seq_k, qk_scale, False, CAUSAL, BLOCK_N, PRECISION)
    acc, l_i, m_i = _attend(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, offs_m, offs_d,
                            unmasked_end, end, seq_k, qk_scale, True, CAUSAL, BLOCK_N, PRECISION)

    out = acc / l_i[:, None]
    o_ptrs = O + batch * stride_ob + head * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :]
    tl.store(o_ptrs, out.to(O.dtype.element_ty), mask=offs_m[:, None] < seq_q)
    if STORE_LSE:
        # m_i and the scores are in base 2 (scale·log2 e folded in): the
        # natural log-sum-exp is ln 2 · (m + log2 l). LSE is contiguous.
        lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
        tl.store(LSE + pid_bh * seq_q + offs_m, lse, mask=offs_m < seq_q)


def prune_by_shared_memory(configs, named_args, **kwargs):
    """Keeps the configs whose Q tile plus num_stages K and V tiles fit the
    budget, so no time goes into compiling tiles that cannot launch."""
    head_dim = kwargs.get("HEAD_DIM", named_args.get("HEAD_DIM"))
    element = named_args["Q"].element_size()

    def estimate(c):
        return (c.kwargs["BLOCK_M"] + 2 * c.num_stages * c.kwargs["BLOCK_N"]) * head_dim * element

    fitting = [c for c in configs if estimate(c) <= _SHARED_MEMORY_BUDGET]
    return fitting or [min(configs, key=estimate)]


_attention_forward_tuned = triton.autotune(
    configs=[triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s) for m, n, w, s in _TUNING_SPACE],
    key=["seq_q", "seq_k", "HEAD_DIM", "CAUSAL", "STORE_LSE"],  # the autotuner adds the tensors' dtypes
    prune_configs_by={"early_config_prune": prune_by_shared_memory},
)(_attention_forward)


def attention(q, k, v, out, causal, tuned=True, config=None, lse=None):
    """Writes softmax(Q·Kᵀ/√D)·V into out. All tensors are contiguous
    [batch, heads, seq, head_dim]; k and v may have fewer heads (GQA).
    config, a string as chosen_config() returns, runs that one config
    untuned (to reproduce a tuned run, e.g. under a profiler). lse, a
    contiguous fp32 [batch, heads, seq_q] tensor, receives each row's
    natural log-sum-exp of the scaled scores (for the backward pass)."""
    batch, heads, seq_q, head_dim = q.shape
    kv_heads, seq_k = k.shape[1], k.shape[2]
    grid = lambda meta: (triton.cdiv(seq_q, meta["BLOCK_M"]), batch * heads)  # noqa: E731
    store_lse = lse is not None
    if store_lse and (not lse.is_floating_point() or lse.element_size() != 4 or not lse.is_contiguous()
                      or tuple(lse.shape) != (batch, heads, seq_q)):
        raise ValueError(f"lse must be a contiguous fp32 {(batch, heads, seq_q)} tensor, "
                         f"got {lse.dtype} {tuple(lse.shape)}")
    # Without lse the pointer is never read (STORE_LSE is a constexpr): out stands in.
    args = (q, k, v, out, lse if store_lse else out, head_dim ** -0.5 * LOG2E,
            q.stride(0), q.stride(1), q.stride(2),
            k.stride(0), k.stride(1), k.stride(2),
            v.stride(0), v.stride(1), v.stride(2),
            out.stride(0), out.stride(1), out.stride(2),
            heads, heads // kv_heads, seq_q, seq_k)
    # fp32 inputs would otherwise be multiplied in TF32 (10-bit mantissas).
    # On a GPU they use three TF32 products (about fp32 accuracy on tensor
    # cores; exact fp32 FMA tiles take minutes to compile and run slowly);
    # the interpreter computes in fp32 anyway.
    precision = "tf32" if q.element_size() != 4 else ("tf32x3" if tuned else "ieee")
    constants = {"HEAD_DIM": head_dim, "CAUSAL": causal, "PRECISION": precision, "STORE_LSE": store_lse}
    if config:
        _attention_forward[grid](*args, **constants, **parse_config(config))
    elif tuned:
        _attention_forward_tuned[grid](*args, **constants)
    else:
        _attention_forward[grid](*args, **constants, **INTERPRETER_CONFIG)
    return out


def fixed_config(tunables):
    """The launch options the tunables fix, as a config string for
    attention(config=...), or None when every one is "auto" (autotuned)."""
    chosen = {name: tunables.get(name, "auto") for name in TUNABLES}
    if all(value == "auto" for value in chosen.values()):
        return None
    values = {name: FALLBACK[name] if value == "auto" else int(value) for name, value in chosen.items()}
    return (f"BLOCK_M={values['BLOCK_M']} BLOCK_N={values['BLOCK_N']} "
            f"warps={values['num_warps']} stages={values['num_stages']}")


def parse_config(text):
    """The launch options of a config string "BLOCK_M=64 BLOCK_N=64 warps=4
    stages=3" (the form chosen_config() returns)."""
    names = {"BLOCK_M": "BLOCK_M", "BLOCK_N": "BLOCK_N", "warps": "num_warps", "stages": "num_stages"}
    pairs = dict(item.split("=", 1) for item in text.split())
    return {names[key]: int(value) for key, value in pairs.items()}


def chosen_config():
    """The autotuner's last choice, as "BLOCK_M=128 BLOCK_N=64 warps=4 stages=3"."""
    config = getattr(_attention_forward_tuned, "best_config", None)
    if config is None:
        return ""
    return (f"BLOCK_M={config.kwargs['BLOCK_M']} BLOCK_N={config.kwargs['BLOCK_N']} "
            f"warps={config.num_warps} stages={config.num_stages}")
