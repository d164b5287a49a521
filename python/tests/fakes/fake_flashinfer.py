"""A fake flashinfer for testing the flashinfer adapter on the CPU: the
three wrappers it calls, with FlashInfer's signatures, plan() storing the
plan and run() computing attention with fake_attention_math from the plan
(pages read through the CSR indptr, indices and last_page_len, as
FlashInfer reads them), writing into out= when given. Each call is
recorded in CALLS. run() before plan() fails as FlashInfer's does. Its
ragged prefill refuses head dims outside 64, 128 and 256 (an assert), so
that a refusal comes from the library's own code. Loaded under the name
flashinfer (fake_libraries.load)."""

import math

import torch

from fake_attention_math import attend, record

__version__ = "0.0.0-fake"
CALLS = []


def _paged_keys(cache, indptr, indices, last_page_len, b, page_size):
    start, end = int(indptr[b]), int(indptr[b + 1])
    pages = indices[start:end].long()
    length = (end - start - 1) * page_size + int(last_page_len[b]) if end > start else 0
    return cache[pages].reshape(-1, *cache.shape[2:])[:length]


class _Wrapper:
    def __init__(self, float_workspace_buffer, kv_layout="NHD", **options):
        assert kv_layout == "NHD", f"fake: layout {kv_layout}"
        record(CALLS, f"{type(self).__name__}.__init__", (float_workspace_buffer,), {"kv_layout": kv_layout,
                                                                                     **options})
        self.options = options
        self._plan = None

    def _planned(self):
        if self._plan is None:
            raise RuntimeError("plan() must be called before run()")
        return self._plan

    @staticmethod
    def _scale(plan, head_dim):
        return plan["sm_scale"] if plan.get("sm_scale") is not None else 1 / math.sqrt(head_dim)

    @staticmethod
    def _into(out, result):
        if out is None:
            return result
        out.copy_(result)
        return out


class BatchDecodeWithPagedKVCacheWrapper(_Wrapper):
    def plan(self, indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size, **kwargs):
        record(CALLS, "BatchDecodeWithPagedKVCacheWrapper.plan",
               (indptr, indices, last_page_len, num_qo_heads, num_kv_heads, head_dim, page_size), kwargs)
        self._plan = dict(kwargs, indptr=indptr, indices=indices, last_page_len=last_page_len, page_size=page_size)

    def run(self, q, paged_kv_cache, out=None, **kwargs):
        record(CALLS, "BatchDecodeWithPagedKVCacheWrapper.run", (q, paged_kv_cache), {"out": out, **kwargs})
        p = self._planned()
        k_cache, v_cache = paged_kv_cache
        result = torch.empty_like(q)
        for b in range(q.shape[0]):
            keys, values = (_paged_keys(c, p["indptr"], p["indices"], p["last_page_len"], b, p["page_size"])
                            for c in (k_cache, v_cache))
            result[b] = attend(q[b:b + 1], keys, values, self._scale(p, q.shape[-1]), False,
                               p.get("window_left", -1), None, p.get("logits_soft_cap") or 0.0)[0][0]
        return self._into(out, result)


class BatchPrefillWithPagedKVCacheWrapper(_Wrapper):
    def plan(self, qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len, num_qo_heads,
             num_kv_heads, head_dim_qk, page_size, **kwargs):
        record(CALLS, "BatchPrefillWithPagedKVCacheWrapper.plan",
               (qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len, num_qo_heads, num_kv_heads,
                head_dim_qk, page_size), kwargs)
        self._plan = dict(kwargs, qo_indptr=qo_indptr, indptr=paged_kv_indptr, indices=paged_kv_indices,
                          last_page_len=paged_kv_last_page_len, page_size=page_size)

    def run(self, q, paged_kv_cache, out=None, **kwargs):
        record(CALLS, "BatchPrefillWithPagedKVCacheWrapper.run", (q, paged_kv_cache), {"out": out, **kwargs})
        p = self._planned()
        k_cache, v_cache = paged_kv_cache
        qo = p["qo_indptr"].tolist()
        result = torch.empty_like(q)
        for b in range(len(qo) - 1):
            keys, values = (_paged_keys(c, p["indptr"], p["indices"], p["last_page_len"], b, p["page_size"])
                            for c in (k_cache, v_cache))
            result[qo[b]:qo[b + 1]] = attend(q[qo[b]:qo[b + 1]], keys, values, self._scale(p, q.shape[-1]),
                                             p.get("causal", False), p.get("window_left", -1), None,
                                             p.get("logits_soft_cap") or 0.0)[0]
        return self._into(out, result)


class BatchPrefillWithRaggedKVCacheWrapper(_Wrapper):
    def plan(self, qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, head_dim_qk, **kwargs):
        record(CALLS, "BatchPrefillWithRaggedKVCacheWrapper.plan",
               (qo_indptr, kv_indptr, num_qo_heads, num_kv_heads, head_dim_qk), kwargs)
        assert head_dim_qk in (64, 128, 256), f"head_dim {head_dim_qk} is not supported"
        self._plan = dict(kwargs, qo_indptr=qo_indptr, kv_indptr=kv_indptr)

    def run(self, q, k, v, out=None, **kwargs):
        record(CALLS, "BatchPrefillWithRaggedKVCacheWrapper.run", (q, k, v), {"out": out, **kwargs})
        p = self._planned()
        qo, kv = p["qo_indptr"].tolist(), p["kv_indptr"].tolist()
        result = torch.empty_like(q)
        for b in range(len(qo) - 1):
            result[qo[b]:qo[b + 1]] = attend(q[qo[b]:qo[b + 1]], k[kv[b]:kv[b + 1]], v[kv[b]:kv[b + 1]],
                                             self._scale(p, q.shape[-1]), p.get("causal", False),
                                             p.get("window_left", -1), None, p.get("logits_soft_cap") or 0.0)[0]
        return self._into(out, result)
