// attention.cuh: device helpers shared by the FlashCore attention kernels.
//
// The kernels of the Go CUDA plugins take the standard parameter list of
// docs/cuda.md ("The kernel contract"), the one place it is written down:
// q, k, v, o, heads, kv_heads, seq_q, seq_k, causal, then the softmax scale
// times log2(e) (scale_log2 below), so p = exp2(s - m). Their grid is
// (query tiles, heads, batch).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace flashcore {

constexpr float kNegInf = -__builtin_huge_valf();

// ---- element types ---------------------------------------------------------

template <typename T> struct Elem;

template <> struct Elem<half> {
  static __device__ __forceinline__ float to_float(half x) { return __half2float(x); }
  static __device__ __forceinline__ half from_float(float x) { return __float2half_rn(x); }
};

template <> struct Elem<__nv_bfloat16> {
  static __device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }
};

// Eight elements travel as one 16-byte vector.
constexpr int kVec = 8;

template <typename T>
__device__ __forceinline__ void unpack8(const uint4& raw, float out[kVec]) {
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec; ++i) out[i] = Elem<T>::to_float(e[i]);
}

template <typename T>
__device__ __forceinline__ uint4 pack8(const float in[kVec]) {
  uint4 raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec; ++i) e[i] = Elem<T>::from_float(in[i]);
  return raw;
}

// ---- problem geometry --------------------------------------------------------

// Head holds the base pointers of one (batch, head) pair and the problem
// sizes the kernels need.
template <typename T> struct Head {
  const T* q;
  const T* k;
  const T* v;
  T* o;
  int seq_q;
  int seq_k;
  bool causal;
  float scale_log2;

  // visible reports whether query row i sees key row j.
  __device__ __forceinline__ bool visible(int i, int j) const {
    return j < seq_k && (!causal || j <= i);
  }

  // key_end is one past the last key any of the query rows [row0, row0+rows)
  // can see: causal blocks stop at their last row's diagonal.
  __device__ __forceinline__ int key_end(int row0, int rows) const {
    return causal ? min(seq_k, row0 + rows) : seq_k;
  }
};

template <int D, typename T>
__device__ __forceinline__ Head<T> head_of(const T* q, const T* k, const T* v, T* o, int heads, int kv_heads,
                                           int seq_q, int seq_k, int causal, float scale_log2) {
  const int b = blockIdx.z;
  const int h = blockIdx.y;
  const int kv_h = h / (heads / kv_heads);
  const size_t q_base = (static_cast<size_t>(b) * heads + h) * seq_q * D;
  const size_t kv_base = (static_cast<size_t>(b) * kv_heads + kv_h) * seq_k * D;
  Head<T> hd;
  hd.q = q + q_base;
  hd.o = o + q_base;
  hd.k = k + kv_base;
  hd.v = v + kv_base;
  hd.seq_q = seq_q;
  hd.seq_k = seq_k;
  hd.causal = causal != 0;
  hd.scale_log2 = scale_log2;
  return hd;
}

// ---- arithmetic ------------------------------------------------------------

// fast_exp2 is ex2.approx: exp2(-inf) = +0, which the masking relies on.
__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// rescale_factor is exp2(m_old - m_new) with the empty row (both -inf) kept
// at 1 instead of NaN.
__device__ __forceinline__ float rescale_factor(float m_old, float m_new) {
  return m_new == kNegInf ? 1.f : fast_exp2(m_old - m_new);
}

// shifted_exp2 is exp2(s - m) with m = -inf (a row that has seen no visible
// key yet) giving 0 instead of NaN.
__device__ __forceinline__ float shifted_exp2(float s, float m) {
  return m == kNegInf ? 0.f : fast_exp2(s - m);
}

template <int WIDTH>
__device__ __forceinline__ float group_max(float x) {
#pragma unroll
  for (int off = WIDTH / 2; off > 0; off /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off, WIDTH));
  return x;
}

template <int WIDTH>
__device__ __forceinline__ float group_sum(float x) {
#pragma unroll
  for (int off = WIDTH / 2; off > 0; off /= 2) x += __shfl_xor_sync(0xffffffffu, x, off, WIDTH);
  return x;
}

// ---- shared memory and asynchronous copies -----------------------------------

__device__ __forceinline__ unsigned dynamic_smem_bytes() {
  unsigned n;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
  return n;
}

// require_dynamic_smem traps when the host launched with less dynamic shared
// memory than the kernel's layout needs: a loud failure instead of silent
// out-of-bounds shared memory.
__device__ __forceinline__ void require_dynamic_smem(unsigned needed) {
  if (dynamic_smem_bytes() < needed) __trap();
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// cp_async_16 copies 16 bytes from global to shared memory without going
// through registers. When valid is false it writes 16 zero bytes and reads
// nothing (src-size 0), which is how rows past the end are padded.
__device__ __forceinline__ void cp_async_16(void* dst, const void* src, bool valid) {
  const int src_bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

template <int PENDING>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
}

// load_rows_async copies rows [row0, row0+ROWS) of a [rows, D] matrix into
// shared memory with row stride LD elements, 16 bytes per copy, zero-filling
// rows at or past n_rows. All THREADS threads of the block take part.
template <int ROWS, int D, int LD, int THREADS, typename T>
__device__ __forceinline__ void load_rows_async(T* dst, const T* src, int row0, int n_rows) {
  constexpr int kChunksPerRow = D / kVec;
  for (int c = threadIdx.x; c < ROWS * kChunksPerRow; c += THREADS) {
    const int r = c / kChunksPerRow;
    const int col = (c % kChunksPerRow) * kVec;
    const int row = row0 + r;
    const bool valid = row < n_rows;
    const T* from = valid ? src + static_cast<size_t>(row) * D + col : src;
    cp_async_16(dst + r * LD + col, from, valid);
  }
}

}  // namespace flashcore
