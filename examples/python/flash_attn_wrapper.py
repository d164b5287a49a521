"""flash-attn's flash_attn_func (FlashAttention-2) behind the harness's [B, H, S, D] layout."""

from flash_attn import flash_attn_func  # pip install flash-attn; without it this backend is unavailable


def capabilities():
    return {"dtypes": ["fp16", "bf16"], "head_dims": list(range(8, 257, 8)), "needs_gpu": True}


def setup(shape):
    # flash-attn aligns a causal mask to the bottom-right corner when Sq != Sk
    # (query row i sees keys j <= i + Sk - Sq); the harness's reference, like
    # PyTorch's is_causal, is top-left aligned (j <= i). Refuse rather than FAIL.
    if shape.causal and shape.seq_q != shape.seq_k:
        raise NotImplementedError("flash-attn aligns causal masks bottom-right when Sq != Sk; the reference is top-left")


def attention(q, k, v, *, causal: bool, scale: float):
    # The harness gives [B, H, S, D]; flash-attn wants [B, S, H, D]. transpose(1, 2)
    # is a view (the last dim stays contiguous), so nothing is copied on the way in.
    # flash-attn handles grouped-query heads (H_kv < H) itself.
    out = flash_attn_func(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                          softmax_scale=scale, causal=causal)
    return out.transpose(1, 2)  # back to [B, H, Sq, D]; the harness writes it contiguous
