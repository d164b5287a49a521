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
//
// The backward (mode bwd: dQ, dK and dV from Q, K, V, O, dO and the row
// log-sum-exp) is the second half of this file, two kernels per dtype and
// head dim; its design is written above them.
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

// ---- backward ----------------------------------------------------------------
//
// Attention backward (mode bwd) in two kernels that one call runs in order,
// FlashAttention-2's split: neither needs atomics, and each writes its
// outputs once.
//
//  1. attn_bwd_*_dkdv: one block per KEYS rows of K and V of one (batch,
//     key/value head); each warp owns 16 of those keys, whose K and V rows
//     stay in shared memory. The block walks every query head of the group
//     and every query block of ROWS rows that can see a key of the block
//     (causal blocks start at the diagonal), staging Q, dO, lse and
//     Delta = rowsum(dO ∘ O) for it. Per query block each warp computes, on
//     tensor cores, Sᵀ = K·Qᵀ (16 x ROWS), then Pᵀ = exp(scale·Sᵀ − lse),
//     masked, dV += Pᵀ·dO, dPᵀ = V·dOᵀ, dSᵀ = Pᵀ ∘ (dPᵀ − Delta) and
//     dK += dSᵀ·Q. dK and dV are fp32 accumulator fragments for the whole
//     walk, written once (dK times scale).
//  2. attn_bwd_*_dq: one block per ROWS query rows of one (batch, head);
//     each warp owns 16 rows, whose Q and dO rows it keeps as A-fragments.
//     Per tile of KEYS keys it computes S = Q·Kᵀ, P, dP = dO·Vᵀ and
//     dS = P ∘ (dP − Delta), and dQ += dS·K; dQ is written once, times
//     scale.
//
// Scores leave the accumulators through a per-warp fp32 tile in shared
// memory (a fragment's element order is opaque), where two lanes per row
// mask them and turn them into P and dS; P and dS go to the tensor cores in
// the input type, as in the forward's P·V. lse is the natural log, so
// P = exp2(S·scale·log2(e) − lse·log2(e)). Every load is guarded: rows
// past seq_q and keys past seq_k are staged as zeros and masked, and only
// rows inside the tensors are written.

namespace {

constexpr float kLog2e = 1.4426950408889634f;

// BwdRows are the base pointers of one (batch, head) pair's rows of the
// backward's query-side inputs.
template <typename T>
struct BwdRows {
  const T* q;
  const T* o;
  const T* dout;
  const float* lse;
};

// query_row0 is the index of row 0 of head h of batch entry b among the
// B·H·Sq query rows.
__device__ __forceinline__ size_t query_row0(int b, int h, int heads, int seq_q) {
  return (static_cast<size_t>(b) * heads + h) * seq_q;
}

template <typename T>
__device__ __forceinline__ BwdRows<T> query_rows(const T* q, const T* o, const T* dout, const float* lse,
                                                 size_t row0, int d) {
  return BwdRows<T>{q + row0 * d, o + row0 * d, dout + row0 * d, lse + row0};
}

// load_rows_pair copies rows [row0, row0+ROWS) of two [n_rows, D] matrices
// into shared memory (row stride LD) with 16-byte loads, zeros at or past
// n_rows. All THREADS threads take part.
template <int ROWS, int D, int LD, int THREADS, typename T>
__device__ __forceinline__ void load_rows_pair(T* dst_a, T* dst_b, const T* src_a, const T* src_b, int row0,
                                               int n_rows) {
  constexpr int kChunks = D / kVec;
  for (int c = threadIdx.x; c < ROWS * kChunks; c += THREADS) {
    const int r = c / kChunks;
    const int col = (c % kChunks) * kVec;
    const int row = row0 + r;
    uint4 a = make_uint4(0, 0, 0, 0);
    uint4 b = a;
    if (row < n_rows) {
      const size_t at = static_cast<size_t>(row) * D + col;
      a = *reinterpret_cast<const uint4*>(src_a + at);
      b = *reinterpret_cast<const uint4*>(src_b + at);
    }
    *reinterpret_cast<uint4*>(dst_a + r * LD + col) = a;
    *reinterpret_cast<uint4*>(dst_b + r * LD + col) = b;
  }
}

// dot8 is the fp32 dot product of two 16-byte vectors of T.
template <typename T>
__device__ __forceinline__ float dot8(const uint4& a, const uint4& b) {
  float x[kVec], y[kVec];
  unpack8<T>(a, x);
  unpack8<T>(b, y);
  float s = 0.f;
#pragma unroll
  for (int e = 0; e < kVec; ++e) s = fmaf(x[e], y[e], s);
  return s;
}

// write_rows stores a 16 x D block of fp32 accumulators, times factor, as
// rows [row0, row0+16) of a [n_rows, D] matrix of T, through the warp's
// scratch tile (at least 256 floats); rows at or past n_rows are not
// written.
template <typename T, int D>
__device__ __forceinline__ void write_rows(T* dst, const FragAcc (&acc)[D / 16], float* scratch, int row0,
                                           int n_rows, float factor, int lane) {
#pragma unroll
  for (int f = 0; f < D / 16; ++f) {
    wmma::store_matrix_sync(scratch, acc[f], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
      const int row = row0 + e / 16;
      if (row < n_rows) dst[static_cast<size_t>(row) * D + f * 16 + e % 16] = Elem<T>::from_float(scratch[e] * factor);
    }
    __syncwarp();
  }
}

// ---- kernel 1: dK and dV -------------------------------------------------------

// At D128 a warp's 2·8 accumulator fragments take 128 registers, so Pᵀ in
// fp32 waits in shared memory (kPInShared: the score tile holds it, and
// dPᵀ gets a tile of its own) instead of in 16 more registers per lane;
// at D64 the registers are there and the shared memory is not.
template <typename T, int D, int KEYS, int ROWS>
struct DkdvShared {
  static constexpr int kWarps = KEYS / 16;
  static constexpr int kLd = D + 8;      // padding staggers rows across banks
  static constexpr int kLdS = ROWS + 4;  // fp32 stride of a warp's score tile
  static constexpr int kLdP = ROWS + 8;  // element stride of a warp's Pᵀ / dSᵀ tile
  static constexpr bool kPInShared = D >= 128;
  static constexpr int kScoreTiles = kPInShared ? 2 : 1;
  alignas(128) T k[KEYS * kLd];
  alignas(128) T v[KEYS * kLd];
  alignas(128) T q[ROWS * kLd];
  alignas(128) T dout[ROWS * kLd];
  alignas(128) float s[kWarps][kScoreTiles * 16 * kLdS];  // Sᵀ, then Pᵀ or dPᵀ; output staging
  alignas(128) T p[kWarps][16 * kLdP];                    // Pᵀ, then dSᵀ
  float lse2[ROWS];                                       // lse·log2(e) of each staged query row
  float delta[ROWS];                                      // rowsum(dO ∘ O) of each staged query row
};

// warp_abt stores one warp's 16 x ROWS product A·Bᵀ to its fp32 tile out
// (stride LDS): A is 16 rows of T (stride LD), the warp's rows of K or V;
// B is ROWS rows of T (stride LD), the staged Q or dO.
template <typename T, int D, int ROWS, int LD, int LDS>
__device__ __forceinline__ void warp_abt(float* out, const T* a, const T* b) {
#pragma unroll
  for (int nb = 0; nb < ROWS / 16; ++nb) {
    FragAcc acc;
    wmma::fill_fragment(acc, 0.f);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      FragA<T> fa;
      FragB<T, wmma::col_major> fb;  // Bᵀ in column-major is B in row-major
      wmma::load_matrix_sync(fa, a + kk * 16, LD);
      wmma::load_matrix_sync(fb, b + nb * 16 * LD + kk * 16, LD);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(out + nb * 16, acc, LDS, wmma::mem_row_major);
  }
}

// warp_ab_acc adds A·B to acc: A the warp's 16 x INNER tile of T (stride
// LDA), B an INNER x D tile of T in shared memory (stride LDB). The slabs
// of 16 inner columns are not unrolled: unrolled, the compiler hoists every
// B fragment's load (64 registers at D128) and spills beside the
// accumulators.
template <typename T, int D, int INNER, int LDA, int LDB>
__device__ __forceinline__ void warp_ab_acc(FragAcc (&acc)[D / 16], const T* a, const T* b) {
#pragma unroll 1
  for (int kb = 0; kb < INNER / 16; ++kb) {
    FragA<T> fa;
    wmma::load_matrix_sync(fa, a + kb * 16, LDA);
#pragma unroll
    for (int f = 0; f < D / 16; ++f) {
      FragB<T, wmma::row_major> fb;
      wmma::load_matrix_sync(fb, b + kb * 16 * LDB + f * 16, LDB);
      wmma::mma_sync(acc[f], fa, fb, acc[f]);
    }
  }
}

template <typename T, int D, int KEYS, int ROWS>
__device__ __forceinline__ void wmma_dkdv(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                          const T* __restrict__ o, const T* __restrict__ dout,
                                          const float* __restrict__ lse, T* __restrict__ dk, T* __restrict__ dv,
                                          int heads, int kv_heads, int seq_q, int seq_k, bool causal, float scale) {
  using Shared = DkdvShared<T, D, KEYS, ROWS>;
  constexpr int kThreads = Shared::kWarps * 32;
  constexpr int kLd = Shared::kLd;
  constexpr int kLdS = Shared::kLdS;
  constexpr int kLdP = Shared::kLdP;
  constexpr int kChunks = D / kVec;  // 16-byte chunks per row
  constexpr int kCols = ROWS / 2;    // query columns per lane
  static_assert(ROWS % 16 == 0 && 16 * kLdS >= 256, "the score tile doubles as a 16x16 output tile");
  static_assert((ROWS * kChunks) % kThreads == 0 && 32 % kChunks == 0, "whole rows per pass of the block");
  __shared__ Shared sm;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int b = blockIdx.z;
  const int kv_h = blockIdx.y;
  const int key0 = blockIdx.x * KEYS;
  const int warp_key0 = key0 + warp * 16;
  const int group = heads / kv_heads;
  const float scale_log2 = scale * kLog2e;
  float* s_w = sm.s[warp];
  float* dp_w = s_w + (Shared::kPInShared ? 16 * kLdS : 0);
  T* p_w = sm.p[warp];

  const size_t kv_row0 = (static_cast<size_t>(b) * kv_heads + kv_h) * seq_k;
  load_rows_pair<KEYS, D, kLd, kThreads>(sm.k, sm.v, k + kv_row0 * D, v + kv_row0 * D, key0, seq_k);

  FragAcc dk_acc[D / 16], dv_acc[D / 16];
#pragma unroll
  for (int f = 0; f < D / 16; ++f) {
    wmma::fill_fragment(dk_acc[f], 0.f);
    wmma::fill_fragment(dv_acc[f], 0.f);
  }

  // Elementwise ownership of the warp's 16 x ROWS tiles: two lanes per key.
  const int my_r = lane / 2;
  const int my_c0 = (lane % 2) * kCols;
  const int my_key = warp_key0 + my_r;
  // Causal: query rows before key0 see none of the block's keys.
  const int first_row = causal ? key0 / ROWS * ROWS : 0;

  for (int hh = 0; hh < group; ++hh) {
    const BwdRows<T> rows = query_rows(q, o, dout, lse, query_row0(b, kv_h * group + hh, heads, seq_q), D);
    for (int row0 = first_row; row0 < seq_q; row0 += ROWS) {
      __syncthreads();  // every warp is done with the previous Q and dO tiles
      for (int c = threadIdx.x; c < ROWS * kChunks; c += kThreads) {
        const int r = c / kChunks;
        const int col = (c % kChunks) * kVec;
        const int row = row0 + r;
        uint4 qraw = make_uint4(0, 0, 0, 0);
        uint4 doraw = qraw;
        float part = 0.f;
        if (row < seq_q) {
          const size_t at = static_cast<size_t>(row) * D + col;
          qraw = *reinterpret_cast<const uint4*>(rows.q + at);
          doraw = *reinterpret_cast<const uint4*>(rows.dout + at);
          part = dot8<T>(doraw, *reinterpret_cast<const uint4*>(rows.o + at));
        }
        *reinterpret_cast<uint4*>(sm.q + r * kLd + col) = qraw;
        *reinterpret_cast<uint4*>(sm.dout + r * kLd + col) = doraw;
        part = group_sum<kChunks>(part);
        if (c % kChunks == 0) {
          sm.delta[r] = part;
          sm.lse2[r] = row < seq_q ? rows.lse[row] * kLog2e : 0.f;
        }
      }
      __syncthreads();
      if (warp_key0 >= seq_k || (causal && row0 + ROWS - 1 < warp_key0)) continue;  // nothing visible

      // Sᵀ = K·Qᵀ, then Pᵀ, kept in fp32 (by the lanes or in the score
      // tile) and in T for the MMA.
      warp_abt<T, D, ROWS, kLd, kLdS>(s_w, sm.k + warp * 16 * kLd, sm.q);
      __syncwarp();
      float p[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int i = row0 + my_c0 + c;
        const int at = my_r * kLdS + my_c0 + c;
        const bool seen = i < seq_q && my_key < seq_k && (!causal || my_key <= i);
        p[c] = seen ? fast_exp2(s_w[at] * scale_log2 - sm.lse2[my_c0 + c]) : 0.f;
        if (Shared::kPInShared) s_w[at] = p[c];
        p_w[my_r * kLdP + my_c0 + c] = Elem<T>::from_float(p[c]);
      }
      __syncwarp();

      // dPᵀ = V·dOᵀ; dV += Pᵀ·dO.
      warp_abt<T, D, ROWS, kLd, kLdS>(dp_w, sm.v + warp * 16 * kLd, sm.dout);
      warp_ab_acc<T, D, ROWS, kLdP, kLd>(dv_acc, p_w, sm.dout);
      __syncwarp();

      // dSᵀ = Pᵀ ∘ (dPᵀ − Delta) replaces Pᵀ; dK += dSᵀ·Q.
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int at = my_r * kLdS + my_c0 + c;
        const float pc = Shared::kPInShared ? s_w[at] : p[c];
        p_w[my_r * kLdP + my_c0 + c] = Elem<T>::from_float(pc * (dp_w[at] - sm.delta[my_c0 + c]));
      }
      __syncwarp();
      warp_ab_acc<T, D, ROWS, kLdP, kLd>(dk_acc, p_w, sm.q);
    }
  }

  // Keys no query row sees get zeros; keys past seq_k are not written.
  write_rows<T, D>(dk + kv_row0 * D, dk_acc, s_w, warp_key0, seq_k, scale, lane);
  write_rows<T, D>(dv + kv_row0 * D, dv_acc, s_w, warp_key0, seq_k, 1.f, lane);
}

// ---- kernel 2: dQ ----------------------------------------------------------------

template <typename T, int D, int ROWS, int KEYS>
struct DqShared {
  static constexpr int kWarps = ROWS / 16;
  static constexpr int kLd = D + 8;
  static constexpr int kLdS = KEYS + 4;
  static constexpr int kLdP = KEYS + 8;
  alignas(128) T k[KEYS * kLd];
  alignas(128) T v[KEYS * kLd];
  alignas(128) float s[kWarps][16 * kLdS];  // S, then dP, then output staging
  alignas(128) T p[kWarps][16 * kLdP];      // Q and dO staging, then dS
  float lse2[kWarps][16];
  float delta[kWarps][16];
};

template <typename T, int D, int ROWS, int KEYS>
__device__ __forceinline__ void wmma_dq(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                                        const T* __restrict__ o, const T* __restrict__ dout,
                                        const float* __restrict__ lse, T* __restrict__ dq, int heads, int kv_heads,
                                        int seq_q, int seq_k, bool causal, float scale) {
  using Shared = DqShared<T, D, ROWS, KEYS>;
  constexpr int kThreads = Shared::kWarps * 32;
  constexpr int kLd = Shared::kLd;
  constexpr int kLdS = Shared::kLdS;
  constexpr int kLdP = Shared::kLdP;
  constexpr int kChunks = D / kVec;
  constexpr int kCols = KEYS / 2;  // key columns per lane
  static_assert(KEYS % 16 == 0 && 16 * kLdS >= 256 && kLdP >= 16, "tiles double as 16x16 staging");
  static_assert((16 * kChunks) % 32 == 0 && 32 % kChunks == 0, "whole rows per pass of the warp");
  __shared__ Shared sm;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int b = blockIdx.z;
  const int h = blockIdx.y;
  const int kv_h = h / (heads / kv_heads);
  const int row0 = blockIdx.x * ROWS;
  const int warp_row0 = row0 + warp * 16;
  const float scale_log2 = scale * kLog2e;
  float* s_w = sm.s[warp];
  T* p_w = sm.p[warp];
  const T zero = Elem<T>::from_float(0.f);

  const size_t q_row0 = query_row0(b, h, heads, seq_q);
  const BwdRows<T> rows = query_rows(q, o, dout, lse, q_row0, D);
  const size_t kv_row0 = (static_cast<size_t>(b) * kv_heads + kv_h) * seq_k;

  // Delta and lse of the warp's rows.
  for (int c = lane; c < 16 * kChunks; c += 32) {
    const int r = c / kChunks;
    const int row = warp_row0 + r;
    float part = 0.f;
    if (row < seq_q) {
      const size_t at = static_cast<size_t>(row) * D + (c % kChunks) * kVec;
      part = dot8<T>(*reinterpret_cast<const uint4*>(rows.dout + at), *reinterpret_cast<const uint4*>(rows.o + at));
    }
    part = group_sum<kChunks>(part);
    if (c % kChunks == 0) {
      sm.delta[warp][r] = part;
      sm.lse2[warp][r] = row < seq_q ? rows.lse[row] * kLog2e : 0.f;
    }
  }

  // The warp's Q and dO rows become A-fragments, staged 16 columns at a time.
  FragA<T> q_frag[D / 16], do_frag[D / 16];
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
    for (int which = 0; which < 2; ++which) {
      const T* src = which == 0 ? rows.q : rows.dout;
      for (int e = lane; e < 256; e += 32) {
        const int row = warp_row0 + e / 16;
        p_w[(e / 16) * kLdP + e % 16] = row < seq_q ? src[static_cast<size_t>(row) * D + kk * 16 + e % 16] : zero;
      }
      __syncwarp();
      wmma::load_matrix_sync(which == 0 ? q_frag[kk] : do_frag[kk], p_w, kLdP);
      __syncwarp();
    }
  }

  FragAcc dq_acc[D / 16];
#pragma unroll
  for (int f = 0; f < D / 16; ++f) wmma::fill_fragment(dq_acc[f], 0.f);

  const int my_r = lane / 2;
  const int my_c0 = (lane % 2) * kCols;
  const int my_row = warp_row0 + my_r;
  const float my_lse2 = sm.lse2[warp][my_r];
  const float my_delta = sm.delta[warp][my_r];
  // Causal blocks stop at their last row's diagonal.
  const int key_end = causal ? min(seq_k, row0 + ROWS) : seq_k;

  for (int key0 = 0; key0 < key_end; key0 += KEYS) {
    __syncthreads();  // every warp is done with the previous K and V tiles
    load_rows_pair<KEYS, D, kLd, kThreads>(sm.k, sm.v, k + kv_row0 * D, v + kv_row0 * D, key0, seq_k);
    __syncthreads();
    if (warp_row0 >= seq_q || (causal && key0 > warp_row0 + 15)) continue;  // nothing visible

    // S = Q·Kᵀ, then P in fp32 by the lanes.
#pragma unroll
    for (int nb = 0; nb < KEYS / 16; ++nb) {
      FragAcc acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        FragB<T, wmma::col_major> fb;
        wmma::load_matrix_sync(fb, sm.k + nb * 16 * kLd + kk * 16, kLd);
        wmma::mma_sync(acc, q_frag[kk], fb, acc);
      }
      wmma::store_matrix_sync(s_w + nb * 16, acc, kLdS, wmma::mem_row_major);
    }
    __syncwarp();
    float p[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int j = key0 + my_c0 + c;
      const bool seen = my_row < seq_q && j < seq_k && (!causal || j <= my_row);
      p[c] = seen ? fast_exp2(s_w[my_r * kLdS + my_c0 + c] * scale_log2 - my_lse2) : 0.f;
    }
    __syncwarp();

    // dP = dO·Vᵀ into the score tile.
#pragma unroll
    for (int nb = 0; nb < KEYS / 16; ++nb) {
      FragAcc acc;
      wmma::fill_fragment(acc, 0.f);
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        FragB<T, wmma::col_major> fb;
        wmma::load_matrix_sync(fb, sm.v + nb * 16 * kLd + kk * 16, kLd);
        wmma::mma_sync(acc, do_frag[kk], fb, acc);
      }
      wmma::store_matrix_sync(s_w + nb * 16, acc, kLdS, wmma::mem_row_major);
    }
    __syncwarp();

    // dS = P ∘ (dP − Delta); dQ += dS·K.
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const float ds = p[c] * (s_w[my_r * kLdS + my_c0 + c] - my_delta);
      p_w[my_r * kLdP + my_c0 + c] = Elem<T>::from_float(ds);
    }
    __syncwarp();
    warp_ab_acc<T, D, KEYS, kLdP, kLd>(dq_acc, p_w, sm.k);
  }

  write_rows<T, D>(dq + q_row0 * D, dq_acc, s_w, warp_row0, seq_q, scale, lane);
}

}  // namespace

// The backward kernels' parameters are the tensors of mode bwd in the op's
// order (q, k, v, o, do, lse, then dq, dk, dv: cudakit.TensorParams), then
// heads, kv_heads, seq_q, seq_k, causal and the softmax scale (not times
// log2(e)). Grids: (key blocks, kv_heads, batch) for dK/dV, (query blocks,
// heads, batch) for dQ. The Go spec derives the names from (dtype, head
// dim, keys, rows).
#define WMMA_BWD_PARAMS(T)                                                                                     \
  const T *__restrict__ q, const T *__restrict__ k, const T *__restrict__ v, const T *__restrict__ o,          \
      const T *__restrict__ dout, const float *__restrict__ lse, T *__restrict__ dq, T *__restrict__ dk,       \
      T *__restrict__ dv, int heads, int kv_heads, int seq_q, int seq_k, int causal, float scale

#define WMMA_DKDV_KERNEL(NAME, T, D, KEYS, ROWS)                                                               \
  extern "C" __global__ void __launch_bounds__(KEYS * 2) NAME(WMMA_BWD_PARAMS(T)) {                            \
    (void)dq;                                                                                                  \
    wmma_dkdv<T, D, KEYS, ROWS>(q, k, v, o, dout, lse, dk, dv, heads, kv_heads, seq_q, seq_k, causal != 0,     \
                                scale);                                                                        \
  }

#define WMMA_DQ_KERNEL(NAME, T, D, ROWS, KEYS)                                                                 \
  extern "C" __global__ void __launch_bounds__(ROWS * 2) NAME(WMMA_BWD_PARAMS(T)) {                            \
    (void)dk;                                                                                                  \
    (void)dv;                                                                                                  \
    wmma_dq<T, D, ROWS, KEYS>(q, k, v, o, dout, lse, dq, heads, kv_heads, seq_q, seq_k, causal != 0, scale);  \
  }

// The backward's blocks (plugins/cuda-wmma/backend.go lists the same):
// dK/dV takes 64 keys (4 warps) by 32 query rows at D64 and 32 keys (2
// warps) at D128, dQ 64 query rows (4 warps) by 32 keys; every one fits
// the 48 KB of static shared memory (the largest, dK/dV at D128, takes
// 46848 bytes).
WMMA_DKDV_KERNEL(attn_bwd_fp16_d64_dkdv_k64_q32, half, 64, 64, 32)
WMMA_DKDV_KERNEL(attn_bwd_fp16_d128_dkdv_k32_q32, half, 128, 32, 32)
WMMA_DKDV_KERNEL(attn_bwd_bf16_d64_dkdv_k64_q32, __nv_bfloat16, 64, 64, 32)
WMMA_DKDV_KERNEL(attn_bwd_bf16_d128_dkdv_k32_q32, __nv_bfloat16, 128, 32, 32)
WMMA_DQ_KERNEL(attn_bwd_fp16_d64_dq_q64_k32, half, 64, 64, 32)
WMMA_DQ_KERNEL(attn_bwd_fp16_d128_dq_q64_k32, half, 128, 64, 32)
WMMA_DQ_KERNEL(attn_bwd_bf16_d64_dq_q64_k32, __nv_bfloat16, 64, 64, 32)
WMMA_DQ_KERNEL(attn_bwd_bf16_d128_dq_q64_k32, __nv_bfloat16, 128, 64, 32)
