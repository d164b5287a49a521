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
//
// The second op is rmsnorm (below the attention kernels): one block per row,
// fp32 accumulation, 16-byte loads where the row's length allows them.
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

// ---- rmsnorm -----------------------------------------------------------------
//
// y = x / sqrt(mean(x²) + eps) · weight over each row of x[rows, cols] (the op
// rmsnorm of package ops/rmsnorm). One block per row: each thread sums the
// squares of its share of the row in fp32, the block reduces the sum (shuffles
// within each warp, then the first warp over the warps' sums in shared
// memory), and each thread then scales its share, reading the row again (from
// L1 or L2: a row is at most a few tens of KB) and the weight. The order of
// the additions depends only on the block size, which the plan takes from
// cols, so every call gives the same bits.
//
// VEC is the elements one load moves: 16 bytes (8 halves, 4 floats) where
// VEC divides cols, so that every row starts on a 16-byte boundary (the
// driver's allocations are 256-byte aligned); 1 otherwise.

namespace {

// kRMSNormEps is the op's epsilon, part of its contract.
constexpr float kRMSNormEps = 1e-6f;

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(half v) { return __half2float(v); }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ half from_f32<half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

// Pack is VEC elements that travel as one load or store.
template <typename T, int VEC>
struct alignas(sizeof(T) * VEC) Pack {
  T e[VEC];
};

// block_sum is the sum of v over the block, in every thread. blockDim.x must
// be a multiple of 32 and every thread must call it.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[32];
  __shared__ float total;
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  v = group_sum<32>(v);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < static_cast<int>(blockDim.x / 32) ? warp_sums[lane] : 0.f;
    s = group_sum<32>(s);
    if (lane == 0) total = s;
  }
  __syncthreads();
  return total;
}

template <typename T, int VEC>
__device__ __forceinline__ void rmsnorm_row(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y,
                                            int row, int cols) {
  using P = Pack<T, VEC>;
  const size_t base = static_cast<size_t>(row) * cols;
  const P* xr = reinterpret_cast<const P*>(x + base);
  const P* wr = reinterpret_cast<const P*>(weight);
  P* yr = reinterpret_cast<P*>(y + base);
  const int packs = cols / VEC;  // the plan picks a VEC that divides cols

  float sum_sq = 0.f;
  for (int i = threadIdx.x; i < packs; i += blockDim.x) {
    const P p = xr[i];
#pragma unroll
    for (int k = 0; k < VEC; ++k) {
      const float v = to_f32(p.e[k]);
      sum_sq = fmaf(v, v, sum_sq);
    }
  }
  // IEEE division and square root: once per row, and fp32 outputs are held
  // to 2e-5 of the fp64 reference.
  const float inv_rms = 1.f / sqrtf(block_sum(sum_sq) / static_cast<float>(cols) + kRMSNormEps);
  for (int i = threadIdx.x; i < packs; i += blockDim.x) {
    const P p = xr[i];
    const P w = wr[i];
    P out;
#pragma unroll
    for (int k = 0; k < VEC; ++k) out.e[k] = from_f32<T>(to_f32(p.e[k]) * inv_rms * to_f32(w.e[k]));
    yr[i] = out;
  }
}

}  // namespace

// RMSNORM_KERNEL instantiates one extern "C" entry point,
// rmsnorm_<dtype>_v<VEC>, as cudakit.OpKernelName names it. Its
// parameters are the op's tensors in order (x, weight, y), then rows and
// cols; the grid is one block per row.
#define RMSNORM_KERNEL(NAME, T, VEC)                                                                           \
  extern "C" __global__ void __launch_bounds__(1024)                                                           \
      NAME(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y, int rows, int cols) {     \
    const int row = blockIdx.x;                                                                                \
    if (row < rows) rmsnorm_row<T, VEC>(x, weight, y, row, cols);                                               \
  }

RMSNORM_KERNEL(rmsnorm_fp16_v8, half, 8)
RMSNORM_KERNEL(rmsnorm_fp16_v1, half, 1)
RMSNORM_KERNEL(rmsnorm_bf16_v8, __nv_bfloat16, 8)
RMSNORM_KERNEL(rmsnorm_bf16_v1, __nv_bfloat16, 1)
RMSNORM_KERNEL(rmsnorm_fp32_v4, float, 4)
RMSNORM_KERNEL(rmsnorm_fp32_v1, float, 1)
