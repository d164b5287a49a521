// cuda-wmma: attention forward on tensor cores through the WMMA API, with
// 16x16x16 fragments for both Q·Kᵀ and P·V and an fp32 online softmax.
//
// Design: a block of WARPS warps owns 16*WARPS query rows; each warp owns 16
// rows end to end. The warp keeps its Q rows as WMMA A-fragments in registers
// and its output as D/16 fp32 accumulator fragments. The block stages TILE_N
// keys (16 or 32) of K and V in shared memory per step; each warp computes
// its 16xTILE_N score tile with WMMA, runs the online softmax on it (two
// lanes per row, TILE_N/2 columns each), writes P in the input type, and
// adds P·V into the accumulators. WARPS and TILE_N are template parameters;
// each combination is its own kernel.
//
// The rescale that the online softmax needs, O <- O * exp2(m_old - m_new) per
// row, is where a WMMA kernel goes wrong: an accumulator fragment's element
// order is opaque, so a fragment cannot be scaled by row in registers. Here
// each accumulator is stored to the warp's scratch tile, scaled by row there
// and loaded back, before P·V is added. The round trip is skipped when no
// row's maximum changed.
#include <mma.h>

#include "attention.cuh"

using namespace flashcore;
using namespace nvcuda;

namespace {

template <typename T, int D, int WARPS, int TILE_N>
struct WmmaShared {
  static constexpr int kLdKV = D + 8;      // padding staggers rows across banks
  static constexpr int kLdS = TILE_N + 4;  // fp32 stride of a warp's score tile
  static constexpr int kLdP = TILE_N + 8;  // element stride of a warp's P tile
  alignas(128) T k[TILE_N * kLdKV];
  alignas(128) T v[TILE_N * kLdKV];
  alignas(128) float s[WARPS][16 * kLdS];  // scores, then scratch for rescaling
  alignas(128) T p[WARPS][16 * kLdP];      // probabilities, first Q staging
  float alpha[WARPS][16];
  float inv_l[WARPS][16];
};

template <typename T>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <typename T, typename Layout>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, Layout>;
using FragAcc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

// load_kv_tile copies keys [tile, tile+TILE_N) of K and V into shared memory
// with 16-byte loads, zero past seq_k.
template <typename T, int D, int THREADS, int LD, int TILE_N>
__device__ __forceinline__ void load_kv_tile(T* sk, T* sv, const Head<T>& hd, int tile) {
  constexpr int kChunksPerRow = D / kVec;
  for (int c = threadIdx.x; c < TILE_N * kChunksPerRow; c += THREADS) {
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * kVec;
    const int j = tile + r;
    uint4 kraw = make_uint4(0, 0, 0, 0);
    uint4 vraw = kraw;
    if (j < hd.seq_k) {
      const size_t at = static_cast<size_t>(j) * D + col;
      kraw = *reinterpret_cast<const uint4*>(hd.k + at);
      vraw = *reinterpret_cast<const uint4*>(hd.v + at);
    }
    *reinterpret_cast<uint4*>(sk + r * LD + col) = kraw;
    *reinterpret_cast<uint4*>(sv + r * LD + col) = vraw;
  }
}

// scale_rows multiplies row r of a 16x16 fp32 tile (stride 16) by factor[r].
__device__ __forceinline__ void scale_rows(float* tile, const float* factor, int lane) {
#pragma unroll
  for (int e = lane; e < 256; e += 32) tile[e] *= factor[e / 16];
}

template <typename T, int D, int WARPS, int TILE_N>
__device__ __forceinline__ void wmma_attention(const Head<T>& hd) {
  constexpr int kThreads = WARPS * 32;
  constexpr int kBlockM = WARPS * 16;
  constexpr int kDFrags = D / 16;
  constexpr int kTileN = TILE_N;
  constexpr int kCols = TILE_N / 2;  // softmax columns per lane
  using Shared = WmmaShared<T, D, WARPS, TILE_N>;
  constexpr int kLdKV = Shared::kLdKV;
  constexpr int kLdS = Shared::kLdS;
  constexpr int kLdP = Shared::kLdP;
  static_assert(TILE_N % 16 == 0 && 16 * kLdS >= 256, "score tile doubles as a 16x16 scratch tile");
  __shared__ Shared sm;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int row0 = blockIdx.x * kBlockM;
  const int warp_row0 = row0 + warp * 16;
  float* s_w = sm.s[warp];
  T* p_w = sm.p[warp];
  const T zero = Elem<T>::from_float(0.f);

  // The warp's Q rows become A-fragments, staged 16 columns at a time.
  FragA<T> q_frag[kDFrags];
#pragma unroll
  for (int kk = 0; kk < kDFrags; ++kk) {
    for (int e = lane; e < 256; e += 32) {
      const int r = e / 16;
      const int row = warp_row0 + r;
      p_w[r * kLdP + e % 16] = row < hd.seq_q ? hd.q[static_cast<size_t>(row) * D + kk * 16 + e % 16] : zero;
    }
    __syncwarp();
    wmma::load_matrix_sync(q_frag[kk], p_w, kLdP);
    __syncwarp();
  }

  FragAcc o_frag[kDFrags];
#pragma unroll
  for (int f = 0; f < kDFrags; ++f) wmma::fill_fragment(o_frag[f], 0.f);

  // Softmax ownership: two lanes per row, kCols columns each.
  const int my_r = lane / 2;
  const int my_c0 = (lane % 2) * kCols;
  const int my_row = warp_row0 + my_r;
  float m = kNegInf;
  float l = 0.f;

  const int key_end = hd.key_end(row0, kBlockM);
  for (int tile = 0; tile < key_end; tile += kTileN) {
    __syncthreads();  // every warp is done with the previous K/V tile
    load_kv_tile<T, D, kThreads, kLdKV, TILE_N>(sm.k, sm.v, hd, tile);
    __syncthreads();
    if (hd.causal && tile > warp_row0 + 15) continue;  // the whole tile is masked for this warp

    // S = Q·Kᵀ for the warp's 16 rows and the tile's TILE_N keys.
#pragma unroll
    for (int nb = 0; nb < kTileN / 16; ++nb) {
      FragAcc s_frag;
      wmma::fill_fragment(s_frag, 0.f);
#pragma unroll
      for (int kk = 0; kk < kDFrags; ++kk) {
        FragB<T, wmma::col_major> k_frag;  // Kᵀ in column-major is K in row-major
        wmma::load_matrix_sync(k_frag, sm.k + nb * 16 * kLdKV + kk * 16, kLdKV);
        wmma::mma_sync(s_frag, q_frag[kk], k_frag, s_frag);
      }
      wmma::store_matrix_sync(s_w + nb * 16, s_frag, kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // Online softmax on the warp's rows.
    float sv[kCols];
    float tile_max = kNegInf;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int j = tile + my_c0 + c;
      sv[c] = hd.visible(my_row, j) ? s_w[my_r * kLdS + my_c0 + c] * hd.scale_log2 : kNegInf;
      tile_max = fmaxf(tile_max, sv[c]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m, tile_max);
    const float alpha = rescale_factor(m, m_new);
    float p_sum = 0.f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const float p = shifted_exp2(sv[c], m_new);
      p_sum += p;
      p_w[my_r * kLdP + my_c0 + c] = Elem<T>::from_float(p);
    }
    p_sum += __shfl_xor_sync(0xffffffffu, p_sum, 1);
    l = l * alpha + p_sum;
    m = m_new;
    if (lane % 2 == 0) sm.alpha[warp][my_r] = alpha;
    __syncwarp();

    // O <- O * alpha (per row), through the scratch tile.
    if (!__all_sync(0xffffffffu, alpha == 1.f)) {
#pragma unroll
      for (int f = 0; f < kDFrags; ++f) {
        wmma::store_matrix_sync(s_w, o_frag[f], 16, wmma::mem_row_major);
        __syncwarp();
        scale_rows(s_w, sm.alpha[warp], lane);
        __syncwarp();
        wmma::load_matrix_sync(o_frag[f], s_w, 16, wmma::mem_row_major);
        __syncwarp();
      }
    }

    // O += P·V.
#pragma unroll
    for (int kb = 0; kb < kTileN / 16; ++kb) {
      FragA<T> p_frag;
      wmma::load_matrix_sync(p_frag, p_w + kb * 16, kLdP);
#pragma unroll
      for (int f = 0; f < kDFrags; ++f) {
        FragB<T, wmma::row_major> v_frag;
        wmma::load_matrix_sync(v_frag, sm.v + kb * 16 * kLdKV + f * 16, kLdKV);
        wmma::mma_sync(o_frag[f], p_frag, v_frag, o_frag[f]);
      }
    }
  }

  // O / l, written row by row; rows past seq_q are never written.
  if (lane % 2 == 0) sm.inv_l[warp][my_r] = l > 0.f ? 1.f / l : 0.f;
  __syncwarp();
#pragma unroll
  for (int f = 0; f < kDFrags; ++f) {
    wmma::store_matrix_sync(s_w, o_frag[f], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
      const int r = e / 16;
      const int row = warp_row0 + r;
      if (row < hd.seq_q) {
        hd.o[static_cast<size_t>(row) * D + f * 16 + e % 16] = Elem<T>::from_float(s_w[e] * sm.inv_l[warp][r]);
      }
    }
    __syncwarp();
  }
}

}  // namespace

// WMMA_KERNEL instantiates one extern "C" entry point; the Go spec derives
// the same names from (dtype, head dim, warps, tile_n).
#define WMMA_KERNEL(NAME, T, D, WARPS, TILE_N)                                                                 \
  extern "C" __global__ void __launch_bounds__(WARPS * 32)                                                     \
      NAME(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,      \
           int heads, int kv_heads, int seq_q, int seq_k, int causal, float scale_log2) {                     \
    wmma_attention<T, D, WARPS, TILE_N>(                                                                       \
        head_of<D>(q, k, v, o, heads, kv_heads, seq_q, seq_k, causal, scale_log2));                           \
  }

// The tunable space (plugins/cuda-wmma/backend.go lists the same values):
// warps 1, 2, 4, 8 x tile_n 16, 32, for each dtype and head dim. Every one
// fits the 48 KB of static shared memory; tile_n 64 would not at D128 with
// more than one warp.
WMMA_KERNEL(attn_fwd_fp16_d64_warps1_n16, half, 64, 1, 16)
WMMA_KERNEL(attn_fwd_fp16_d64_warps1_n32, half, 64, 1, 32)
WMMA_KERNEL(attn_fwd_fp16_d64_warps2_n16, half, 64, 2, 16)
WMMA_KERNEL(attn_fwd_fp16_d64_warps2_n32, half, 64, 2, 32)
WMMA_KERNEL(attn_fwd_fp16_d64_warps4_n16, half, 64, 4, 16)
WMMA_KERNEL(attn_fwd_fp16_d64_warps4_n32, half, 64, 4, 32)
WMMA_KERNEL(attn_fwd_fp16_d64_warps8_n16, half, 64, 8, 16)
WMMA_KERNEL(attn_fwd_fp16_d64_warps8_n32, half, 64, 8, 32)
WMMA_KERNEL(attn_fwd_fp16_d128_warps1_n16, half, 128, 1, 16)
WMMA_KERNEL(attn_fwd_fp16_d128_warps1_n32, half, 128, 1, 32)
WMMA_KERNEL(attn_fwd_fp16_d128_warps2_n16, half, 128, 2, 16)
WMMA_KERNEL(attn_fwd_fp16_d128_warps2_n32, half, 128, 2, 32)
WMMA_KERNEL(attn_fwd_fp16_d128_warps4_n16, half, 128, 4, 16)
WMMA_KERNEL(attn_fwd_fp16_d128_warps4_n32, half, 128, 4, 32)
WMMA_KERNEL(attn_fwd_fp16_d128_warps8_n16, half, 128, 8, 16)
WMMA_KERNEL(attn_fwd_fp16_d128_warps8_n32, half, 128, 8, 32)
WMMA_KERNEL(attn_fwd_bf16_d64_warps1_n16, __nv_bfloat16, 64, 1, 16)
WMMA_KERNEL(attn_fwd_bf16_d64_warps1_n32, __nv_bfloat16, 64, 1, 32)
WMMA_KERNEL(attn_fwd_bf16_d64_warps2_n16, __nv_bfloat16, 64, 2, 16)
WMMA_KERNEL(attn_fwd_bf16_d64_warps2_n32, __nv_bfloat16, 64, 2, 32)
WMMA_KERNEL(attn_fwd_bf16_d64_warps4_n16, __nv_bfloat16, 64, 4, 16)
WMMA_KERNEL(attn_fwd_bf16_d64_warps4_n32, __nv_bfloat16, 64, 4, 32)
WMMA_KERNEL(attn_fwd_bf16_d64_warps8_n16, __nv_bfloat16, 64, 8, 16)
WMMA_KERNEL(attn_fwd_bf16_d64_warps8_n32, __nv_bfloat16, 64, 8, 32)
WMMA_KERNEL(attn_fwd_bf16_d128_warps1_n16, __nv_bfloat16, 128, 1, 16)
WMMA_KERNEL(attn_fwd_bf16_d128_warps1_n32, __nv_bfloat16, 128, 1, 32)
WMMA_KERNEL(attn_fwd_bf16_d128_warps2_n16, __nv_bfloat16, 128, 2, 16)
WMMA_KERNEL(attn_fwd_bf16_d128_warps2_n32, __nv_bfloat16, 128, 2, 32)
WMMA_KERNEL(attn_fwd_bf16_d128_warps4_n16, __nv_bfloat16, 128, 4, 16)
WMMA_KERNEL(attn_fwd_bf16_d128_warps4_n32, __nv_bfloat16, 128, 4, 32)
WMMA_KERNEL(attn_fwd_bf16_d128_warps8_n16, __nv_bfloat16, 128, 8, 16)
WMMA_KERNEL(attn_fwd_bf16_d128_warps8_n32, __nv_bfloat16, 128, 8, 32)
