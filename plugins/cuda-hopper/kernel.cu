// cuda-hopper: forward attention for Hopper (sm_90a), written for FlashCore.
//
// Block: three warpgroups (384 threads), 128 query rows.
//   warpgroup 0, the producer: gives registers away (setmaxnreg.dec) and
//     streams K and V tiles of TILE_N keys into a ring of STAGES shared-memory
//     stages. Each stage has two mbarriers: "full" (the producer's 128 threads
//     arrive once their copies of the tile have landed) and "empty" (the 256
//     consumer threads arrive once the tile's MMAs have read it).
//   warpgroups 1 and 2, the consumers: take the registers (setmaxnreg.inc),
//     own 64 query rows each, and per tile run
//       S = Q·Kᵀ     wgmma m64nTILE_Nk16, A (Q) and B (K) from shared memory;
//       softmax      online, in registers, exp2 with scale·log2(e) folded in;
//       O += P·V     wgmma m64nDk16, A (P) from registers, B (V) transposed
//                    from shared memory; fp32 accumulators throughout.
// Shared-memory tiles are stored as the wgmma 128-byte swizzle expects:
// [D/64 column blocks][rows][64 elements], 16-byte chunk c of row r at chunk
// c ^ (r % 8), every tile 1024-byte aligned.
//
// Copies: the producer uses cp.async (16 bytes a thread), not the TMA bulk
// tensor engine: a tensor map is a 128-byte kernel parameter, and the driver
// binding passes every parameter in 8 bytes (see attention.cuh). Two ways to
// tell the consumers a stage has landed (the AHEAD template argument):
//   wait   each producer thread waits for its own copies of the tile, fences
//          them into the async proxy the tensor cores read through and
//          arrives on the stage's full barrier: one tile in flight at a time;
//   ahead  each producer thread hands its copies to the full barrier
//          (cp.async.mbarrier.arrive.noinc) and goes on to the next stage, so
//          up to STAGES tiles are in flight; the consumers fence the stage
//          into the async proxy once its barrier completes.
// Consumer warpgroups may take turns issuing their MMAs (OVERLAP 2, named
// barriers kTurnBarrier + warpgroup), so one's softmax runs while the
// other's MMAs hold the tensor cores.
// Rows past seq_k (and Q rows past seq_q) are zero-filled and masked; rows
// past seq_q are never written.
#include "attention.cuh"

using namespace flashcore;

namespace {

constexpr int kConsumers = 2;  // consumer warpgroups, 64 query rows each
constexpr int kWarpgroup = 128;
constexpr int kThreads = (1 + kConsumers) * kWarpgroup;
constexpr int kTileM = 64 * kConsumers;
// setmaxnreg budgets: 40·128 + 2·232·128 = 64512 of the SM's 65536 registers.
constexpr int kProducerRegs = 40;
constexpr int kConsumerRegs = 232;
// Named barriers: 0 is __syncthreads, 1 + c consumer c's own (its Q tile),
// kTurnBarrier + c "consumer c may issue its MMAs" (OVERLAP 2).
constexpr int kTurnBarrier = 3;

// HopperLayout is the dynamic shared memory layout, from a base rounded up to
// 1024 bytes (the launch asks for 1024 more). The Go spec computes the same
// byte count (plugins/cuda-hopper/backend.go, sharedBytes); the kernel traps
// if it is launched with less.
template <typename T, int D, int TILE_N, int STAGES>
struct HopperLayout {
  static constexpr int kQBytes = kTileM * D * sizeof(T);
  static constexpr int kKVBytes = TILE_N * D * sizeof(T);
  static constexpr int kQ = 0;
  static constexpr int kK = kQ + kQBytes;
  static constexpr int kV = kK + STAGES * kKVBytes;
  static constexpr int kBarriers = kV + STAGES * kKVBytes;  // full[STAGES], empty[STAGES]
  static constexpr int kBytes = kBarriers + 2 * STAGES * 8;
  static constexpr int kLaunchBytes = kBytes + 1024;
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "swizzle atoms are 1024-byte aligned");
};

// swizzled_offset is the byte offset of 16-byte chunk `chunk` (0..D/8-1) of
// row r in a tile of `rows` rows.
__device__ __forceinline__ uint32_t swizzled_offset(int rows, int r, int chunk) {
  return (chunk >> 3) * rows * 128 + r * 128 + (((chunk & 7) ^ (r & 7)) << 4);
}

// smem_desc is a wgmma shared-memory matrix descriptor with the 128-byte
// swizzle: start address, leading and stride byte offsets, each in 16 bytes.
__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t leading, uint32_t stride) {
  return static_cast<uint64_t>((addr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(leading >> 4) << 16) |
         (static_cast<uint64_t>(stride >> 4) << 32) | (1ull << 62);
}

// ---- mbarriers, fences, wgmma ------------------------------------------------

__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(bar) : "memory");
}

// mbar_wait returns once the barrier's phase of the given parity completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (!done);
}

__device__ __forceinline__ void fence_async_shared() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// named_arrive counts this thread into named barrier id without waiting.
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// cp_async_arrive_on makes the completion of this thread's cp.async copies so
// far an arrival on mbarrier bar (counted in the barrier's expected count).
__device__ __forceinline__ void cp_async_arrive_on(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int PENDING>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// fence_registers keeps the compiler from moving accumulator reads or writes
// across wgmma issue and wait, which it cannot see through.
template <int N>
__device__ __forceinline__ void fence_registers(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// Wgmma<T, N> issues one m64nNk16 warpgroup MMA with fp32 accumulators:
//   ss     A and B from shared memory, both K-major; accumulate=0 overwrites;
//   rs_tb  A from registers, B from shared memory and MN-major (transposed).
template <typename T, int N>
struct Wgmma {
  static __device__ __forceinline__ void ss(float (&d)[N / 2], uint64_t a, uint64_t b, int accumulate);
  static __device__ __forceinline__ void rs_tb(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t b);
};

// The specialisations below are mechanical (one per dtype and N); they list
// the N/2 accumulator registers of each thread.
template <>
__device__ __forceinline__ void Wgmma<half, 64>::ss(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <>
__device__ __forceinline__ void Wgmma<half, 64>::rs_tb(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

template <>
__device__ __forceinline__ void Wgmma<__nv_bfloat16, 64>::ss(float (&d)[32], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <>
__device__ __forceinline__ void Wgmma<__nv_bfloat16, 64>::rs_tb(float (&d)[32], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

template <>
__device__ __forceinline__ void Wgmma<half, 128>::ss(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <>
__device__ __forceinline__ void Wgmma<half, 128>::rs_tb(float (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

template <>
__device__ __forceinline__ void Wgmma<__nv_bfloat16, 128>::ss(float (&d)[64], uint64_t a, uint64_t b, int accumulate) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "l"(a), "l"(b), "r"(accumulate));
}

template <>
__device__ __forceinline__ void Wgmma<__nv_bfloat16, 128>::rs_tb(float (&d)[64], const uint32_t (&a)[4], uint64_t b) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}


// ---- element packing ---------------------------------------------------------

template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);

template <>
__device__ __forceinline__ uint32_t pack2<half>(float lo, float hi) {
  __half2 h = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
  __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t*>(&h);
}

__device__ __forceinline__ void cp_async_swizzled(uint32_t dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0) : "memory");
}

// load_swizzled copies rows [row0, row0+ROWS) of a [rows, D] matrix into the
// swizzled tile at dst (a tile of TILE_ROWS rows, starting at row first_row),
// zero-filling rows at or past n_rows. THREADS threads take part, tid of them.
template <int ROWS, int TILE_ROWS, int D, int THREADS, typename T>
__device__ __forceinline__ void load_swizzled(uint32_t dst, int first_row, const T* src, int row0, int n_rows,
                                              int tid) {
  constexpr int kChunks = D / kVec;
#pragma unroll 4
  for (int c = tid; c < ROWS * kChunks; c += THREADS) {
    const int r = c / kChunks;
    const int chunk = c % kChunks;
    const int row = row0 + r;
    const bool valid = row < n_rows;
    const T* from = valid ? src + static_cast<size_t>(row) * D + chunk * kVec : src;
    cp_async_swizzled(dst + swizzled_offset(TILE_ROWS, first_row + r, chunk), from, valid);
  }
}

// ---- the kernel --------------------------------------------------------------

// produce streams the K and V tiles into the ring; the stages ahead of the
// consumers are the prefetch. AHEAD false: each thread waits for its own
// copies of a tile, fences them into the async proxy and arrives on the
// stage's full barrier. AHEAD true: the copies themselves arrive on it when
// they land, and the thread goes on to the next empty stage.
template <typename T, int D, int TILE_N, int STAGES, bool AHEAD>
__device__ __forceinline__ void produce(const Head<T>& hd, uint32_t s_k, uint32_t s_v, uint32_t bars, int n_tiles,
                                        int tid) {
  using L = HopperLayout<T, D, TILE_N, STAGES>;
  for (int t = 0; t < n_tiles; ++t) {
    const int stage = t % STAGES;
    // The first pass over the ring finds every stage empty (parity trick).
    mbar_wait(bars + 8 * (STAGES + stage), ((t / STAGES) & 1) ^ 1);
    load_swizzled<TILE_N, TILE_N, D, kWarpgroup>(s_k + stage * L::kKVBytes, 0, hd.k, t * TILE_N, hd.seq_k, tid);
    load_swizzled<TILE_N, TILE_N, D, kWarpgroup>(s_v + stage * L::kKVBytes, 0, hd.v, t * TILE_N, hd.seq_k, tid);
    if constexpr (AHEAD) {
      cp_async_arrive_on(bars + 8 * stage);
    } else {
      cp_async_commit();
      cp_async_wait<0>();
      fence_async_shared();
      mbar_arrive(bars + 8 * stage);
    }
  }
  // No copy outlives its thread.
  if constexpr (AHEAD) {
    cp_async_commit();
    cp_async_wait<0>();
  }
}

// Rows is one thread's view of the online softmax: it holds two rows (lo and
// hi = lo + 8) of its warpgroup's 64, with the running max m (in log2 units)
// and its own partial sum l of the four threads that share each row.
struct Rows {
  int lo, hi;
  float m_lo, m_hi, l_lo, l_hi;
};

// softmax_tile scales and masks the score tile s (keys key0..), updates the
// running max and sums, writes P in the register layout of wgmma's A operand
// (S's accumulator layout, two n8 column blocks per k16 step, packed to T
// pairs) and returns the factors by which O must be rescaled.
template <typename T, int TILE_N>
__device__ __forceinline__ void softmax_tile(float (&s)[TILE_N / 2], uint32_t (&p)[TILE_N / 16][4], const Head<T>& hd,
                                             int key0, bool masked, int lane, Rows& r, float& alpha_lo,
                                             float& alpha_hi) {
  float mx_lo = kNegInf, mx_hi = kNegInf;
#pragma unroll
  for (int j = 0; j < TILE_N / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int key = key0 + j * 8 + (lane % 4) * 2 + e;
      float lo = s[j * 4 + e] * hd.scale_log2;
      float hi = s[j * 4 + 2 + e] * hd.scale_log2;
      if (masked) {
        if (!hd.visible(r.lo, key)) lo = kNegInf;
        if (!hd.visible(r.hi, key)) hi = kNegInf;
      }
      s[j * 4 + e] = lo;
      s[j * 4 + 2 + e] = hi;
      mx_lo = fmaxf(mx_lo, lo);
      mx_hi = fmaxf(mx_hi, hi);
    }
  }
  const float new_lo = fmaxf(r.m_lo, group_max<4>(mx_lo));
  const float new_hi = fmaxf(r.m_hi, group_max<4>(mx_hi));
  alpha_lo = rescale_factor(r.m_lo, new_lo);
  alpha_hi = rescale_factor(r.m_hi, new_hi);
  r.m_lo = new_lo;
  r.m_hi = new_hi;
  float sum_lo = 0.f, sum_hi = 0.f;
#pragma unroll
  for (int j = 0; j < TILE_N / 8; ++j) {
    const float p0 = shifted_exp2(s[j * 4 + 0], new_lo);
    const float p1 = shifted_exp2(s[j * 4 + 1], new_lo);
    const float p2 = shifted_exp2(s[j * 4 + 2], new_hi);
    const float p3 = shifted_exp2(s[j * 4 + 3], new_hi);
    sum_lo += p0 + p1;
    sum_hi += p2 + p3;
    p[j / 2][(j % 2) * 2 + 0] = pack2<T>(p0, p1);
    p[j / 2][(j % 2) * 2 + 1] = pack2<T>(p2, p3);
  }
  r.l_lo = r.l_lo * alpha_lo + sum_lo;
  r.l_hi = r.l_hi * alpha_hi + sum_hi;
}

template <int D>
__device__ __forceinline__ void rescale(float (&o)[D / 2], float alpha_lo, float alpha_hi) {
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    o[j * 4 + 0] *= alpha_lo;
    o[j * 4 + 1] *= alpha_lo;
    o[j * 4 + 2] *= alpha_hi;
    o[j * 4 + 3] *= alpha_hi;
  }
}

// issue_qk issues S = Q·Kᵀ for one K tile: D/16 wgmmas, A (this warpgroup's
// 64 Q rows) and B (the tile's keys) K-major in shared memory.
template <typename T, int D, int TILE_N>
__device__ __forceinline__ void issue_qk(float (&s)[TILE_N / 2], uint32_t s_q, uint32_t k_tile, int cw) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint32_t col = (kk % 4) * 32;  // 16 elements along the 128-byte row
    const uint64_t a = smem_desc(s_q + (kk / 4) * kTileM * 128 + cw * 64 * 128 + col, 16, 1024);
    const uint64_t b = smem_desc(k_tile + (kk / 4) * TILE_N * 128 + col, 16, 1024);
    Wgmma<T, TILE_N>::ss(s, a, b, kk > 0);
  }
}

// issue_pv issues O += P·V for one V tile: TILE_N/16 wgmmas, A (P) from
// registers, B (V) MN-major: keys 16kk..16kk+15 are two 8-key groups 1024
// bytes apart (stride), the D/64 column blocks TILE_N·128 bytes apart
// (leading).
template <typename T, int D, int TILE_N>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&p)[TILE_N / 16][4], uint32_t v_tile) {
#pragma unroll
  for (int kk = 0; kk < TILE_N / 16; ++kk) {
    Wgmma<T, D>::rs_tb(o, p[kk], smem_desc(v_tile + kk * 16 * 128, TILE_N * 128, 1024));
  }
}

// tile_masked says whether any key of the tile is invisible to any row of
// the warpgroup (past seq_k, or past the diagonal).
template <typename T, int TILE_N>
__device__ __forceinline__ bool tile_masked(const Head<T>& hd, int key0, int wg_row0) {
  return key0 + TILE_N > hd.seq_k || (hd.causal && key0 + TILE_N - 1 > wg_row0);
}

// load_q brings this warpgroup's 64 Q rows (rows cw*64.. of the Q tile) in.
template <typename T, int D>
__device__ __forceinline__ void load_q(const Head<T>& hd, uint32_t s_q, int wg_row0, int cw, int tid) {
  load_swizzled<64, kTileM, D, kWarpgroup>(s_q, cw * 64, hd.q, wg_row0, hd.seq_q, tid);
  cp_async_commit();
  cp_async_wait<0>();
  fence_async_shared();
  named_barrier(1 + cw, kWarpgroup);
}

// store_o normalises and writes the rows inside seq_q, two elements a store.
template <typename T, int D>
__device__ __forceinline__ void store_o(const Head<T>& hd, const float (&o)[D / 2], const Rows& r, int lane) {
  const float l_lo = group_sum<4>(r.l_lo);
  const float l_hi = group_sum<4>(r.l_hi);
  const float inv_lo = l_lo > 0.f ? 1.f / l_lo : 0.f;
  const float inv_hi = l_hi > 0.f ? 1.f / l_hi : 0.f;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    const int col = j * 8 + (lane % 4) * 2;
    if (r.lo < hd.seq_q)
      *reinterpret_cast<uint32_t*>(hd.o + static_cast<size_t>(r.lo) * D + col) =
          pack2<T>(o[j * 4 + 0] * inv_lo, o[j * 4 + 1] * inv_lo);
    if (r.hi < hd.seq_q)
      *reinterpret_cast<uint32_t*>(hd.o + static_cast<size_t>(r.hi) * D + col) =
          pack2<T>(o[j * 4 + 2] * inv_hi, o[j * 4 + 3] * inv_hi);
  }
}

// consume (OVERLAP 0) runs each tile in order: S = Q·Kᵀ, wait, softmax,
// O += P·V, wait. The tensor cores idle during this warpgroup's softmax
// unless the other consumer's MMAs fill the gap.
//
// consume (OVERLAP 1) overlaps one tile's softmax with the MMAs of its
// neighbours: it issues S_t = Q·K_tᵀ and then O += P_{t-1}·V_{t-1}, waits for
// S_t only, runs softmax(S_t) into a second P buffer while P_{t-1}·V_{t-1}
// runs, and rescales O once that MMA is done.
//
// consume (OVERLAP 2) is OVERLAP 1 with the two consumer warpgroups taking
// turns: each issues its pair of MMAs only in its turn and hands the turn to
// the other once they are issued, so their softmaxes alternate under each
// other's MMAs instead of meeting.
//
// AHEAD: the producer's copies arrive on the full barrier by themselves, so
// the consumer fences each stage into the async proxy before its MMAs read it.
template <typename T, int D, int TILE_N, int STAGES, int OVERLAP, bool AHEAD>
__device__ __forceinline__ void consume(const Head<T>& hd, uint32_t s_q, uint32_t s_k, uint32_t s_v, uint32_t bars,
                                        int row0, int n_tiles, int cw, int tid) {
  using L = HopperLayout<T, D, TILE_N, STAGES>;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int wg_row0 = row0 + cw * 64;
  load_q<T, D>(hd, s_q, wg_row0, cw, tid);

  Rows r;
  r.lo = wg_row0 + warp * 16 + lane / 4;
  r.hi = r.lo + 8;
  r.m_lo = r.m_hi = kNegInf;
  r.l_lo = r.l_hi = 0.f;
  float o[D / 2];
#pragma unroll
  for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
  float s[TILE_N / 2];
  uint32_t p[TILE_N / 16][4];
  float alpha_lo, alpha_hi;
  auto empty = [&](int t) { return bars + 8 * (STAGES + t % STAGES); };
  auto k_tile = [&](int t) { return s_k + (t % STAGES) * L::kKVBytes; };
  auto v_tile = [&](int t) { return s_v + (t % STAGES) * L::kKVBytes; };
  // wait_full returns once tile t is in its stage, visible to the MMAs.
  auto wait_full = [&](int t) {
    mbar_wait(bars + 8 * (t % STAGES), (t / STAGES) & 1);
    if constexpr (AHEAD) fence_async_shared();
  };
  constexpr bool kTurns = OVERLAP == 2;
  const int my_turn = kTurnBarrier + cw;
  const int their_turn = kTurnBarrier + (1 - cw);
  // The first turn is consumer 0's.
  if (kTurns && cw == 1) named_arrive(their_turn, 2 * kWarpgroup);

  if constexpr (OVERLAP == 0) {
    for (int t = 0; t < n_tiles; ++t) {
      const int key0 = t * TILE_N;
      wait_full(t);
      // A causal tile that starts past this warpgroup's last row adds nothing.
      if (hd.causal && key0 > wg_row0 + 63) {
        mbar_arrive(empty(t));
        continue;
      }
      wgmma_fence();
      issue_qk<T, D, TILE_N>(s, s_q, k_tile(t), cw);
      wgmma_commit();
      wgmma_wait<0>();
      fence_registers(s);
      softmax_tile<T, TILE_N>(s, p, hd, key0, tile_masked<T, TILE_N>(hd, key0, wg_row0), lane, r, alpha_lo, alpha_hi);
      rescale<D>(o, alpha_lo, alpha_hi);
      fence_registers(o);
      wgmma_fence();
      issue_pv<T, D, TILE_N>(o, p, v_tile(t));
      wgmma_commit();
      wgmma_wait<0>();
      fence_registers(o);
      mbar_arrive(empty(t));
    }
  } else {
    // Tile 0: S_0 and its softmax; P_0 waits in p.
    wait_full(0);
    wgmma_fence();
    issue_qk<T, D, TILE_N>(s, s_q, k_tile(0), cw);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(s);
    softmax_tile<T, TILE_N>(s, p, hd, 0, tile_masked<T, TILE_N>(hd, 0, wg_row0), lane, r, alpha_lo, alpha_hi);
    // One step: S_t in, P_{t-1}·V_{t-1} from p_in, P_t out to p_out. Two
    // buffers alternate (the loop is unrolled by two) so no register copy
    // sits between the wgmmas that read them.
    uint32_t p_alt[TILE_N / 16][4];
    auto step = [&](int t, const uint32_t(&p_in)[TILE_N / 16][4], uint32_t(&p_out)[TILE_N / 16][4]) {
      const int key0 = t * TILE_N;
      wait_full(t);
      if (kTurns) named_barrier(my_turn, 2 * kWarpgroup);
      fence_registers(o);
      wgmma_fence();
      issue_qk<T, D, TILE_N>(s, s_q, k_tile(t), cw);
      wgmma_commit();
      issue_pv<T, D, TILE_N>(o, p_in, v_tile(t - 1));
      wgmma_commit();
      if (kTurns) named_arrive(their_turn, 2 * kWarpgroup);
      wgmma_wait<1>();  // S_t is in; P_{t-1}·V_{t-1} may still run
      fence_registers(s);
      softmax_tile<T, TILE_N>(s, p_out, hd, key0, tile_masked<T, TILE_N>(hd, key0, wg_row0), lane, r, alpha_lo,
                              alpha_hi);
      wgmma_wait<0>();
      fence_registers(o);
      mbar_arrive(empty(t - 1));
      rescale<D>(o, alpha_lo, alpha_hi);
    };
    int t = 1;
    for (; t + 1 < n_tiles; t += 2) {
      step(t, p, p_alt);
      step(t + 1, p_alt, p);
    }
    // Consumer 1 handed consumer 0 one turn more than it took (the first).
    auto last_turn = [&] {
      if (kTurns && cw == 0) named_barrier(my_turn, 2 * kWarpgroup);
    };
    if (t < n_tiles) {
      step(t, p, p_alt);
      fence_registers(o);
      wgmma_fence();
      issue_pv<T, D, TILE_N>(o, p_alt, v_tile(n_tiles - 1));
      wgmma_commit();
      wgmma_wait<0>();
      fence_registers(o);
      mbar_arrive(empty(n_tiles - 1));
      last_turn();
      store_o<T, D>(hd, o, r, lane);
      return;
    }
    fence_registers(o);
    wgmma_fence();
    issue_pv<T, D, TILE_N>(o, p, v_tile(n_tiles - 1));
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(o);
    mbar_arrive(empty(n_tiles - 1));
    last_turn();
  }
  store_o<T, D>(hd, o, r, lane);
}

template <typename T, int D, int TILE_N, int STAGES, int OVERLAP, bool AHEAD>
__device__ __forceinline__ void hopper_attention(const Head<T>& hd, unsigned char* smem) {
  using L = HopperLayout<T, D, TILE_N, STAGES>;
  require_dynamic_smem(L::kLaunchBytes);
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t bars = base + L::kBarriers;
  // Causal blocks late in the sequence have the most keys: start them first.
  const int row0 = (gridDim.x - 1 - blockIdx.x) * kTileM;
  const int n_tiles = (hd.key_end(row0, kTileM) + TILE_N - 1) / TILE_N;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bars + 8 * s, kWarpgroup);                          // full: the producer's threads
      mbar_init(bars + 8 * (STAGES + s), kConsumers * kWarpgroup);  // empty: the consumers' threads
    }
  }
  __syncthreads();
  const int wg = threadIdx.x / kWarpgroup;
  const int tid = threadIdx.x % kWarpgroup;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegs));
    produce<T, D, TILE_N, STAGES, AHEAD>(hd, base + L::kK, base + L::kV, bars, n_tiles, tid);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegs));
    consume<T, D, TILE_N, STAGES, OVERLAP, AHEAD>(hd, base + L::kQ, base + L::kK, base + L::kV, bars, row0, n_tiles, wg - 1,
                                           tid);
  }
}

}  // namespace

// HOPPER_KERNEL instantiates one extern "C" entry point; the Go spec derives
// the same names from (dtype, head dim, tile_n, kv_stages, overlap, producer).
#define HOPPER_KERNEL(NAME, T, D, TILE_N, STAGES, OVERLAP, AHEAD)                                                 \
  extern "C" __global__ void __launch_bounds__(kThreads, 1)                                                      \
      NAME(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,         \
           int heads, int kv_heads, int seq_q, int seq_k, int causal, float scale_log2) {                        \
    extern __shared__ __align__(1024) unsigned char hopper_smem[];                                                 \
    hopper_attention<T, D, TILE_N, STAGES, OVERLAP, AHEAD>(                                                       \
        head_of<D>(q, k, v, o, heads, kv_heads, seq_q, seq_k, causal, scale_log2), hopper_smem);                 \
  }

HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s2_o0_wait, half, 64, 64, 2, 0, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s2_o0_ahead, half, 64, 64, 2, 0, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s2_o1_wait, half, 64, 64, 2, 1, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s2_o1_ahead, half, 64, 64, 2, 1, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s2_o2_wait, half, 64, 64, 2, 2, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s2_o2_ahead, half, 64, 64, 2, 2, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s3_o0_wait, half, 64, 64, 3, 0, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s3_o0_ahead, half, 64, 64, 3, 0, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s3_o1_wait, half, 64, 64, 3, 1, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s3_o1_ahead, half, 64, 64, 3, 1, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s3_o2_wait, half, 64, 64, 3, 2, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n64_s3_o2_ahead, half, 64, 64, 3, 2, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s2_o0_wait, half, 64, 128, 2, 0, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s2_o0_ahead, half, 64, 128, 2, 0, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s2_o1_wait, half, 64, 128, 2, 1, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s2_o1_ahead, half, 64, 128, 2, 1, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s2_o2_wait, half, 64, 128, 2, 2, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s2_o2_ahead, half, 64, 128, 2, 2, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s3_o0_wait, half, 64, 128, 3, 0, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s3_o0_ahead, half, 64, 128, 3, 0, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s3_o1_wait, half, 64, 128, 3, 1, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s3_o1_ahead, half, 64, 128, 3, 1, true)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s3_o2_wait, half, 64, 128, 3, 2, false)
HOPPER_KERNEL(attn_fwd_fp16_d64_n128_s3_o2_ahead, half, 64, 128, 3, 2, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s2_o0_wait, half, 128, 64, 2, 0, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s2_o0_ahead, half, 128, 64, 2, 0, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s2_o1_wait, half, 128, 64, 2, 1, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s2_o1_ahead, half, 128, 64, 2, 1, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s2_o2_wait, half, 128, 64, 2, 2, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s2_o2_ahead, half, 128, 64, 2, 2, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s3_o0_wait, half, 128, 64, 3, 0, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s3_o0_ahead, half, 128, 64, 3, 0, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s3_o1_wait, half, 128, 64, 3, 1, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s3_o1_ahead, half, 128, 64, 3, 1, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s3_o2_wait, half, 128, 64, 3, 2, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n64_s3_o2_ahead, half, 128, 64, 3, 2, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s2_o0_wait, half, 128, 128, 2, 0, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s2_o0_ahead, half, 128, 128, 2, 0, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s2_o1_wait, half, 128, 128, 2, 1, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s2_o1_ahead, half, 128, 128, 2, 1, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s2_o2_wait, half, 128, 128, 2, 2, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s2_o2_ahead, half, 128, 128, 2, 2, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s3_o0_wait, half, 128, 128, 3, 0, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s3_o0_ahead, half, 128, 128, 3, 0, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s3_o1_wait, half, 128, 128, 3, 1, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s3_o1_ahead, half, 128, 128, 3, 1, true)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s3_o2_wait, half, 128, 128, 3, 2, false)
HOPPER_KERNEL(attn_fwd_fp16_d128_n128_s3_o2_ahead, half, 128, 128, 3, 2, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s2_o0_wait, __nv_bfloat16, 64, 64, 2, 0, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s2_o0_ahead, __nv_bfloat16, 64, 64, 2, 0, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s2_o1_wait, __nv_bfloat16, 64, 64, 2, 1, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s2_o1_ahead, __nv_bfloat16, 64, 64, 2, 1, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s2_o2_wait, __nv_bfloat16, 64, 64, 2, 2, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s2_o2_ahead, __nv_bfloat16, 64, 64, 2, 2, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s3_o0_wait, __nv_bfloat16, 64, 64, 3, 0, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s3_o0_ahead, __nv_bfloat16, 64, 64, 3, 0, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s3_o1_wait, __nv_bfloat16, 64, 64, 3, 1, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s3_o1_ahead, __nv_bfloat16, 64, 64, 3, 1, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s3_o2_wait, __nv_bfloat16, 64, 64, 3, 2, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n64_s3_o2_ahead, __nv_bfloat16, 64, 64, 3, 2, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s2_o0_wait, __nv_bfloat16, 64, 128, 2, 0, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s2_o0_ahead, __nv_bfloat16, 64, 128, 2, 0, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s2_o1_wait, __nv_bfloat16, 64, 128, 2, 1, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s2_o1_ahead, __nv_bfloat16, 64, 128, 2, 1, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s2_o2_wait, __nv_bfloat16, 64, 128, 2, 2, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s2_o2_ahead, __nv_bfloat16, 64, 128, 2, 2, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s3_o0_wait, __nv_bfloat16, 64, 128, 3, 0, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s3_o0_ahead, __nv_bfloat16, 64, 128, 3, 0, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s3_o1_wait, __nv_bfloat16, 64, 128, 3, 1, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s3_o1_ahead, __nv_bfloat16, 64, 128, 3, 1, true)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s3_o2_wait, __nv_bfloat16, 64, 128, 3, 2, false)
HOPPER_KERNEL(attn_fwd_bf16_d64_n128_s3_o2_ahead, __nv_bfloat16, 64, 128, 3, 2, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s2_o0_wait, __nv_bfloat16, 128, 64, 2, 0, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s2_o0_ahead, __nv_bfloat16, 128, 64, 2, 0, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s2_o1_wait, __nv_bfloat16, 128, 64, 2, 1, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s2_o1_ahead, __nv_bfloat16, 128, 64, 2, 1, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s2_o2_wait, __nv_bfloat16, 128, 64, 2, 2, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s2_o2_ahead, __nv_bfloat16, 128, 64, 2, 2, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s3_o0_wait, __nv_bfloat16, 128, 64, 3, 0, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s3_o0_ahead, __nv_bfloat16, 128, 64, 3, 0, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s3_o1_wait, __nv_bfloat16, 128, 64, 3, 1, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s3_o1_ahead, __nv_bfloat16, 128, 64, 3, 1, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s3_o2_wait, __nv_bfloat16, 128, 64, 3, 2, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n64_s3_o2_ahead, __nv_bfloat16, 128, 64, 3, 2, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s2_o0_wait, __nv_bfloat16, 128, 128, 2, 0, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s2_o0_ahead, __nv_bfloat16, 128, 128, 2, 0, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s2_o1_wait, __nv_bfloat16, 128, 128, 2, 1, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s2_o1_ahead, __nv_bfloat16, 128, 128, 2, 1, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s2_o2_wait, __nv_bfloat16, 128, 128, 2, 2, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s2_o2_ahead, __nv_bfloat16, 128, 128, 2, 2, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s3_o0_wait, __nv_bfloat16, 128, 128, 3, 0, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s3_o0_ahead, __nv_bfloat16, 128, 128, 3, 0, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s3_o1_wait, __nv_bfloat16, 128, 128, 3, 1, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s3_o1_ahead, __nv_bfloat16, 128, 128, 3, 1, true)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s3_o2_wait, __nv_bfloat16, 128, 128, 3, 2, false)
HOPPER_KERNEL(attn_fwd_bf16_d128_n128_s3_o2_ahead, __nv_bfloat16, 128, 128, 3, 2, true)
