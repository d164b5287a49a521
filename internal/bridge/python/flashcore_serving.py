"""The serving ops' cases as every Python backend reads them: ``Decode``
(a paged KV cache, FlashAttention's flash_attn_with_kvcache layout;
ops/decode in Go) and ``Varlen`` (sequences packed end to end,
flash_attn_varlen_func's layout; ops/varlen in Go), parsed once from an
OpCase's params and named inputs, and ``gather_pages``, the one gather of
a decode case's pages into dense K and V for the backends whose kernels
read no pages.

Masking follows FlashAttention: causal is bottom-right aligned, and
``window_size`` is FlashAttention's (left, right) pair, -1 unbounded.
"""

import dataclasses
import functools
import math

import torch
import torch.nn.functional as F

# The decode op's inputs, in its order (ops/decode in Go).
DECODE_INPUTS = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens")


@dataclasses.dataclass(frozen=True)
class Decode:
    """A decode case's tensors and masking: q [B, q_len, H, D], k_cache and
    v_cache [num_pages, page_size, KVH, D], block_table [B, max_pages] and
    cache_seqlens [B] (int32); causal is bottom-right aligned (query i of a
    sequence of length L sits at position L - q_len + i), window_left -1
    is no window, softcap 0 is none."""

    q: object
    k_cache: object
    v_cache: object
    block_table: object
    cache_seqlens: object
    causal: bool = True
    window_left: int = -1
    softcap: float = 0.0

    @classmethod
    def of(cls, case):
        p = case.params
        window_left, softcap = int(p.get("window_left", "-1")), float(p.get("softcap", "0"))
        if window_left < -1 or softcap < 0:
            raise ValueError(f"decode: window_left {window_left} (want -1 or more), "
                             f"softcap {softcap:g} (want 0 or more)")
        return cls(*(case.inputs[name] for name in DECODE_INPUTS),
                   causal=str(p.get("causal", "true")).lower() == "true", window_left=window_left, softcap=softcap)

    @property
    def batch(self):
        return self.q.shape[0]

    @property
    def q_len(self):
        return self.q.shape[1]

    @property
    def heads(self):
        return self.q.shape[2]

    @property
    def head_dim(self):
        return self.q.shape[3]

    @property
    def page_size(self):
        return self.k_cache.shape[1]

    @property
    def kv_heads(self):
        return self.k_cache.shape[2]

    @property
    def scale(self):
        return 1 / math.sqrt(self.head_dim)

    @functools.cached_property
    def pages(self):
        """The pages the longest sequence uses: those gathered for every
        sequence."""
        return -(-int(self.cache_seqlens.max()) // self.page_size)

    @property
    def gathered_len(self):
        """The length of the gathered K and V: the pages' slots, padded to
        a multiple of 16 (CUDA's memory-efficient kernel wants its mask's
        rows aligned so)."""
        n = self.pages * self.page_size
        return n + -n % 16

    @property
    def window_size(self):
        """FlashAttention's window_size: (-1, 0) is causal, bottom-right
        aligned; (W, 0) causal with a left window of W; (-1, -1) neither,
        (W, -1) a left window alone."""
        return (self.window_left, 0 if self.causal else -1)

    def __str__(self):
        heads = f"H{self.heads}" if self.heads == self.kv_heads else f"H{self.heads}/{self.kv_heads}"
        text = (f"B{self.batch} q{self.q_len} {heads} D{self.head_dim} page {self.page_size} "
                f"L<={int(self.cache_seqlens.max())} {str(self.q.dtype).removeprefix('torch.')}")
        text += " causal" if self.causal else ""
        text += f" window {self.window_left}" if self.window_left >= 0 else ""
        return text + (f" softcap {self.softcap:g}" if self.softcap else "")


def gather_pages(d):
    """Each sequence's K and V, dense: [B, L, KVH, D] each (contiguous), L
    = d.gathered_len. Key j of sequence b is slot j % page_size of page
    block_table[b, j // page_size]; the pages of every sequence up to the
    longest one's are gathered, so slots past a shorter sequence's length
    hold whatever its table points at (poison in the host's cases): the
    mask must hide them. The padding past the pages is zeros."""
    idx = d.block_table[:, :d.pages].reshape(-1).long()
    dims = (d.batch, d.pages * d.page_size, d.kv_heads, d.head_dim)
    k, v = (cache.index_select(0, idx).view(dims) for cache in (d.k_cache, d.v_cache))
    pad = d.gathered_len - k.shape[1]
    if pad:
        k, v = (F.pad(t, (0, 0, 0, 0, 0, pad)) for t in (k, v))
    return k, v



# The varlen op's inputs, in its order (ops/varlen in Go).
VARLEN_INPUTS = ("q", "k", "v", "cu_seqlens_q", "cu_seqlens_k")

@dataclasses.dataclass(frozen=True)
class Varlen:
    """A varlen case's tensors and masking: q [total_q, H, D], k and v
    [total_k, KVH, D], cu_seqlens_q and cu_seqlens_k [B + 1] (int32), the
    longest query and key sequences (the params' seq_q and seq_k); causal
    is bottom-right aligned (query i of a sequence with Lq queries and Lk
    keys sits at key position Lk - Lq + i), window_left and window_right -1
    are no window, softcap 0 is none."""

    q: object
    k: object
    v: object
    cu_seqlens_q: object
    cu_seqlens_k: object
    max_seqlen_q: int
    max_seqlen_k: int
    causal: bool = True
    window_left: int = -1
    window_right: int = -1
    softcap: float = 0.0

    @classmethod
    def of(cls, case):
        p = case.params
        window_left, window_right = int(p.get("window_left", "-1")), int(p.get("window_right", "-1"))
        softcap = float(p.get("softcap", "0"))
        if window_left < -1 or window_right < -1 or softcap < 0:
            raise ValueError(f"varlen: window_left {window_left}, window_right {window_right} (want -1 or more), "
                             f"softcap {softcap:g} (want 0 or more)")
        q, k, v, cu_q, cu_k = (case.inputs[name] for name in VARLEN_INPUTS)
        cu_q, cu_k = cu_q.to(torch.int32).contiguous(), cu_k.to(torch.int32).contiguous()
        longest_q = int((cu_q[1:] - cu_q[:-1]).max())
        longest_k = int((cu_k[1:] - cu_k[:-1]).max())
        max_q = int(p.get("seq_q") or longest_q)
        max_k = int(p.get("seq_k") or max(max_q, longest_k))
        if longest_q > max_q or longest_k > max_k:
            raise ValueError(f"varlen: the cu_seqlens hold sequences of up to {longest_q} queries and "
                             f"{longest_k} keys, longer than seq_q {max_q} and seq_k {max_k}")
        return cls(q, k, v, cu_q, cu_k, max_q, max_k, causal=str(p.get("causal", "true")).lower() == "true",
                   window_left=window_left, window_right=window_right, softcap=softcap)

    @property
    def batch(self):
        return self.cu_seqlens_q.shape[0] - 1

    @property
    def total_q(self):
        return self.q.shape[0]

    @property
    def total_k(self):
        return self.k.shape[0]

    @property
    def heads(self):
        return self.q.shape[1]

    @property
    def kv_heads(self):
        return self.k.shape[1]

    @property
    def head_dim(self):
        return self.q.shape[2]

    @property
    def scale(self):
        return 1 / math.sqrt(self.head_dim)

    @property
    def window_size(self):
        """varlen_attn's window_size (FlashAttention's): (-1, 0) is causal,
        bottom-right aligned; causal with a left window W is (W, 0) (causal
        already bounds every row tighter than a right window); without
        causal, the windows as they are."""
        if self.causal:
            return (self.window_left, 0)
        return (self.window_left, self.window_right)

    def __str__(self):
        heads = f"H{self.heads}" if self.heads == self.kv_heads else f"H{self.heads}/{self.kv_heads}"
        text = (f"B{self.batch} {heads} D{self.head_dim} Lq<={self.max_seqlen_q} Lk<={self.max_seqlen_k} "
                f"{str(self.q.dtype).removeprefix('torch.')}")
        text += " causal" if self.causal else ""
        text += f" window_left {self.window_left}" if self.window_left >= 0 else ""
        text += f" window_right {self.window_right}" if self.window_right >= 0 else ""
        return text + (f" softcap {self.softcap:g}" if self.softcap else "")
