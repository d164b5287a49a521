// My attention: one warp per query row, fp16, head dim 64 or 128.
#include <cuda_fp16.h>

template <int D>
__device__ void attention(const half* Q, const half* K, const half* V, half* O, int seq_q, int seq_k,
                          int heads, int group, float scale, int causal) {
    constexpr int E = D / 32;  // elements of a row per lane
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * 4 + threadIdx.x / 32;
    const int bh = blockIdx.y;  // batch * heads + head
    if (row >= seq_q) return;
    const int kv = (bh / heads) * (heads / group) + (bh % heads) / group;  // its K/V head
    const half* q = Q + ((size_t)bh * seq_q + row) * D + lane * E;
    const half* k = K + (size_t)kv * seq_k * D + lane * E;
    const half* v = V + (size_t)kv * seq_k * D + lane * E;
    float qs[E], acc[E], m = -INFINITY, l = 0.f;
    for (int e = 0; e < E; ++e) {
        qs[e] = __half2float(q[e]) * scale;
        acc[e] = 0.f;
    }
    const int keys = causal ? min(seq_k, row + 1) : seq_k;  // top-left causal: keys j <= row
    for (int j = 0; j < keys; ++j) {
        float s = 0.f;
        for (int e = 0; e < E; ++e) s += qs[e] * __half2float(k[(size_t)j * D + e]);
        for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
        const float m_new = fmaxf(m, s), alpha = expf(m - m_new), p = expf(s - m_new);
        l = l * alpha + p;
        for (int e = 0; e < E; ++e) acc[e] = acc[e] * alpha + p * __half2float(v[(size_t)j * D + e]);
        m = m_new;
    }
    half* o = O + ((size_t)bh * seq_q + row) * D + lane * E;
    for (int e = 0; e < E; ++e) o[e] = __float2half(acc[e] / l);
}

extern "C" __global__ void my_attention_d64(const half* Q, const half* K, const half* V, half* O, int seq_q,
                                            int seq_k, int heads, int group, float scale, int causal) {
    attention<64>(Q, K, V, O, seq_q, seq_k, heads, group, scale, causal);
}

extern "C" __global__ void my_attention_d128(const half* Q, const half* K, const half* V, half* O, int seq_q,
                                             int seq_k, int heads, int group, float scale, int causal) {
    attention<128>(Q, K, V, O, seq_q, seq_k, heads, group, scale, causal);
}
