// cuda-v8: the best design of the FlashCore seed kernels, written anew:
// TILE_M-row query tiles (48 in the seed design), K/V tiles of TILE_N keys
// pipelined over STAGES shared-memory buffers with cp.async, WMMA tensor
// cores for Q·Kᵀ and P·V, padded shared-memory tiles, 16-byte vectorised
// global loads and stores, and dynamic shared memory (more than the 48 KB a
// kernel gets without opting in at head dim 128). TILE_M, TILE_N and STAGES
// are template parameters; each combination is its own kernel, and the
// plugin's tunables choose one.
//
// Block: TILE_M/8 warps as a (TILE_M/16)x2 grid, 4*TILE_M threads. Warp
// (wr, wc) owns query rows 16*wr..+15.
//   Q·Kᵀ:  it computes the score blocks of key columns in half wc of the tile;
//   softmax: 4 threads per row, TILE_N/4 columns each, with the row's
//            running max m and normaliser l in registers;
//   P·V:   it owns output columns in half wc of D, as D/32 fp32 accumulator
//          fragments, rescaled per row by exp2(m_old - m_new) through a
//          scratch tile (WMMA accumulators have no defined row order).
// Pipeline: STAGES-1 tiles are in flight ahead of the one computed. Tiles
// 0..STAGES-2 are loaded before the loop; iteration t loads tile
// t+STAGES-1 into the stage tile t-1 used (free since the trailing
// __syncthreads of iteration t-1), commits one group (possibly empty) and
// waits until at most STAGES-1 groups are pending, so tile t has landed.
// STAGES = 1 loads each tile just before it is computed.
// Rows past seq_q/seq_k are zero-filled by cp.async (src-size 0) and never
// written back.
#include <mma.h>

#include "attention.cuh"

using namespace flashcore;
using namespace nvcuda;

namespace {

// Warps and threads of a TILE_M-row block: two warps per 16-row strip.
__host__ __device__ constexpr int warps_for(int tile_m) { return tile_m / 8; }
__host__ __device__ constexpr int threads_for(int tile_m) { return tile_m * 4; }

constexpr int align128(int n) { return (n + 127) / 128 * 128; }

// V8Layout is the dynamic shared memory layout. The Go spec computes the same
// byte count (plugins/cuda-v8/backend.go, sharedBytes); the kernel traps if
// it is launched with less.
template <typename T, int D, int TILE_M, int TILE_N, int STAGES>
struct V8Layout {
  static constexpr int kTileM = TILE_M;
  static constexpr int kLdKV = D + 8;       // element stride of Q, K, V rows
  static constexpr int kLdS = TILE_N + 4;   // fp32 stride of the score tile
  static constexpr int kLdP = TILE_N + 8;   // element stride of the P tile
  static constexpr int kQBytes = align128(kTileM * kLdKV * sizeof(T));
  static constexpr int kKVStageBytes = align128(TILE_N * kLdKV * sizeof(T));
  static constexpr int kSBytes = align128(kTileM * kLdS * sizeof(float));
  static constexpr int kPBytes = align128(kTileM * kLdP * sizeof(T));
  static constexpr int kStatBytes = align128(2 * kTileM * sizeof(float));
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + kQBytes;
  static constexpr int kV = kK + STAGES * kKVStageBytes;
  static constexpr int kS = kV + STAGES * kKVStageBytes;
  static constexpr int kP = kS + kSBytes;
  static constexpr int kStat = kP + kPBytes;
  static constexpr int kBytes = kStat + kStatBytes;
  static_assert(kSBytes >= warps_for(TILE_M) * 256 * (int)sizeof(float), "score tile doubles as per-warp 16x16 scratch");
};

template <typename T>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <typename T, typename Layout>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, Layout>;
using FragAcc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

__device__ __forceinline__ void scale_rows(float* tile, const float* factor, int lane) {
#pragma unroll
  for (int e = lane; e < 256; e += 32) tile[e] *= factor[e / 16];
}

template <typename T, int D, int TILE_M, int TILE_N, int STAGES>
__device__ __forceinline__ void v8_attention(const Head<T>& hd, unsigned char* smem) {
  using L = V8Layout<T, D, TILE_M, TILE_N, STAGES>;
  constexpr int kTileM = TILE_M;
  constexpr int kThreads = threads_for(TILE_M);
  constexpr int kLdKV = L::kLdKV;
  constexpr int kLdS = L::kLdS;
  constexpr int kLdP = L::kLdP;
  constexpr int kQFrags = D / 16;
  constexpr int kOFrags = D / 32;            // each warp owns half of D
  constexpr int kSBlocks = TILE_N / 32;      // score blocks per warp
  constexpr int kSoftmaxCols = TILE_N / 4;   // columns per softmax thread
  static_assert(TILE_M % 16 == 0 && TILE_N % 32 == 0 && D % 32 == 0, "tile shapes");
  static_assert(STAGES >= 1 && STAGES <= 3, "cp_async_wait takes 0..2 pending groups here");
  require_dynamic_smem(L::kBytes);

  T* sQ = reinterpret_cast<T*>(smem + L::kQ);
  T* sK = reinterpret_cast<T*>(smem + L::kK);
  T* sV = reinterpret_cast<T*>(smem + L::kV);
  float* sS = reinterpret_cast<float*>(smem + L::kS);
  T* sP = reinterpret_cast<T*>(smem + L::kP);
  float* sAlpha = reinterpret_cast<float*>(smem + L::kStat);
  float* sInvL = sAlpha + kTileM;

  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int wr = warp / 2;
  const int wc = warp % 2;
  const int row0 = blockIdx.x * kTileM;
  const int n_tiles = (hd.key_end(row0, kTileM) + TILE_N - 1) / TILE_N;

  auto load_kv = [&](int t, int stage) {
    load_rows_async<TILE_N, D, kLdKV, kThreads>(sK + stage * TILE_N * kLdKV, hd.k, t * TILE_N, hd.seq_k);
    load_rows_async<TILE_N, D, kLdKV, kThreads>(sV + stage * TILE_N * kLdKV, hd.v, t * TILE_N, hd.seq_k);
  };

  // Q joins the first commit group; tiles 0..STAGES-2 are put in flight.
  load_rows_async<kTileM, D, kLdKV, kThreads>(sQ, hd.q, row0, hd.seq_q);
#pragma unroll
  for (int p = 0; p < STAGES - 1; ++p) {
    if (p < n_tiles) load_kv(p, p);
    cp_async_commit();
  }

  FragA<T> q_frag[kQFrags];
  FragAcc o_frag[kOFrags];
#pragma unroll
  for (int f = 0; f < kOFrags; ++f) wmma::fill_fragment(o_frag[f], 0.f);

  // Softmax ownership: row sr, columns part*kSoftmaxCols..+kSoftmaxCols.
  const int sr = threadIdx.x / 4;
  const int part = threadIdx.x % 4;
  const int s_row = row0 + sr;
  float m = kNegInf;
  float l = 0.f;
  float* scratch = sS + warp * 256;

  for (int t = 0; t < n_tiles; ++t) {
    const int stage = t % STAGES;
    const int ahead = t + STAGES - 1;
    if (ahead < n_tiles) load_kv(ahead, ahead % STAGES);
    cp_async_commit();  // possibly empty: one group per iteration
    cp_async_wait<STAGES - 1>();
    __syncthreads();
    if (t == 0) {
#pragma unroll
      for (int kk = 0; kk < kQFrags; ++kk) wmma::load_matrix_sync(q_frag[kk], sQ + wr * 16 * kLdKV + kk * 16, kLdKV);
    }
    const T* k_st = sK + stage * TILE_N * kLdKV;
    const T* v_st = sV + stage * TILE_N * kLdKV;
    const int tile = t * TILE_N;

    // S = Q·Kᵀ: rows of wr, key columns of half wc.
#pragma unroll
    for (int b = 0; b < kSBlocks; ++b) {
      const int nb = wc * kSBlocks + b;
      FragAcc s_frag;
      wmma::fill_fragment(s_frag, 0.f);
#pragma unroll
      for (int kk = 0; kk < kQFrags; ++kk) {
        FragB<T, wmma::col_major> k_frag;
        wmma::load_matrix_sync(k_frag, k_st + nb * 16 * kLdKV + kk * 16, kLdKV);
        wmma::mma_sync(s_frag, q_frag[kk], k_frag, s_frag);
      }
      wmma::store_matrix_sync(sS + wr * 16 * kLdS + nb * 16, s_frag, kLdS, wmma::mem_row_major);
    }
    __syncthreads();

    // Online softmax, 4 threads per row.
    float sv[kSoftmaxCols];
    float tile_max = kNegInf;
#pragma unroll
    for (int c = 0; c < kSoftmaxCols; ++c) {
      const int col = part * kSoftmaxCols + c;
      sv[c] = hd.visible(s_row, tile + col) ? sS[sr * kLdS + col] * hd.scale_log2 : kNegInf;
      tile_max = fmaxf(tile_max, sv[c]);
    }
    const float m_new = fmaxf(m, group_max<4>(tile_max));
    const float alpha = rescale_factor(m, m_new);
    float p_sum = 0.f;
#pragma unroll
    for (int c = 0; c < kSoftmaxCols; ++c) {
      const float p = shifted_exp2(sv[c], m_new);
      p_sum += p;
      sP[sr * kLdP + part * kSoftmaxCols + c] = Elem<T>::from_float(p);
    }
    l = l * alpha + group_sum<4>(p_sum);
    m = m_new;
    if (part == 0) sAlpha[sr] = alpha;
    __syncthreads();

    // O <- O * alpha per row, skipped when no row of this warp changed its max.
    if (!__all_sync(0xffffffffu, sAlpha[wr * 16 + lane % 16] == 1.f)) {
#pragma unroll
      for (int f = 0; f < kOFrags; ++f) {
        wmma::store_matrix_sync(scratch, o_frag[f], 16, wmma::mem_row_major);
        __syncwarp();
        scale_rows(scratch, sAlpha + wr * 16, lane);
        __syncwarp();
        wmma::load_matrix_sync(o_frag[f], scratch, 16, wmma::mem_row_major);
        __syncwarp();
      }
    }

    // O += P·V: rows of wr, output columns of half wc.
#pragma unroll
    for (int kb = 0; kb < TILE_N / 16; ++kb) {
      FragA<T> p_frag;
      wmma::load_matrix_sync(p_frag, sP + wr * 16 * kLdP + kb * 16, kLdP);
#pragma unroll
      for (int f = 0; f < kOFrags; ++f) {
        FragB<T, wmma::row_major> v_frag;
        wmma::load_matrix_sync(v_frag, v_st + kb * 16 * kLdKV + wc * (D / 2) + f * 16, kLdKV);
        wmma::mma_sync(o_frag[f], p_frag, v_frag, o_frag[f]);
      }
    }
    __syncthreads();  // the stage, the score tile and P are free again
  }
  cp_async_wait<0>();

  // O / l into the Q tile (in the output type), then 16-byte row stores.
  if (part == 0) sInvL[sr] = l > 0.f ? 1.f / l : 0.f;
  __syncthreads();
#pragma unroll
  for (int f = 0; f < kOFrags; ++f) {
    wmma::store_matrix_sync(scratch, o_frag[f], 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
      const int r = wr * 16 + e / 16;
      sQ[r * kLdKV + wc * (D / 2) + f * 16 + e % 16] = Elem<T>::from_float(scratch[e] * sInvL[r]);
    }
    __syncwarp();
  }
  __syncthreads();
  constexpr int kChunksPerRow = D / kVec;
  for (int c = threadIdx.x; c < kTileM * kChunksPerRow; c += kThreads) {
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * kVec;
    const int row = row0 + r;
    if (row < hd.seq_q) {
      *reinterpret_cast<uint4*>(hd.o + static_cast<size_t>(row) * D + col) =
          *reinterpret_cast<const uint4*>(sQ + r * kLdKV + col);
    }
  }
}

}  // namespace

// V8_KERNEL instantiates one extern "C" entry point; the Go spec derives the
// same names from (dtype, head dim, tile_m, tile_n, kv_stages).
#define V8_KERNEL(NAME, T, D, TILE_M, TILE_N, STAGES)                                                           \
  extern "C" __global__ void __launch_bounds__(threads_for(TILE_M))                                            \
      NAME(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,      \
           int heads, int kv_heads, int seq_q, int seq_k, int causal, float scale_log2) {                     \
    extern __shared__ __align__(128) unsigned char v8_smem[];                                                   \
    v8_attention<T, D, TILE_M, TILE_N, STAGES>(                                                                \
        head_of<D>(q, k, v, o, heads, kv_heads, seq_q, seq_k, causal, scale_log2), v8_smem);                  \
  }

// The tunable space (plugins/cuda-v8/backend.go lists the same values):
// tile_m 16, 32, 48, 64 x tile_n 32, 64 x kv_stages 1, 2, 3, for each dtype
// and head dim; one line per kernel so that the names can be read here.
V8_KERNEL(attn_fwd_fp16_d64_m16_n32_s1, half, 64, 16, 32, 1)
V8_KERNEL(attn_fwd_fp16_d64_m16_n32_s2, half, 64, 16, 32, 2)
V8_KERNEL(attn_fwd_fp16_d64_m16_n32_s3, half, 64, 16, 32, 3)
V8_KERNEL(attn_fwd_fp16_d64_m16_n64_s1, half, 64, 16, 64, 1)
V8_KERNEL(attn_fwd_fp16_d64_m16_n64_s2, half, 64, 16, 64, 2)
V8_KERNEL(attn_fwd_fp16_d64_m16_n64_s3, half, 64, 16, 64, 3)
V8_KERNEL(attn_fwd_fp16_d64_m32_n32_s1, half, 64, 32, 32, 1)
V8_KERNEL(attn_fwd_fp16_d64_m32_n32_s2, half, 64, 32, 32, 2)
V8_KERNEL(attn_fwd_fp16_d64_m32_n32_s3, half, 64, 32, 32, 3)
V8_KERNEL(attn_fwd_fp16_d64_m32_n64_s1, half, 64, 32, 64, 1)
V8_KERNEL(attn_fwd_fp16_d64_m32_n64_s2, half, 64, 32, 64, 2)
V8_KERNEL(attn_fwd_fp16_d64_m32_n64_s3, half, 64, 32, 64, 3)
V8_KERNEL(attn_fwd_fp16_d64_m48_n32_s1, half, 64, 48, 32, 1)
V8_KERNEL(attn_fwd_fp16_d64_m48_n32_s2, half, 64, 48, 32, 2)
V8_KERNEL(attn_fwd_fp16_d64_m48_n32_s3, half, 64, 48, 32, 3)
V8_KERNEL(attn_fwd_fp16_d64_m48_n64_s1, half, 64, 48, 64, 1)
V8_KERNEL(attn_fwd_fp16_d64_m48_n64_s2, half, 64, 48, 64, 2)
V8_KERNEL(attn_fwd_fp16_d64_m48_n64_s3, half, 64, 48, 64, 3)
V8_KERNEL(attn_fwd_fp16_d64_m64_n32_s1, half, 64, 64, 32, 1)
V8_KERNEL(attn_fwd_fp16_d64_m64_n32_s2, half, 64, 64, 32, 2)
V8_KERNEL(attn_fwd_fp16_d64_m64_n32_s3, half, 64, 64, 32, 3)
V8_KERNEL(attn_fwd_fp16_d64_m64_n64_s1, half, 64, 64, 64, 1)
V8_KERNEL(attn_fwd_fp16_d64_m64_n64_s2, half, 64, 64, 64, 2)
V8_KERNEL(attn_fwd_fp16_d64_m64_n64_s3, half, 64, 64, 64, 3)
V8_KERNEL(attn_fwd_fp16_d128_m16_n32_s1, half, 128, 16, 32, 1)
V8_KERNEL(attn_fwd_fp16_d128_m16_n32_s2, half, 128, 16, 32, 2)
V8_KERNEL(attn_fwd_fp16_d128_m16_n32_s3, half, 128, 16, 32, 3)
V8_KERNEL(attn_fwd_fp16_d128_m16_n64_s1, half, 128, 16, 64, 1)
V8_KERNEL(attn_fwd_fp16_d128_m16_n64_s2, half, 128, 16, 64, 2)
V8_KERNEL(attn_fwd_fp16_d128_m16_n64_s3, half, 128, 16, 64, 3)
V8_KERNEL(attn_fwd_fp16_d128_m32_n32_s1, half, 128, 32, 32, 1)
V8_KERNEL(attn_fwd_fp16_d128_m32_n32_s2, half, 128, 32, 32, 2)
V8_KERNEL(attn_fwd_fp16_d128_m32_n32_s3, half, 128, 32, 32, 3)
V8_KERNEL(attn_fwd_fp16_d128_m32_n64_s1, half, 128, 32, 64, 1)
V8_KERNEL(attn_fwd_fp16_d128_m32_n64_s2, half, 128, 32, 64, 2)
V8_KERNEL(attn_fwd_fp16_d128_m32_n64_s3, half, 128, 32, 64, 3)
V8_KERNEL(attn_fwd_fp16_d128_m48_n32_s1, half, 128, 48, 32, 1)
V8_KERNEL(attn_fwd_fp16_d128_m48_n32_s2, half, 128, 48, 32, 2)
V8_KERNEL(attn_fwd_fp16_d128_m48_n32_s3, half, 128, 48, 32, 3)
V8_KERNEL(attn_fwd_fp16_d128_m48_n64_s1, half, 128, 48, 64, 1)
V8_KERNEL(attn_fwd_fp16_d128_m48_n64_s2, half, 128, 48, 64, 2)
V8_KERNEL(attn_fwd_fp16_d128_m48_n64_s3, half, 128, 48, 64, 3)
V8_KERNEL(attn_fwd_fp16_d128_m64_n32_s1, half, 128, 64, 32, 1)
V8_KERNEL(attn_fwd_fp16_d128_m64_n32_s2, half, 128, 64, 32, 2)
V8_KERNEL(attn_fwd_fp16_d128_m64_n32_s3, half, 128, 64, 32, 3)
V8_KERNEL(attn_fwd_fp16_d128_m64_n64_s1, half, 128, 64, 64, 1)
V8_KERNEL(attn_fwd_fp16_d128_m64_n64_s2, half, 128, 64, 64, 2)
V8_KERNEL(attn_fwd_fp16_d128_m64_n64_s3, half, 128, 64, 64, 3)
V8_KERNEL(attn_fwd_bf16_d64_m16_n32_s1, __nv_bfloat16, 64, 16, 32, 1)
V8_KERNEL(attn_fwd_bf16_d64_m16_n32_s2, __nv_bfloat16, 64, 16, 32, 2)
V8_KERNEL(attn_fwd_bf16_d64_m16_n32_s3, __nv_bfloat16, 64, 16, 32, 3)
V8_KERNEL(attn_fwd_bf16_d64_m16_n64_s1, __nv_bfloat16, 64, 16, 64, 1)
V8_KERNEL(attn_fwd_bf16_d64_m16_n64_s2, __nv_bfloat16, 64, 16, 64, 2)
V8_KERNEL(attn_fwd_bf16_d64_m16_n64_s3, __nv_bfloat16, 64, 16, 64, 3)
V8_KERNEL(attn_fwd_bf16_d64_m32_n32_s1, __nv_bfloat16, 64, 32, 32, 1)
V8_KERNEL(attn_fwd_bf16_d64_m32_n32_s2, __nv_bfloat16, 64, 32, 32, 2)
V8_KERNEL(attn_fwd_bf16_d64_m32_n32_s3, __nv_bfloat16, 64, 32, 32, 3)
V8_KERNEL(attn_fwd_bf16_d64_m32_n64_s1, __nv_bfloat16, 64, 32, 64, 1)
V8_KERNEL(attn_fwd_bf16_d64_m32_n64_s2, __nv_bfloat16, 64, 32, 64, 2)
V8_KERNEL(attn_fwd_bf16_d64_m32_n64_s3, __nv_bfloat16, 64, 32, 64, 3)
V8_KERNEL(attn_fwd_bf16_d64_m48_n32_s1, __nv_bfloat16, 64, 48, 32, 1)
V8_KERNEL(attn_fwd_bf16_d64_m48_n32_s2, __nv_bfloat16, 64, 48, 32, 2)
V8_KERNEL(attn_fwd_bf16_d64_m48_n32_s3, __nv_bfloat16, 64, 48, 32, 3)
V8_KERNEL(attn_fwd_bf16_d64_m48_n64_s1, __nv_bfloat16, 64, 48, 64, 1)
V8_KERNEL(attn_fwd_bf16_d64_m48_n64_s2, __nv_bfloat16, 64, 48, 64, 2)
V8_KERNEL(attn_fwd_bf16_d64_m48_n64_s3, __nv_bfloat16, 64, 48, 64, 3)
V8_KERNEL(attn_fwd_bf16_d64_m64_n32_s1, __nv_bfloat16, 64, 64, 32, 1)
V8_KERNEL(attn_fwd_bf16_d64_m64_n32_s2, __nv_bfloat16, 64, 64, 32, 2)
V8_KERNEL(attn_fwd_bf16_d64_m64_n32_s3, __nv_bfloat16, 64, 64, 32, 3)
V8_KERNEL(attn_fwd_bf16_d64_m64_n64_s1, __nv_bfloat16, 64, 64, 64, 1)
V8_KERNEL(attn_fwd_bf16_d64_m64_n64_s2, __nv_bfloat16, 64, 64, 64, 2)
V8_KERNEL(attn_fwd_bf16_d64_m64_n64_s3, __nv_bfloat16, 64, 64, 64, 3)
V8_KERNEL(attn_fwd_bf16_d128_m16_n32_s1, __nv_bfloat16, 128, 16, 32, 1)
V8_KERNEL(attn_fwd_bf16_d128_m16_n32_s2, __nv_bfloat16, 128, 16, 32, 2)
V8_KERNEL(attn_fwd_bf16_d128_m16_n32_s3, __nv_bfloat16, 128, 16, 32, 3)
V8_KERNEL(attn_fwd_bf16_d128_m16_n64_s1, __nv_bfloat16, 128, 16, 64, 1)
V8_KERNEL(attn_fwd_bf16_d128_m16_n64_s2, __nv_bfloat16, 128, 16, 64, 2)
V8_KERNEL(attn_fwd_bf16_d128_m16_n64_s3, __nv_bfloat16, 128, 16, 64, 3)
V8_KERNEL(attn_fwd_bf16_d128_m32_n32_s1, __nv_bfloat16, 128, 32, 32, 1)
V8_KERNEL(attn_fwd_bf16_d128_m32_n32_s2, __nv_bfloat16, 128, 32, 32, 2)
V8_KERNEL(attn_fwd_bf16_d128_m32_n32_s3, __nv_bfloat16, 128, 32, 32, 3)
V8_KERNEL(attn_fwd_bf16_d128_m32_n64_s1, __nv_bfloat16, 128, 32, 64, 1)
V8_KERNEL(attn_fwd_bf16_d128_m32_n64_s2, __nv_bfloat16, 128, 32, 64, 2)
V8_KERNEL(attn_fwd_bf16_d128_m32_n64_s3, __nv_bfloat16, 128, 32, 64, 3)
V8_KERNEL(attn_fwd_bf16_d128_m48_n32_s1, __nv_bfloat16, 128, 48, 32, 1)
V8_KERNEL(attn_fwd_bf16_d128_m48_n32_s2, __nv_bfloat16, 128, 48, 32, 2)
V8_KERNEL(attn_fwd_bf16_d128_m48_n32_s3, __nv_bfloat16, 128, 48, 32, 3)
V8_KERNEL(attn_fwd_bf16_d128_m48_n64_s1, __nv_bfloat16, 128, 48, 64, 1)
V8_KERNEL(attn_fwd_bf16_d128_m48_n64_s2, __nv_bfloat16, 128, 48, 64, 2)
V8_KERNEL(attn_fwd_bf16_d128_m48_n64_s3, __nv_bfloat16, 128, 48, 64, 3)
V8_KERNEL(attn_fwd_bf16_d128_m64_n32_s1, __nv_bfloat16, 128, 64, 32, 1)
V8_KERNEL(attn_fwd_bf16_d128_m64_n32_s2, __nv_bfloat16, 128, 64, 32, 2)
V8_KERNEL(attn_fwd_bf16_d128_m64_n32_s3, __nv_bfloat16, 128, 64, 32, 3)
V8_KERNEL(attn_fwd_bf16_d128_m64_n64_s1, __nv_bfloat16, 128, 64, 64, 1)
V8_KERNEL(attn_fwd_bf16_d128_m64_n64_s2, __nv_bfloat16, 128, 64, 64, 2)
V8_KERNEL(attn_fwd_bf16_d128_m64_n64_s3, __nv_bfloat16, 128, 64, 64, 3)
