// Decode over a paged KV cache (the op `decode`), fp16, head dim 64 or 128:
// one warp per output row (sequence b, new token i, query head h), fp32
// math, an online softmax over the keys the row sees, found through the
// block table. Simple and correct rather than fast: it shows how a spec's
// [decode] table launches an op's kernel (paged_decode.toml).
//
// Layouts (flash_attn_with_kvcache's): q and o [batch, q_len, heads, D];
// k_cache and v_cache [num_pages, page_size, kv_heads, D]; block_table
// [batch, max_pages] int32, entry n the page of keys n·page_size ...;
// cache_seqlens [batch] int32, a sequence's length L, its q_len new tokens
// included. Token i sits at position p = L - q_len + i and sees keys
// j <= p when causal (bottom-right), j >= p - window_left when
// window_left >= 0; with softcap > 0 a score s (scale included) becomes
// softcap·tanh(s/softcap).
#include <cuda_fp16.h>

#define ROWS_PER_BLOCK 4  // warps of a 128-thread block

template <int D>
__device__ void paged_decode(const half* __restrict__ Q, const half* __restrict__ K, const half* __restrict__ V,
                             const int* __restrict__ block_table, const int* __restrict__ cache_seqlens,
                             half* __restrict__ O, int batch, int q_len, int heads, int kv_heads, int page_size,
                             int max_pages, float scale, int causal, int window_left, float softcap) {
    constexpr int E = D / 32;  // elements of a row each lane holds
    const int lane = threadIdx.x % 32;
    const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / 32;
    if (row >= (long long)batch * q_len * heads) return;
    const int h = (int)(row % heads);
    const int i = (int)((row / heads) % q_len);
    const int b = (int)(row / ((long long)heads * q_len));
    const int kv = h / (heads / kv_heads);

    const int len = cache_seqlens[b];
    const int pos = len - q_len + i;
    int lo = 0, hi = len - 1;
    if (causal) hi = min(hi, pos);
    if (window_left >= 0) lo = max(lo, pos - window_left);

    float q[E], acc[E];
    const half* q_row = Q + row * D + lane * E;
    for (int e = 0; e < E; ++e) {
        q[e] = __half2float(q_row[e]);
        acc[e] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    const int* table = block_table + (size_t)b * max_pages;
    for (int j = lo; j <= hi; ++j) {
        const int page = table[j / page_size];
        const size_t at = (((size_t)page * page_size + j % page_size) * kv_heads + kv) * D + lane * E;
        float s = 0.f;
        for (int e = 0; e < E; ++e) s += q[e] * __half2float(K[at + e]);
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        s *= scale;
        if (softcap > 0.f) s = softcap * tanhf(s / softcap);
        const float m_new = fmaxf(m, s);
        const float correction = expf(m - m_new);  // 0 on the first key (m is -inf)
        const float p = expf(s - m_new);
        l = l * correction + p;
        for (int e = 0; e < E; ++e) acc[e] = acc[e] * correction + p * __half2float(V[at + e]);
        m = m_new;
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;  // a row that sees no key writes zeros
    half* o_row = O + row * D + lane * E;
    for (int e = 0; e < E; ++e) o_row[e] = __float2half(acc[e] * inv);
}

#define PAGED_DECODE(D)                                                                                          \
    extern "C" __global__ void __launch_bounds__(32 * ROWS_PER_BLOCK) paged_decode_d##D(                         \
        const half* q, const half* k_cache, const half* v_cache, const int* block_table, const int* cache_seqlens, \
        half* o, int batch, int q_len, int heads, int kv_heads, int page_size, int max_pages, float scale,         \
        int causal, int window_left, float softcap) {                                                            \
        paged_decode<D>(q, k_cache, v_cache, block_table, cache_seqlens, o, batch, q_len, heads, kv_heads,      \
                        page_size, max_pages, scale, causal, window_left, softcap);                               \
    }

PAGED_DECODE(64)
PAGED_DECODE(128)
