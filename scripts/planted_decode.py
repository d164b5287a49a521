"""A `py:` decode backend with one planted paging fault, for showing on a
GPU that decode's check FAILs each way a paged kernel goes wrong (the CPU
twin is the wrongpage test plugin, run by `make test`).

The fault is the file's own name after "planted_", so one file copied
under several names gives one backend per fault (scripts/gpu-serving.sh
does this):

    cp scripts/planted_decode.py planted/planted_past_context.py
    flashcore run --suite serving --backends py:planted/planted_honest.py,py:planted/planted_past_context.py,...

    honest        gathers each sequence's pages through the block table: the control, which must PASS
    past_context  reads the keys up to the end of the page after each sequence's length (poison)
    in_order      ignores the block table: page n of sequence b is pool page b * max_pages + n
    top_left      aligns the causal mask top-left: new token i sees keys 0 ... i

Every computation is plain torch in fp32 on the case's device.
"""

import os

import torch

FAULT = os.path.splitext(os.path.basename(__file__))[0].removeprefix("planted_")
FAULTS = ("honest", "past_context", "in_order", "top_left")
if FAULT not in FAULTS:
    raise ImportError(f"planted_decode: copy this file as planted_<fault>.py, <fault> one of {', '.join(FAULTS)}")


def decode(q, k_cache, v_cache, block_table, cache_seqlens, *, causal, scale):
    batch, q_len, heads, dim = q.shape
    num_pages, page_size, kv_heads, _ = k_cache.shape
    max_pages = block_table.shape[1]
    out = torch.empty_like(q)
    lengths = cache_seqlens.tolist()
    for b in range(batch):
        length = lengths[b]
        read = length
        if FAULT == "past_context":
            read = min((length // page_size + 1) * page_size, max_pages * page_size)
        pages = torch.arange((read + page_size - 1) // page_size, device=q.device)
        if FAULT == "in_order":
            page_ids = (b * max_pages + pages) % num_pages
        else:
            page_ids = block_table[b, pages].long()
        k = k_cache[page_ids].reshape(-1, kv_heads, dim)[:read].float()
        v = v_cache[page_ids].reshape(-1, kv_heads, dim)[:read].float()
        group = heads // kv_heads
        k = k.repeat_interleave(group, dim=1)  # [read, heads, dim]
        v = v.repeat_interleave(group, dim=1)
        scores = torch.einsum("qhd,khd->hqk", q[b].float(), k) * scale  # [heads, q_len, read]
        keys = torch.arange(read, device=q.device)
        position = torch.arange(q_len, device=q.device) + (length - q_len)
        if FAULT == "top_left":
            position = torch.arange(q_len, device=q.device)
        visible = keys[None, :] < (length if FAULT != "past_context" else read)
        if causal:
            visible = visible & (keys[None, :] <= position[:, None])
            if FAULT == "past_context":
                visible = visible | (keys[None, :] >= length)
        scores = scores.masked_fill(~visible[None], float("-inf"))
        out[b] = torch.einsum("hqk,khd->qhd", scores.softmax(-1), v).to(q.dtype)
    return out
