// cuda-scalar: attention forward with an online softmax and plain fp32
// arithmetic, no tensor cores. It is the correctness baseline of the CUDA
// kernels and the floor the tensor-core kernels are measured against.
//
// Design: one warp owns one query row; a block holds ROWS warps, so ROWS query
// rows share each K/V tile that the block stages in shared memory as fp32.
// For a tile of 32 keys, lane j computes the score of key j (a full dot
// product over D from shared memory), the warp reduces the tile's maximum and
// sum with shuffles, and each lane accumulates D/32 output columns of P·V.
// The running maximum m, the normaliser l and the accumulator are rescaled by
// exp2(m_old - m_new) whenever the maximum grows.
#include "attention.cuh"

using namespace flashcore;

namespace {

constexpr int kKeysPerTile = 32;

// load_kv_tile converts keys [tile, tile+32) of K and V to fp32 in shared
// memory, with zeros past seq_k.
template <typename T, int D, int THREADS>
__device__ __forceinline__ void load_kv_tile(float (*sK)[D + 1], float (*sV)[D], const Head<T>& hd, int tile) {
  constexpr int kChunksPerRow = D / kVec;
  for (int c = threadIdx.x; c < kKeysPerTile * kChunksPerRow; c += THREADS) {
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * kVec;
    const int j = tile + r;
    float kf[kVec] = {};
    float vf[kVec] = {};
    if (j < hd.seq_k) {
      const size_t at = static_cast<size_t>(j) * D + col;
      unpack8<T>(*reinterpret_cast<const uint4*>(hd.k + at), kf);
      unpack8<T>(*reinterpret_cast<const uint4*>(hd.v + at), vf);
    }
#pragma unroll
    for (int i = 0; i < kVec; ++i) {
      sK[r][col + i] = kf[i];
      sV[r][col + i] = vf[i];
    }
  }
}

template <typename T, int D, int ROWS>
__device__ __forceinline__ void scalar_attention(const Head<T>& hd) {
  static_assert(D % 32 == 0, "each lane owns D/32 output columns");
  constexpr int kThreads = ROWS * 32;
  constexpr int kPerLane = D / 32;
  // sK rows are padded by one float so lane j reading key j walks distinct banks.
  __shared__ float sK[kKeysPerTile][D + 1];
  __shared__ float sV[kKeysPerTile][D];
  __shared__ float sQ[ROWS][D];

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int row0 = blockIdx.x * ROWS;
  const int row = row0 + warp;
  const bool row_valid = row < hd.seq_q;

  for (int d = lane; d < D; d += 32) {
    sQ[warp][d] = row_valid ? Elem<T>::to_float(hd.q[static_cast<size_t>(row) * D + d]) * hd.scale_log2 : 0.f;
  }

  float m = kNegInf;
  float l = 0.f;
  float acc[kPerLane];
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) acc[t] = 0.f;

  const int key_end = hd.key_end(row0, ROWS);
  for (int tile = 0; tile < key_end; tile += kKeysPerTile) {
    __syncthreads();  // the previous tile is consumed (and sQ is visible)
    load_kv_tile<T, D, kThreads>(sK, sV, hd, tile);
    __syncthreads();
    if (!row_valid) continue;

    const int j = tile + lane;
    float s = kNegInf;
    if (hd.visible(row, j)) {
      float dot = 0.f;
#pragma unroll 16
      for (int d = 0; d < D; ++d) dot += sQ[warp][d] * sK[lane][d];
      s = dot;
    }
    const float m_new = fmaxf(m, group_max<32>(s));
    const float alpha = rescale_factor(m, m_new);
    const float p = shifted_exp2(s, m_new);
    l = l * alpha + group_sum<32>(p);
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) acc[t] *= alpha;
#pragma unroll 8
    for (int jj = 0; jj < kKeysPerTile; ++jj) {
      const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
      for (int t = 0; t < kPerLane; ++t) acc[t] += pj * sV[jj][lane + 32 * t];
    }
    m = m_new;
  }

  if (row_valid) {
    const float inv_l = 1.f / l;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      hd.o[static_cast<size_t>(row) * D + lane + 32 * t] = Elem<T>::from_float(acc[t] * inv_l);
    }
  }
}

}  // namespace

// SCALAR_KERNEL instantiates one extern "C" entry point; the Go spec derives
// the same names from (dtype, head dim, rows per block).
#define SCALAR_KERNEL(NAME, T, D, ROWS)                                                                         \
  extern "C" __global__ void __launch_bounds__(ROWS * 32)                                                       \
      NAME(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,       \
           int heads, int kv_heads, int seq_q, int seq_k, int causal, float scale_log2) {                      \
    scalar_attention<T, D, ROWS>(head_of<D>(q, k, v, o, heads, kv_heads, seq_q, seq_k, causal, scale_log2)); \
  }

SCALAR_KERNEL(attn_fwd_fp16_d64_rows4, half, 64, 4)
SCALAR_KERNEL(attn_fwd_fp16_d64_rows8, half, 64, 8)
SCALAR_KERNEL(attn_fwd_fp16_d64_rows16, half, 64, 16)
SCALAR_KERNEL(attn_fwd_fp16_d128_rows4, half, 128, 4)
SCALAR_KERNEL(attn_fwd_fp16_d128_rows8, half, 128, 8)
SCALAR_KERNEL(attn_fwd_fp16_d128_rows16, half, 128, 16)
SCALAR_KERNEL(attn_fwd_bf16_d64_rows4, __nv_bfloat16, 64, 4)
SCALAR_KERNEL(attn_fwd_bf16_d64_rows8, __nv_bfloat16, 64, 8)
SCALAR_KERNEL(attn_fwd_bf16_d64_rows16, __nv_bfloat16, 64, 16)
SCALAR_KERNEL(attn_fwd_bf16_d128_rows4, __nv_bfloat16, 128, 4)
SCALAR_KERNEL(attn_fwd_bf16_d128_rows8, __nv_bfloat16, 128, 8)
SCALAR_KERNEL(attn_fwd_bf16_d128_rows16, __nv_bfloat16, 128, 16)
