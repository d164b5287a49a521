// Split-KV attention forward: an example of a CUDA backend written as one
// .cu file plus its spec (splitkv.toml), with no Go.
//
// Each call runs two kernels:
//   1. splitkv_<dtype>_d<D>: grid (ceil(Sq/4), B*H, SPLITS). Block z takes
//      one contiguous chunk of the keys; each warp owns one query row and
//      keeps an online softmax over its chunk in base 2 (the scale comes
//      pre-multiplied by log2(e): exp(x*scale) = exp2(x*scale*log2(e))). It
//      writes its unnormalised partial output (fp32, D values) to the
//      scratch buffer part_o and its running maximum m and sum l to part_ml.
//   2. combine_<dtype>_d<D>: grid (ceil(Sq/4), B*H). Each warp merges the
//      SPLITS partials of its row: with M = max m_s, the output is
//      sum_s 2^(m_s-M) o_s / sum_s 2^(m_s-M) l_s.
//
// part_ml is declared zero = true: a chunk with no visible key (past the
// causal diagonal, or past Sk when Sk < SPLITS) returns at once, and its
// l = 0, left by the zeroing before every call, marks it empty for the
// combine. part_o is only read where l > 0, so it needs no zeroing.
//
// Layout (docs/cuda.md): Q and O are contiguous [B, H, Sq, D], K and V
// [B, H_kv, Sk, D]; query head h reads key/value head h / (H / H_kv); a
// causal row i sees keys j <= i (top-left).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#ifndef SPLITS
#define SPLITS 4 // the spec's tunable, passed as -DSPLITS=N
#endif
#define ROWS 4 // query rows per block, one warp each

__device__ __forceinline__ float to_float(half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ half from_float<half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

__device__ __forceinline__ float warp_sum(float x) {
    for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(0xffffffffu, x, offset);
    return x;
}

template <typename T, int D>
__device__ __forceinline__ void split(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                      float* __restrict__ part_o, float* __restrict__ part_ml, int H, int H_kv, int Sq,
                                      int Sk, int causal, float scale_log2e) {
    constexpr int E = D / 32; // elements of a row per lane
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * ROWS + threadIdx.x / 32;
    const int bh = blockIdx.y; // b * H + h
    const int chunk_index = blockIdx.z;
    if (row >= Sq) return;
    const int b = bh / H, h = bh % H;
    const int kv_head = h / (H / H_kv);
    const T* q_row = q + ((size_t)bh * Sq + row) * D;
    const T* k_head = k + ((size_t)b * H_kv + kv_head) * Sk * D;
    const T* v_head = v + ((size_t)b * H_kv + kv_head) * Sk * D;

    const int chunk = (Sk + SPLITS - 1) / SPLITS;
    const int begin = chunk_index * chunk;
    int end = min(Sk, begin + chunk);
    if (causal) end = min(end, row + 1);
    if (begin >= end) return; // no visible key: the zeroed l = 0 marks this chunk empty

    float qv[E], acc[E];
#pragma unroll
    for (int e = 0; e < E; ++e) {
        qv[e] = to_float(q_row[lane * E + e]) * scale_log2e;
        acc[e] = 0.f;
    }
    float m = -INFINITY, l = 0.f;
    for (int j = begin; j < end; ++j) {
        const T* k_row = k_head + (size_t)j * D + lane * E;
        float s = 0.f;
#pragma unroll
        for (int e = 0; e < E; ++e) s += qv[e] * to_float(k_row[e]);
        s = warp_sum(s);
        const float m_new = fmaxf(m, s);
        const float alpha = exp2f(m - m_new); // 0 on the first key (m = -inf)
        const float p = exp2f(s - m_new);
        l = l * alpha + p;
        const T* v_row = v_head + (size_t)j * D + lane * E;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[e] = acc[e] * alpha + p * to_float(v_row[e]);
        m = m_new;
    }
    const size_t slot = ((size_t)bh * Sq + row) * SPLITS + chunk_index;
#pragma unroll
    for (int e = 0; e < E; ++e) part_o[slot * D + lane * E + e] = acc[e];
    if (lane == 0) {
        part_ml[slot * 2] = m;
        part_ml[slot * 2 + 1] = l;
    }
}

template <typename T, int D>
__device__ __forceinline__ void combine(const float* __restrict__ part_o, const float* __restrict__ part_ml,
                                        T* __restrict__ o, int Sq) {
    constexpr int E = D / 32;
    const int lane = threadIdx.x % 32;
    const int row = blockIdx.x * ROWS + threadIdx.x / 32;
    const int bh = blockIdx.y;
    if (row >= Sq) return;
    const size_t first = ((size_t)bh * Sq + row) * SPLITS;
    float M = -INFINITY;
    for (int s = 0; s < SPLITS; ++s)
        if (part_ml[(first + s) * 2 + 1] > 0.f) M = fmaxf(M, part_ml[(first + s) * 2]);
    float L = 0.f, acc[E];
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] = 0.f;
    for (int s = 0; s < SPLITS; ++s) {
        const float l = part_ml[(first + s) * 2 + 1];
        if (!(l > 0.f)) continue; // an empty chunk
        const float w = exp2f(part_ml[(first + s) * 2] - M);
        L += l * w;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[e] += w * part_o[(first + s) * D + lane * E + e];
    }
    T* o_row = o + ((size_t)bh * Sq + row) * D;
#pragma unroll
    for (int e = 0; e < E; ++e) o_row[lane * E + e] = from_float<T>(acc[e] / L);
}

// The entry points the spec names: splitkv_{dtype}_d{D} and
// combine_{dtype}_d{D}, extern "C" so their symbols are these names.
#define INSTANTIATE(NAME, T, D)                                                                                     \
    extern "C" __global__ void __launch_bounds__(32 * ROWS)                                                         \
        splitkv_##NAME##_d##D(const T* q, const T* k, const T* v, float* part_o, float* part_ml, int H, int H_kv,   \
                              int Sq, int Sk, int causal, float scale_log2e) {                                      \
        split<T, D>(q, k, v, part_o, part_ml, H, H_kv, Sq, Sk, causal, scale_log2e);                                \
    }                                                                                                               \
    extern "C" __global__ void __launch_bounds__(32 * ROWS)                                                         \
        combine_##NAME##_d##D(const float* part_o, const float* part_ml, T* o, int Sq) {                            \
        combine<T, D>(part_o, part_ml, o, Sq);                                                                      \
    }

INSTANTIATE(fp16, half, 64)
INSTANTIATE(fp16, half, 128)
INSTANTIATE(bf16, __nv_bfloat16, 64)
INSTANTIATE(bf16, __nv_bfloat16, 128)
