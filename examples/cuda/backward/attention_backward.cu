// Attention forward and backward in one .cu file, fp16, head dim 64 or 128:
// the walk-through's forward (one warp per query row) and a backward of the
// same shape of code. Straightforward rather than fast: it shows how a
// [backward] table launches a backward (attention_backward.toml).
//
// dQ: one warp per query row i, over the keys it sees:
//   dQ_i = scale · Σ_j P_ij (dO_i·V_j − D_i) K_j,  P_ij = exp(scale·q_i·k_j − lse_i),  D_i = dO_i·O_i
// dK, dV: one warp per key row j, over every query row of its group that sees it:
//   dV_j = Σ_i P_ij dO_i,  dK_j = scale · Σ_i P_ij (dO_i·V_j − D_i) Q_i
#include "../walkthrough/attention.cu"

template <int D>
__device__ float warp_dot(const float* a, const half* b) {
    constexpr int E = D / 32;
    float s = 0.f;
    for (int e = 0; e < E; ++e) s += a[e] * __half2float(b[e]);
    for (int off = 16; off > 0; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    return s;
}

template <int D>
__device__ void load_row(float* dst, const half* src) {
    for (int e = 0; e < D / 32; ++e) dst[e] = __half2float(src[e]);
}

template <int D>
__device__ void backward_dq(const half* Q, const half* K, const half* V, const half* O, const half* dO,
                            const float* LSE, half* dQ, int seq_q, int seq_k, int heads, int group, float scale,
                            int causal) {
    constexpr int E = D / 32;
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * 4 + threadIdx.x / 32;
    const int bh = blockIdx.y;
    if (row >= seq_q) return;
    const int kv = (bh / heads) * (heads / group) + (bh % heads) / group;
    const size_t at = ((size_t)bh * seq_q + row) * D + lane * E;
    float q[E], d_o[E], acc[E];
    load_row<D>(q, Q + at);
    load_row<D>(d_o, dO + at);
    const float delta = warp_dot<D>(d_o, O + at);
    const float lse = LSE[(size_t)bh * seq_q + row];
    for (int e = 0; e < E; ++e) acc[e] = 0.f;
    const half* k = K + (size_t)kv * seq_k * D + lane * E;
    const half* v = V + (size_t)kv * seq_k * D + lane * E;
    const int keys = causal ? min(seq_k, row + 1) : seq_k;
    for (int j = 0; j < keys; ++j) {
        const float p = expf(scale * warp_dot<D>(q, k + (size_t)j * D) - lse);
        const float ds = p * (warp_dot<D>(d_o, v + (size_t)j * D) - delta);
        for (int e = 0; e < E; ++e) acc[e] += ds * __half2float(k[(size_t)j * D + e]);
    }
    for (int e = 0; e < E; ++e) dQ[at + e] = __float2half(acc[e] * scale);
}

template <int D>
__device__ void backward_dkdv(const half* Q, const half* K, const half* V, const half* O, const half* dO,
                              const float* LSE, half* dK, half* dV, int seq_q, int seq_k, int heads, int group,
                              float scale, int causal) {
    constexpr int E = D / 32;
    const int lane = threadIdx.x % 32;
    const int key = blockIdx.x * 4 + threadIdx.x / 32;
    const int bkv = blockIdx.y;  // batch * kv_heads + kv head
    if (key >= seq_k) return;
    const int kv_heads = heads / group;
    const size_t at = ((size_t)bkv * seq_k + key) * D + lane * E;
    float k[E], v[E], dk[E], dv[E], q[E], d_o[E];
    load_row<D>(k, K + at);
    load_row<D>(v, V + at);
    for (int e = 0; e < E; ++e) dk[e] = dv[e] = 0.f;
    for (int g = 0; g < group; ++g) {
        const int bh = (bkv / kv_heads) * heads + (bkv % kv_heads) * group + g;
        for (int i = causal ? key : 0; i < seq_q; ++i) {  // top-left causal: rows i >= key see it
            const size_t row = ((size_t)bh * seq_q + i) * D + lane * E;
            load_row<D>(q, Q + row);
            load_row<D>(d_o, dO + row);
            const float p = expf(scale * warp_dot<D>(k, Q + row) - LSE[(size_t)bh * seq_q + i]);
            const float ds = p * (warp_dot<D>(v, dO + row) - warp_dot<D>(d_o, O + row));
            for (int e = 0; e < E; ++e) {
                dv[e] += p * d_o[e];
                dk[e] += ds * q[e];
            }
        }
    }
    for (int e = 0; e < E; ++e) {
        dK[at + e] = __float2half(dk[e] * scale);
        dV[at + e] = __float2half(dv[e]);
    }
}

#define BACKWARD_KERNELS(D)                                                                                        \
    extern "C" __global__ void my_attention_bwd_dq_d##D(const half* Q, const half* K, const half* V,              \
                                                        const half* O, const half* dO, const float* LSE,         \
                                                        half* dQ, int seq_q, int seq_k, int heads, int group,    \
                                                        float scale, int causal) {                               \
        backward_dq<D>(Q, K, V, O, dO, LSE, dQ, seq_q, seq_k, heads, group, scale, causal);                       \
    }                                                                                                              \
    extern "C" __global__ void my_attention_bwd_dkdv_d##D(const half* Q, const half* K, const half* V,            \
                                                          const half* O, const half* dO, const float* LSE,       \
                                                          half* dK, half* dV, int seq_q, int seq_k, int heads,   \
                                                          int group, float scale, int causal) {                  \
        backward_dkdv<D>(Q, K, V, O, dO, LSE, dK, dV, seq_q, seq_k, heads, group, scale, causal);                 \
    }

BACKWARD_KERNELS(64)
BACKWARD_KERNELS(128)
