// cuda-hopper: forward attention for Hopper (sm_90a), written for FlashCore.
//
// Block: three warpgroups (384 threads), 128 query rows.
//   warpgroup 0, the producer: gives registers away (setmaxnreg.dec) and
//     streams K and V tiles of TILE_N keys into a ring of STAGES shared-memory
//     stages. Each stage has two mbarriers: "full" (the producer's copies of
//     the tile have landed) and "empty" (the 256 consumer threads arrive once
//     the tile's MMAs have read it); the TMA producers have a ring for K and
//     one for V, each with its own.
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
// Copies, three ways (the producer tunable):
//   tma    (TMA) one producer thread issues cp.async.bulk.tensor copies of Q
//          (once) and of each K and V tile, which complete on an mbarrier
//          armed with their bytes (K and V in rings of their own, KVRing);
//          tma-persistent (the default) is the same on a persistent grid
//          (hopper_attention_persistent); the tensor maps are the host's
//          (cuTensorMapEncodeTiled), passed as pointers to global memory,
//          since the driver binding passes every parameter in 8 bytes and a
//          map is 128. O leaves through shared memory by TMA stores.
//   wait   each producer thread waits for its own cp.async copies of the
//          tile, fences them into the async proxy the tensor cores read
//          through and arrives on the stage's full barrier: one tile in
//          flight at a time;
//   ahead  each producer thread hands its cp.async copies to the full barrier
//          (cp.async.mbarrier.arrive.noinc) and goes on to the next stage, so
//          up to STAGES tiles are in flight; the consumers fence the stage
//          into the async proxy once its barrier completes.
// Consumer warpgroups may take turns issuing their MMAs (OVERLAP 2, named
// barriers kTurnBarrier + warpgroup), so one's softmax runs while the
// other's MMAs hold the tensor cores.
// Rows past seq_k (and Q rows past seq_q) are zero-filled and masked; rows
// past seq_q are never written.
//
// The op decode's kernels (split-KV paged flash-decoding, mma.sync) follow
// the attention kernels: see "decode" below.
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
// With TMA the producer is one thread with a handful of values: 24·128 +
// 2·240·128 = 64512, the same total, 8 more for each consumer thread.
constexpr int kTMAProducerRegs = 24;
constexpr int kTMAConsumerRegs = 240;
// Named barriers: 0 is __syncthreads, 1 + c consumer c's own (its Q tile),
// kTurnBarrier + c "consumer c may issue its MMAs" (OVERLAP 2).
constexpr int kTurnBarrier = 3;

// HopperLayout is the dynamic shared memory layout, from a base rounded up to
// 1024 bytes (the launch asks for 1024 more). The Go spec computes the same
// byte count (plugins/cuda-hopper/backend.go, sharedBytes); the kernel traps
// if it is launched with less.
// The persistent schedule (PERSIST) adds a tile for O after Q's where it
// fits the SM's 227 KiB (kOwnO), so that a tile's O leaves while the next
// tile's Q comes in; where it does not (D128, tile_n 128, 3 stages), O
// leaves through the Q tile, as in the grid's kernels, before the next Q
// may come in.
constexpr int kMaxSharedBytes = 227 * 1024;
template <typename T, int D, int TILE_N, int STAGES, bool PERSIST = false>
struct HopperLayout {
  static constexpr int kQBytes = kTileM * D * sizeof(T);
  static constexpr int kKVBytes = TILE_N * D * sizeof(T);
  static constexpr bool kOwnO =
      PERSIST && 2 * kQBytes + 2 * STAGES * kKVBytes + 4 * STAGES * 8 + 1024 <= kMaxSharedBytes;
  static constexpr int kQ = 0;
  static constexpr int kO = kOwnO ? kQ + kQBytes : kQ;  // the O tile: Q's own where it has none
  static constexpr int kK = kQ + kQBytes + (kOwnO ? kQBytes : 0);
  static constexpr int kV = kK + STAGES * kKVBytes;
  // full[STAGES], empty[STAGES], then TMA's V ring: v_full[STAGES],
  // v_empty[STAGES] (Ring: the TMA kernels' full and empty are K's alone).
  static constexpr int kBarriers = kV + STAGES * kKVBytes;
  static constexpr int kBytes = kBarriers + 4 * STAGES * 8;
  static constexpr int kLaunchBytes = kBytes + 1024;
  static_assert(kQBytes % 1024 == 0 && kKVBytes % 1024 == 0, "swizzle atoms are 1024-byte aligned");
  static_assert(kLaunchBytes <= kMaxSharedBytes, "fits the SM");
  static_assert(kO % 1024 == 0, "the O tile is 1024-byte aligned, as TMA's swizzle needs");
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

// desc_plus is the descriptor of the matrix `bytes` past desc's: the start
// address field is addr >> 4 in the low 14 bits, and a CTA's shared memory
// lies below 256 KB, so the sum never carries out of it; the add is one
// 32-bit add on the low word, where ptxas otherwise rebuilt the whole
// descriptor (mask, shift, or) for every wgmma.
__device__ __forceinline__ uint64_t desc_plus(uint64_t desc, uint32_t bytes) {
  const uint32_t lo = static_cast<uint32_t>(desc) + (bytes >> 4);
  return (desc & 0xFFFFFFFF00000000ull) | lo;
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

// mbar_wait_sleeping is mbar_wait for a thread with time to spare: it
// sleeps between polls (about half a microsecond), leaving the issue slots
// to the other warps.
__device__ __forceinline__ void mbar_wait_sleeping(uint32_t bar, uint32_t parity) {
  uint32_t done;
  for (;;) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    __nanosleep(500);
  }
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

// ---- TMA: cp.async.bulk.tensor with tensor maps in global memory ------------

// mbar_arrive_expect_tx arrives on bar and adds bytes to the transaction
// count its phase waits for (the TMA copies complete them).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
  asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n}\n" ::"r"(bar),
               "r"(bytes)
               : "memory");
}

// fence_tensormap makes a tensor map the host wrote to global memory visible
// to the tensor-map proxy TMA reads it through.
__device__ __forceinline__ void fence_tensormap(const void* map) {
  asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;\n" ::"l"(map) : "memory");
}

// tma_load_3d copies the box at coordinates (c0, c1, c2) of map (innermost
// first) to shared memory at dst, completing its bytes on mbarrier bar.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void* map, int c0, int c1, int c2, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
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

// What thread 0 works out for the TMA kernels before the warpgroups part,
// kept in shared memory so that neither the producer's 24 registers nor the
// consumers' loop carries it: the block's KV head in K's and V's maps
// (Maps::head), its query head in Q's and O's (b·heads + h), O's map, and
// the barrier Q's copy completes on.
__shared__ int tma_head;
__shared__ int tma_qhead;
__shared__ const void* tma_omap;
__shared__ __align__(8) uint64_t tma_qbar;
// The persistent schedule's (PERSIST): the barrier the consumers arrive on
// once their MMAs no longer read the Q tile.
__shared__ __align__(8) uint64_t tma_qempty;
// The persistent schedule's next tile, worked out by the producer's
// scheduling thread (schedule_tiles) for its loading thread: the tile's
// number (past the last: the work is done), its first query row, its KV
// head in K's and V's maps, its head in Q's and O's, and its K/V tiles.
// tma_slot_full completes once the slot holds a tile, tma_slot_empty once
// the loading thread has read it.
struct TileSlot {
  int tile, row0, kvhead, qhead, n_tiles;
};
__shared__ TileSlot tma_slot;
// tma_tile is the tile the Q tile in shared memory belongs to, for the
// consumers (the loading thread writes it before it arms tma_qbar).
__shared__ TileSlot tma_tile;
__shared__ __align__(8) uint64_t tma_slot_full;
__shared__ __align__(8) uint64_t tma_slot_empty;

// Tiles is the persistent schedule's work list: every (query tile, batch ·
// head) pair. The heads go in groups whose K and V fit a share of L2
// (kL2Budget): a group's tiles all come before the next group's, so the
// blocks at work at any time read the K/V of a few heads, not of every
// head (all at once, the K/V of B4 H16 S2048 D128 is 64 MB, more than the
// H100's 50 MB of L2, and the first order, row-major over every head, ran
// 19% slower than the grid kernel). Within a group the query tiles with the
// most keys (the last, under causal masking) come first, each row over the
// group's heads. Blocks take tiles in that order from a counter in global
// memory (a block's first is its own index, each next one gridDim.x + the
// counter's old value), so the longest come first and the blocks that
// finish early take more.
struct Tiles {
  int q_tiles;  // ⌈seq_q / kTileM⌉
  int bh;       // batch · heads
  int heads, kv_heads;
  int group;    // heads a group (a multiple of heads / kv_heads, or bh)
  __device__ __forceinline__ int total() const { return q_tiles * bh; }
  // at splits t into its query tile's index from the last (i) and its head
  // in Q's and O's maps (b·heads + h).
  __device__ __forceinline__ void at(int t, int& i, int& x) const {
    const int per_group = group * q_tiles;
    const int g = t / per_group;
    const int r = t - g * per_group;
    const int n = min(group, bh - g * group);  // the last group may be short
    i = r / n;
    x = g * group + (r - i * n);
  }
  __device__ __forceinline__ int row0_of(int i) const { return (q_tiles - 1 - i) * kTileM; }
  // kvhead is head x's in K's and V's maps, b·kv_heads + h / (heads / kv_heads).
  __device__ __forceinline__ int kvhead(int x) const {
    return (x / heads) * kv_heads + (x % heads) / (heads / kv_heads);
  }
};

// kL2Budget is the K/V bytes the persistent schedule lets a group of heads
// hold in L2: a third of the H100's 50 MB, about what the grid kernel's
// blocks read at once (two to eight heads at the issue's shapes, 80% L2
// hits).
constexpr long long kL2Budget = 16ll << 20;

// tile_group is the number of heads in a group of the persistent schedule:
// whole KV heads (each with its heads / kv_heads query heads) whose K and V
// fit kL2Budget, one at least.
template <typename T, int D>
__device__ __forceinline__ int tile_group(int bh, int heads, int kv_heads, int seq_k) {
  const long long kv_bytes = 2ll * seq_k * D * static_cast<long long>(sizeof(T));
  const long long fit = kL2Budget / (kv_bytes > 0 ? kv_bytes : 1);
  const int kv_group = static_cast<int>(fit < 1 ? 1 : (fit > bh ? bh : fit));
  return min(bh, kv_group * (heads / kv_heads));
}

// Maps are K's and V's tensor maps (the plan's, [B·KVH, seq_k, D] in boxes of
// 64 elements × TILE_N keys, 128-byte swizzled) and the head counts that
// place the block's KV head in them. Kernel parameters all: read where used,
// they hold no register through the consumers' code.
struct Maps {
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const void* o = nullptr;
  int heads = 1, kv_heads = 1;
  // of is the maps of a TMA entry point's parameters.
  static __device__ __forceinline__ Maps of(const void* q_map, const void* k_map, const void* v_map,
                                            const void* o_map, int heads, int kv_heads) {
    Maps maps;
    maps.q = q_map;
    maps.k = k_map;
    maps.v = v_map;
    maps.o = o_map;
    maps.heads = heads;
    maps.kv_heads = kv_heads;
    return maps;
  }
  // head is the block's KV head in the maps: b·kv_heads + kv_h.
  __device__ __forceinline__ int head() const {
    return static_cast<int>(blockIdx.z) * kv_heads + static_cast<int>(blockIdx.y) / (heads / kv_heads);
  }
};

// TileRing is the TMA producer's place in one ring of tiles, K's or V's:
// the stage and the parity of its empty barrier's phase, stepped rather
// than divided (the producer's thread has 24 or 40 registers). load waits
// for the stage to be empty, arms its full barrier with the tile's bytes
// and issues one bulk copy per 64-column block.
template <typename T, int D, int TILE_N, int STAGES>
struct TileRing {
  uint32_t parity = 1;  // the first pass over the ring finds every stage empty
  int stage = 0;
  __device__ __forceinline__ void load(const void* map, uint32_t s_tiles, uint32_t full0, int head, int t) {
    using L = HopperLayout<T, D, TILE_N, STAGES>;
    mbar_wait(full0 + 8 * (STAGES + stage), parity);  // the stage's empty barrier
    const uint32_t full = full0 + 8 * stage;
    mbar_arrive_expect_tx(full, TILE_N * D * sizeof(T));
    const uint32_t dst = s_tiles + stage * L::kKVBytes;
#pragma unroll
    for (int cb = 0; cb < D / 64; ++cb) tma_load_3d(dst + cb * TILE_N * 128, map, cb * 64, t * TILE_N, head, full);
    if (++stage == STAGES) {
      stage = 0;
      parity ^= 1;
    }
  }
};

// KVRing is the TMA producers' two rings, K's and V's, each with its own
// full and empty barriers (HopperLayout's full/empty and v_full/v_empty), so
// that a K stage is free again once its Q·Kᵀ is done, before the P·V of the
// same tile, and the producer keeps K one tile ahead of V: K_t, then
// V_{t−1}, the order the consumers use them in (S_t = Q·K_tᵀ is issued
// with O += P_{t−1}·V_{t−1}). run streams n_tiles tiles in that order.
template <typename T, int D, int TILE_N, int STAGES>
struct KVRing {
  TileRing<T, D, TILE_N, STAGES> k, v;
  __device__ __forceinline__ void run(const Maps& maps, uint32_t s_k, uint32_t s_v, uint32_t bars, int head, int first,
                                      int n_tiles) {
#pragma unroll 1
    for (int t = first; t < n_tiles; ++t) {
      k.load(maps.k, s_k, bars, head, t);
      if (t > 0) v.load(maps.v, s_v, bars + 16 * STAGES, head, t - 1);
    }
    v.load(maps.v, s_v, bars + 16 * STAGES, head, n_tiles - 1);
  }
};

// produce_tma streams the K and V tiles into the ring with TMA, from one
// thread: its Q tile, then each K/V tile through the ring (KVRing), one
// bulk copy per 64-column block, which land swizzled as load_swizzled lays
// them out (TMA's 128-byte swizzle is the same XOR of the chunk by row % 8
// on a 1024-byte aligned tile). Keys past seq_k arrive as zeros (the map's bounds).
template <typename T, int D, int TILE_N, int STAGES>
__device__ __forceinline__ void produce_tma(const Maps& maps, uint32_t s_q, uint32_t s_k, uint32_t s_v, uint32_t bars,
                                            int n_tiles, int tid) {
  if (tid != 0) return;
  fence_tensormap(maps.q);
  fence_tensormap(maps.k);
  fence_tensormap(maps.v);
  // Q: the block's 128 rows, one box per 64-column block, zeros past seq_q.
  {
    const uint32_t qbar = smem_addr(&tma_qbar);
    const int row0 = (gridDim.x - 1 - blockIdx.x) * kTileM;
    mbar_arrive_expect_tx(qbar, kTileM * D * sizeof(T));
#pragma unroll
    for (int cb = 0; cb < D / 64; ++cb) tma_load_3d(s_q + cb * kTileM * 128, maps.q, cb * 64, row0, tma_qhead, qbar);
  }
  KVRing<T, D, TILE_N, STAGES> ring;
  ring.run(maps, s_k, s_v, bars, tma_head, 0, n_tiles);
}

// schedule_tiles is the persistent schedule's scheduling thread (warp 1
// of the producer's warpgroup): it takes the block's tiles from the
// counter in turn (the first is the block's own index, each next one
// gridDim.x + the counter's old value), works out each one's rows, heads and
// K/V tiles, and hands them to the loading thread through tma_slot. It takes
// the next tile only once the loading thread has taken the one before, as
// the loading thread did itself before (a block holds one tile ahead, so
// that under causal masking the blocks that finish early take more), and
// waits with a sleep between polls: the loading thread takes a tile once
// the last of the tile before is loaded, and a polling warp would take
// issue slots from the consumers' warps. It stops after it has handed over
// a number past the last tile.
template <typename T, int TILE_N>
__device__ __forceinline__ void schedule_tiles(const Head<T>& hd, const Tiles& tiles, int* counter) {
  const uint32_t full = smem_addr(&tma_slot_full);
  const uint32_t empty = smem_addr(&tma_slot_empty);
  int tile = static_cast<int>(blockIdx.x);
#pragma unroll 1
  for (int j = 0;; ++j) {
    if (j > 0) {
      mbar_wait_sleeping(empty, (j - 1) & 1);
      tile = static_cast<int>(gridDim.x) + atomicAdd(counter, 1);
    }
    TileSlot slot;
    slot.tile = tile;
    slot.n_tiles = 0;  // past the last tile: the work is done
    if (tile < tiles.total()) {
      int i;
      tiles.at(tile, i, slot.qhead);
      slot.row0 = tiles.row0_of(i);
      slot.kvhead = tiles.kvhead(slot.qhead);
      slot.n_tiles = (hd.key_end(slot.row0, kTileM) + TILE_N - 1) / TILE_N;
    }
    tma_slot = slot;
    mbar_arrive(full);  // release (and a compiler barrier): the slot's stores before the arrival
    if (tile >= tiles.total()) return;
  }
}

// produce_tma_persistent is produce_tma over the tiles a block takes in
// turn, as schedule_tiles hands them over. For each: the K tile 0 as soon
// as a K stage is free (the block's consumers may still be on the tile
// before), then, once the consumers no longer read the Q tile
// (tma_qempty), the tile into tma_tile and its Q tile by TMA on
// tma_qbar, then its other K/V tiles. The rings' stages and parities run on
// across tiles. When the work is done it writes a tile of no K/V tiles (a
// number past the last) and arrives on tma_qbar without copies: the
// consumers stop there.
template <typename T, int D, int TILE_N, int STAGES>
__device__ __forceinline__ void produce_tma_persistent(const Maps& maps, uint32_t s_q, uint32_t s_k, uint32_t s_v,
                                                       uint32_t bars) {
  fence_tensormap(maps.q);
  fence_tensormap(maps.k);
  fence_tensormap(maps.v);
  const uint32_t qbar = smem_addr(&tma_qbar);
  const uint32_t qempty = smem_addr(&tma_qempty);
  KVRing<T, D, TILE_N, STAGES> ring;
#pragma unroll 1
  for (int j = 0;; ++j) {
    mbar_wait(smem_addr(&tma_slot_full), j & 1);
    const TileSlot slot = tma_slot;  // after the wait's acquire, read again each tile
    mbar_arrive(smem_addr(&tma_slot_empty));
    if (slot.n_tiles == 0) {
      if (j > 0) mbar_wait(qempty, (j - 1) & 1);
      tma_tile = slot;
      mbar_arrive(qbar);
      return;
    }
    ring.k.load(maps.k, s_k, bars, slot.kvhead, 0);
    if (j > 0) mbar_wait(qempty, (j - 1) & 1);
    tma_tile = slot;
    mbar_arrive_expect_tx(qbar, kTileM * D * sizeof(T));
#pragma unroll
    for (int cb = 0; cb < D / 64; ++cb) tma_load_3d(s_q + cb * kTileM * 128, maps.q, cb * 64, slot.row0, slot.qhead, qbar);
    ring.run(maps, s_k, s_v, bars, slot.kvhead, 1, slot.n_tiles);
  }
}

// Rows is one thread's view of the online softmax: it holds two rows (lo and
// hi = lo + 8) of its warpgroup's 64, with the running max m (in log2 units)
// and its own partial sum l of the four threads that share each row.
struct Rows {
  int lo, hi;
  float m_lo, m_hi, l_lo, l_hi;
};

// kMaxSlack: the running max a row's exponents are taken against (m) moves
// only when a tile's max passes it by more than this, in log2 units, so
// P = exp2(s·scale·log2(e) − m) stays at most 2^kMaxSlack = 256, which
// fp16, bf16 and the fp32 sums hold exactly as well as they hold 1. O and
// the sums share the stale m, and the end divides one by the other, so the
// result is the same softmax. Once a row's max has settled, its tiles leave
// m (and alpha = 1) as it is, and a warp whose rows all did skips O's
// rescale (softmax_tile's answer): D/2 multiplications a thread a tile.
// Only the consumers with registers to spare (consume's kRoomy) take it: in
// the others ptxas spilled 8 to 68 bytes with it.
constexpr float kMaxSlack = 8.f;

// softmax_tile scales and masks the score tile s (keys key0..), updates the
// running max and sums, writes P in the register layout of wgmma's A operand
// (S's accumulator layout, two n8 column blocks per k16 step, packed to T
// pairs) and returns the factors by which O must be rescaled, and whether
// any row of the warp has one other than 1 (SLACK: kMaxSlack; without it,
// true).
template <typename T, int TILE_N, bool MASK_PASS, bool SLACK>
__device__ __forceinline__ bool softmax_tile(float (&s)[TILE_N / 2], uint32_t (&p)[TILE_N / 16][4], const Head<T>& hd,
                                             int key0, bool masked, int lane, Rows& r, float& alpha_lo,
                                             float& alpha_hi) {
  // The max is taken over the raw scores (the scale is positive) and the
  // scale folded into the exponent's one FFMA: exp2(s·scale·log2(e) − m).
  const float scale = hd.scale_log2;
  // A row sees the keys up to its last visible one, seq_k − 1 and, causal,
  // the row itself (Head::visible); this thread's columns are keys key0 +
  // (lane % 4)·2 + c, c = 8j + e, so the mask is one compare of the
  // constant c with the row's limit, worked out once a tile.
  int last_lo = hd.seq_k - 1;
  int last_hi = last_lo;
  if (hd.causal) {
    last_lo = min(last_lo, r.lo);
    last_hi = min(last_hi, r.hi);
  }
  const int limit_lo = last_lo - key0 - (lane % 4) * 2;
  const int limit_hi = last_hi - key0 - (lane % 4) * 2;
  // MASK_PASS: the mask is a pass of its own over the scores, behind a
  // branch the warpgroup takes as one, which an unmasked tile (most, in a
  // long sequence) skips; it takes registers that only the TMA grid
  // kernel's consumers (240) have: at 232 ptxas spilled. Otherwise the
  // compares ride along the max, issued on every tile.
  if (MASK_PASS && masked) {
#pragma unroll
    for (int j = 0; j < TILE_N / 8; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        if (j * 8 + e > limit_lo) s[j * 4 + e] = kNegInf;
        if (j * 8 + e > limit_hi) s[j * 4 + 2 + e] = kNegInf;
      }
    }
  }
  float mx_lo = kNegInf, mx_hi = kNegInf;
#pragma unroll
  for (int j = 0; j < TILE_N / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (!MASK_PASS && masked) {
        if (j * 8 + e > limit_lo) s[j * 4 + e] = kNegInf;
        if (j * 8 + e > limit_hi) s[j * 4 + 2 + e] = kNegInf;
      }
      mx_lo = fmaxf(mx_lo, s[j * 4 + e]);
      mx_hi = fmaxf(mx_hi, s[j * 4 + 2 + e]);
    }
  }
  const float tile_lo = group_max<4>(mx_lo) * scale;
  const float tile_hi = group_max<4>(mx_hi) * scale;
  float new_lo, new_hi;
  if constexpr (SLACK) {
    // A row with no visible key yet (m = −inf) takes any finite max; −inf
    // against −inf stays, with alpha 1.
    new_lo = tile_lo > r.m_lo + kMaxSlack ? tile_lo : r.m_lo;
    new_hi = tile_hi > r.m_hi + kMaxSlack ? tile_hi : r.m_hi;
    alpha_lo = new_lo == r.m_lo ? 1.f : fast_exp2(r.m_lo - new_lo);
    alpha_hi = new_hi == r.m_hi ? 1.f : fast_exp2(r.m_hi - new_hi);
  } else {
    new_lo = fmaxf(r.m_lo, tile_lo);
    new_hi = fmaxf(r.m_hi, tile_hi);
    alpha_lo = rescale_factor(r.m_lo, new_lo);
    alpha_hi = rescale_factor(r.m_hi, new_hi);
  }
  r.m_lo = new_lo;
  r.m_hi = new_hi;
  // A row that has seen no visible key (m = −inf) has only −inf scores so
  // far, whose exp2 is 0 against any finite base: 0 stands in for m there,
  // once a row rather than once an element.
  const float base_lo = new_lo == kNegInf ? 0.f : new_lo;
  const float base_hi = new_hi == kNegInf ? 0.f : new_hi;
  float sum_lo = 0.f, sum_hi = 0.f;
#pragma unroll
  for (int j = 0; j < TILE_N / 8; ++j) {
    const float p0 = fast_exp2(fmaf(s[j * 4 + 0], scale, -base_lo));
    const float p1 = fast_exp2(fmaf(s[j * 4 + 1], scale, -base_lo));
    const float p2 = fast_exp2(fmaf(s[j * 4 + 2], scale, -base_hi));
    const float p3 = fast_exp2(fmaf(s[j * 4 + 3], scale, -base_hi));
    sum_lo += p0 + p1;
    sum_hi += p2 + p3;
    p[j / 2][(j % 2) * 2 + 0] = pack2<T>(p0, p1);
    p[j / 2][(j % 2) * 2 + 1] = pack2<T>(p2, p3);
  }
  r.l_lo = r.l_lo * alpha_lo + sum_lo;
  r.l_hi = r.l_hi * alpha_hi + sum_hi;
  if constexpr (SLACK) return __any_sync(0xffffffffu, alpha_lo != 1.f || alpha_hi != 1.f);
  return true;
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
  const uint64_t a0 = smem_desc(s_q + cw * 64 * 128, 16, 1024);
  const uint64_t b0 = smem_desc(k_tile, 16, 1024);
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint32_t col = (kk % 4) * 32;  // 16 elements along the 128-byte row
    const uint64_t a = desc_plus(a0, (kk / 4) * kTileM * 128 + col);
    const uint64_t b = desc_plus(b0, (kk / 4) * TILE_N * 128 + col);
    Wgmma<T, TILE_N>::ss(s, a, b, kk > 0);
  }
}

// issue_pv issues O += P·V for one V tile: TILE_N/16 wgmmas, A (P) from
// registers, B (V) MN-major: keys 16kk..16kk+15 are two 8-key groups 1024
// bytes apart (stride), the D/64 column blocks TILE_N·128 bytes apart
// (leading).
template <typename T, int D, int TILE_N>
__device__ __forceinline__ void issue_pv(float (&o)[D / 2], const uint32_t (&p)[TILE_N / 16][4], uint32_t v_tile) {
  const uint64_t v0 = smem_desc(v_tile, TILE_N * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < TILE_N / 16; ++kk) {
    Wgmma<T, D>::rs_tb(o, p[kk], desc_plus(v0, kk * 16 * 128));
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

// tma_store_3d copies the box at smem src to coordinates (c0, c1, c2) of map;
// the copy is in this thread's bulk group.
__device__ __forceinline__ void tma_store_3d(const void* map, int c0, int c1, int c2, uint32_t src) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(map),
               "r"(c0), "r"(c1), "r"(c2), "r"(src)
               : "memory");
}

// store_o_tma normalises this warpgroup's 64 rows of O into its rows of the Q
// tile in shared memory (every wgmma that read them has completed), in the
// same 128-byte swizzled layout, and has one thread copy them out by TMA: a
// box of 64 rows per 64-column block, rows past seq_q dropped by the map's
// bounds. The thread waits for its copies before it leaves.
//
// PERSIST: s_q is the O tile (HopperLayout's kO), which the block's tiles
// share: before writing it the thread waits until its copy of the tile
// before has read it, and it leaves the copy it issues running (the block
// waits for it before it exits). qhead is the tile's head in O's map (the
// grid's kernels read theirs, tma_qhead, in the one thread that stores).
template <typename T, int D, bool PERSIST = false>
__device__ __forceinline__ void store_o_tma(const float (&o)[D / 2], const Rows& r, int lane, uint32_t s_q, int row0,
                                            int cw, int tid, int qhead) {
  if constexpr (PERSIST) {
    if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
    named_barrier(1 + cw, kWarpgroup);
  }
  const float l_lo = group_sum<4>(r.l_lo);
  const float l_hi = group_sum<4>(r.l_hi);
  const float inv_lo = l_lo > 0.f ? 1.f / l_lo : 0.f;
  const float inv_hi = l_hi > 0.f ? 1.f / l_hi : 0.f;
  const int lo = r.lo - row0;  // rows of the 128-row tile
  const int hi = r.hi - row0;
#pragma unroll
  for (int j = 0; j < D / 8; ++j) {
    const int col = j * 8 + (lane % 4) * 2;
    const uint32_t block = s_q + (col / 64) * kTileM * 128 + (col % 8) * 2;
    const int chunk = (col % 64) / 8;
    const uint32_t at_lo = block + lo * 128 + ((chunk ^ (lo & 7)) << 4);
    const uint32_t at_hi = block + hi * 128 + ((chunk ^ (hi & 7)) << 4);
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at_lo), "r"(pack2<T>(o[j * 4 + 0] * inv_lo, o[j * 4 + 1] * inv_lo))
                 : "memory");
    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at_hi), "r"(pack2<T>(o[j * 4 + 2] * inv_hi, o[j * 4 + 3] * inv_hi))
                 : "memory");
  }
  fence_async_shared();  // the stores, visible to the TMA engine's reads
  named_barrier(1 + cw, kWarpgroup);
  if (tid == 0) {
    const void* map = tma_omap;
    fence_tensormap(map);
#pragma unroll
    for (int cb = 0; cb < D / 64; ++cb) {
      tma_store_3d(map, cb * 64, row0 + cw * 64, PERSIST ? qhead : tma_qhead, s_q + cb * kTileM * 128 + cw * 64 * 128);
    }
    asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
    // The block may leave once the copies have read shared memory: their
    // writes complete with the grid, as every bulk copy's do.
    if constexpr (!PERSIST) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
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
//
// PERSIST (with TMA): one of the tiles a block takes in turn. Its Q tile is
// in (the caller waited for it); its K/V tiles are the ring's from the
// block's first (g0, counted over the block's tiles); once its MMAs are done
// it arrives on tma_qempty, so that the next tile's Q may come in while its
// O leaves through the O tile (s_o) to head qhead.
template <typename T, int D, int TILE_N, int STAGES, int OVERLAP, bool AHEAD, bool TMA = false, bool PERSIST = false>
__device__ __forceinline__ void consume(const Head<T>& hd, uint32_t s_q, uint32_t s_k, uint32_t s_v, uint32_t bars,
                                        int row0, int n_tiles, int cw, int tid, int g0 = 0, uint32_t s_o = 0,
                                        int qhead = 0) {
  using L = HopperLayout<T, D, TILE_N, STAGES, PERSIST>;
  static_assert(TMA || !PERSIST, "the persistent schedule is TMA's");
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int wg_row0 = row0 + cw * 64;
  if constexpr (PERSIST) {
    // The caller waited for this tile's Q.
  } else if constexpr (TMA) {
    mbar_wait(smem_addr(&tma_qbar), 0);  // the producer's TMA copy of Q
  } else {
    load_q<T, D>(hd, s_q, wg_row0, cw, tid);
  }

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
  bool moved;  // softmax_tile's answer: O needs its rescale by the alphas
  // The ring's stage of the tile's K/V tile t, and the parity of its
  // phase: counted from the block's first K/V tile (g0 + t; g0 is 0 but in
  // the persistent schedule). TMA's K and V have rings of their own (KVRing):
  // a K stage is freed once its Q·Kᵀ is done, a V stage once its P·V is;
  // the other producers' stage holds both, freed once P·V is done.
  auto stage = [&](int t) { return (g0 + t) % STAGES; };
  auto phase = [&](int t) { return static_cast<uint32_t>((g0 + t) / STAGES) & 1; };
  auto k_tile = [&](int t) { return s_k + stage(t) * L::kKVBytes; };
  auto v_tile = [&](int t) { return s_v + stage(t) * L::kKVBytes; };
  // wait_k returns once K tile t is in its stage, visible to the MMAs (and,
  // but with TMA, V tile t too).
  auto wait_k = [&](int t) {
    mbar_wait(bars + 8 * stage(t), phase(t));
    if constexpr (AHEAD) fence_async_shared();
  };
  auto wait_v = [&](int t) {
    if constexpr (TMA) mbar_wait(bars + 8 * (2 * STAGES + stage(t)), phase(t));
  };
  auto free_k = [&](int t) {
    if constexpr (TMA) mbar_arrive(bars + 8 * (STAGES + stage(t)));
  };
  auto free_v = [&](int t) { mbar_arrive(bars + 8 * ((TMA ? 3 : 1) * STAGES + stage(t))); };
  // q_read says the tile's last Q·Kᵀ is done: with an O tile of its own, the
  // persistent schedule's next Q may come in while this tile ends.
  auto q_read = [&](int t) {
    if constexpr (PERSIST && L::kOwnO) {
      if (t == n_tiles - 1) mbar_arrive(smem_addr(&tma_qempty));
    }
  };
  // finish stores the tile's O once its last MMA is done.
  auto finish = [&] {
    if constexpr (PERSIST && L::kOwnO) {
      store_o_tma<T, D, true>(o, r, lane, s_o, row0, cw, tid, qhead);
    } else if constexpr (PERSIST) {
      // O leaves through the Q tile: the next Q may come in once the copy
      // has read it.
      store_o_tma<T, D, true>(o, r, lane, s_o, row0, cw, tid, qhead);
      if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
      named_barrier(1 + cw, kWarpgroup);
      mbar_arrive(smem_addr(&tma_qempty));
    } else if constexpr (TMA) {
      store_o_tma<T, D>(o, r, lane, s_q, row0, cw, tid, 0);
    } else {
      store_o<T, D>(hd, o, r, lane);
    }
  };
  constexpr bool kTurns = OVERLAP == 2;
  // kRoomy: the consumers have registers to spare. Those with 240 (TMA's) do,
  // but for the persistent schedule's D128 tile_n 128 kernels with turns,
  // where ptxas spilled 28 bytes with the mask pass. They pass over masked
  // tiles on their own (softmax_tile), and rescale O while a Q·Kᵀ runs
  // (step, last_pv); with 232 (cp.async's) ptxas spilled 120 bytes there.
  constexpr bool kRoomy = TMA && !(PERSIST && OVERLAP == 2 && D == 128 && TILE_N == 128);
  constexpr bool kMaskPass = kRoomy;
  const int my_turn = kTurnBarrier + cw;
  const int their_turn = kTurnBarrier + (1 - cw);
  // The first turn is consumer 0's. The persistent schedule's turns run on
  // across its tiles (hopper_attention_persistent hands the first and takes
  // the last): handed per tile, consumer 1 could start the next tile while
  // consumer 0 still owed this tile's last turn, and its two arrivals would
  // complete the named barrier with none of consumer 0's threads (a block
  // hung so, at B4 H32/8 S640 D64 causal, where blocks take five tiles).
  if (kTurns && !PERSIST && cw == 1) named_arrive(their_turn, 2 * kWarpgroup);

  if constexpr (OVERLAP == 0) {
    for (int t = 0; t < n_tiles; ++t) {
      const int key0 = t * TILE_N;
      wait_k(t);
      // A causal tile that starts past this warpgroup's last row adds nothing.
      if (hd.causal && key0 > wg_row0 + 63) {
        free_k(t);
        q_read(t);
        wait_v(t);
        free_v(t);
        continue;
      }
      wgmma_fence();
      issue_qk<T, D, TILE_N>(s, s_q, k_tile(t), cw);
      wgmma_commit();
      wgmma_wait<0>();
      fence_registers(s);
      free_k(t);
      q_read(t);
      moved = softmax_tile<T, TILE_N, kMaskPass, kRoomy>(s, p, hd, key0, tile_masked<T, TILE_N>(hd, key0, wg_row0), lane, r, alpha_lo,
                                                 alpha_hi);
      if (moved) rescale<D>(o, alpha_lo, alpha_hi);
      fence_registers(o);
      wait_v(t);
      wgmma_fence();
      issue_pv<T, D, TILE_N>(o, p, v_tile(t));
      wgmma_commit();
      wgmma_wait<0>();
      fence_registers(o);
      free_v(t);
    }
  } else {
    // Tile 0: S_0 and its softmax; P_0 waits in p.
    wait_k(0);
    wgmma_fence();
    issue_qk<T, D, TILE_N>(s, s_q, k_tile(0), cw);
    wgmma_commit();
    wgmma_wait<0>();
    fence_registers(s);
    free_k(0);
    q_read(0);
    moved = softmax_tile<T, TILE_N, kMaskPass, kRoomy>(s, p, hd, 0, tile_masked<T, TILE_N>(hd, 0, wg_row0), lane, r, alpha_lo,
                                               alpha_hi);
    // One step: S_t in, P_{t-1}·V_{t-1} from p_in, P_t out to p_out. Two
    // buffers alternate (the loop is unrolled by two) so no register copy
    // sits between the wgmmas that read them.
    uint32_t p_alt[TILE_N / 16][4];
    // last_pv issues O += P·V for the tile's last V tile, after the rescale
    // by the factors of the softmax before (P's, in p_in), which kRoomy's
    // steps leave to the next MMAs: they rescale O after their Q·Kᵀ is
    // issued, as FA3 does, so that it runs under the Q·Kᵀ, and wait for the
    // V tile only then, so that neither stands between one step's P·V and
    // the next step's Q·Kᵀ.
    auto last_pv = [&](const uint32_t(&p_in)[TILE_N / 16][4]) {
      if constexpr (kRoomy) {
        if (moved) rescale<D>(o, alpha_lo, alpha_hi);
      }
      fence_registers(o);
      wait_v(n_tiles - 1);
      wgmma_fence();
      issue_pv<T, D, TILE_N>(o, p_in, v_tile(n_tiles - 1));
      wgmma_commit();
    };
    auto step = [&](int t, const uint32_t(&p_in)[TILE_N / 16][4], uint32_t(&p_out)[TILE_N / 16][4]) {
      const int key0 = t * TILE_N;
      wait_k(t);
      if constexpr (!kRoomy) wait_v(t - 1);
      if (kTurns) named_barrier(my_turn, 2 * kWarpgroup);
      if constexpr (!kRoomy) fence_registers(o);
      wgmma_fence();
      issue_qk<T, D, TILE_N>(s, s_q, k_tile(t), cw);
      wgmma_commit();
      if constexpr (kRoomy) {
        if (moved) rescale<D>(o, alpha_lo, alpha_hi);
        fence_registers(o);
        wait_v(t - 1);
        wgmma_fence();
      }
      issue_pv<T, D, TILE_N>(o, p_in, v_tile(t - 1));
      wgmma_commit();
      if (kTurns) named_arrive(their_turn, 2 * kWarpgroup);
      wgmma_wait<1>();  // S_t is in; P_{t-1}·V_{t-1} may still run
      fence_registers(s);
      free_k(t);
      q_read(t);
      moved = softmax_tile<T, TILE_N, kMaskPass, kRoomy>(s, p_out, hd, key0, tile_masked<T, TILE_N>(hd, key0, wg_row0), lane, r,
                                                 alpha_lo, alpha_hi);
      wgmma_wait<0>();
      fence_registers(o);
      free_v(t - 1);
      if constexpr (!kRoomy) {
        if (moved) rescale<D>(o, alpha_lo, alpha_hi);
      }
    };
    int t = 1;
    for (; t + 1 < n_tiles; t += 2) {
      step(t, p, p_alt);
      step(t + 1, p_alt, p);
    }
    // Consumer 1 handed consumer 0 one turn more than it took (the first).
    auto last_turn = [&] {
      if (kTurns && !PERSIST && cw == 0) named_barrier(my_turn, 2 * kWarpgroup);
    };
    if (t < n_tiles) {
      step(t, p, p_alt);
      last_pv(p_alt);
      wgmma_wait<0>();
      fence_registers(o);
      free_v(n_tiles - 1);
      last_turn();
      finish();
      return;
    }
    last_pv(p);
    wgmma_wait<0>();
    fence_registers(o);
    free_v(n_tiles - 1);
    last_turn();
  }
  finish();
}

template <typename T, int D, int TILE_N, int STAGES, int OVERLAP, bool AHEAD, bool TMA = false>
__device__ __forceinline__ void hopper_attention(const Head<T>& hd, unsigned char* smem, Maps maps = Maps{}) {
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
      mbar_init(bars + 8 * s, TMA ? 1 : kWarpgroup);                // full: the producer's threads (TMA: its one)
      mbar_init(bars + 8 * (STAGES + s), kConsumers * kWarpgroup);  // empty: the consumers' threads
      if constexpr (TMA) {                                          // V's ring
        mbar_init(bars + 8 * (2 * STAGES + s), 1);
        mbar_init(bars + 8 * (3 * STAGES + s), kConsumers * kWarpgroup);
      }
    }
    // The KV head's index in the maps, worked out here with the block's
    // registers: its division does not fit the producer's 40 (ptxas spilled).
    if constexpr (TMA) {
      tma_head = maps.head();
      tma_qhead = static_cast<int>(blockIdx.z) * maps.heads + static_cast<int>(blockIdx.y);
      tma_omap = maps.o;
      mbar_init(smem_addr(&tma_qbar), 1);
    }
  }
  __syncthreads();
  const int wg = threadIdx.x / kWarpgroup;
  const int tid = threadIdx.x % kWarpgroup;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(TMA ? kTMAProducerRegs : kProducerRegs));
    if constexpr (TMA) {
      produce_tma<T, D, TILE_N, STAGES>(maps, base + L::kQ, base + L::kK, base + L::kV, bars, n_tiles, tid);
    } else {
      produce<T, D, TILE_N, STAGES, AHEAD>(hd, base + L::kK, base + L::kV, bars, n_tiles, tid);
    }
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(TMA ? kTMAConsumerRegs : kConsumerRegs));
    consume<T, D, TILE_N, STAGES, OVERLAP, AHEAD && !TMA, TMA>(hd, base + L::kQ, base + L::kK, base + L::kV, bars, row0, n_tiles, wg - 1,
                                           tid);
  }
}

// hopper_attention_persistent is the TMA kernel on a persistent grid: each
// block (one an SM) runs tile after tile of the work list (Tiles), the
// producer loading the next tile's K/V and Q while the consumers finish the
// tile before and store its O. counter is a zeroed int in global memory
// (the plan's scratch, reset before every call). The producer's warpgroup
// has two threads at work, one scheduling the tiles (schedule_tiles) and
// one loading them, so that each needs no more than the grid's producer:
// 24 registers, and 240 for each consumer, as in the grid's kernels.
template <typename T, int D, int TILE_N, int STAGES, int OVERLAP>
__device__ __forceinline__ void hopper_attention_persistent(const Head<T>& hd, unsigned char* smem, Maps maps,
                                                            Tiles tiles, int* counter) {
  using L = HopperLayout<T, D, TILE_N, STAGES, true>;
  require_dynamic_smem(L::kLaunchBytes);
  const uint32_t base = (smem_addr(smem) + 1023u) & ~1023u;
  const uint32_t bars = base + L::kBarriers;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bars + 8 * s, 1);                                   // full: the producer's one thread
      mbar_init(bars + 8 * (STAGES + s), kConsumers * kWarpgroup);  // empty: the consumers' threads
      mbar_init(bars + 8 * (2 * STAGES + s), 1);                    // V's ring, the same
      mbar_init(bars + 8 * (3 * STAGES + s), kConsumers * kWarpgroup);
    }
    tma_omap = maps.o;
    mbar_init(smem_addr(&tma_qbar), 1);
    mbar_init(smem_addr(&tma_qempty), kConsumers * kWarpgroup);
    mbar_init(smem_addr(&tma_slot_full), 1);
    mbar_init(smem_addr(&tma_slot_empty), 1);
  }
  __syncthreads();
  const int wg = threadIdx.x / kWarpgroup;
  const int tid = threadIdx.x % kWarpgroup;
  if (wg == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kTMAProducerRegs));
    if (tid == 0) {
      produce_tma_persistent<T, D, TILE_N, STAGES>(maps, base + L::kQ, base + L::kK, base + L::kV, bars);
    } else if (tid == 32) {
      schedule_tiles<T, TILE_N>(hd, tiles, counter);
    }
    return;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kTMAConsumerRegs));
  const int cw = wg - 1;
  // With turns (OVERLAP 2), the first is consumer 0's, and consumer 1's
  // arrival that hands it over is taken back once the last tile is done:
  // the turns run on across the block's tiles (consume).
  if (OVERLAP == 2 && cw == 1) named_arrive(kTurnBarrier, 2 * kWarpgroup);
  int g0 = 0;  // the ring's K/V tiles this block's tiles so far took
#pragma unroll 1
  for (int j = 0;; ++j) {
    mbar_wait(smem_addr(&tma_qbar), j & 1);  // the tile, and its Q by TMA
    const int n_tiles = tma_tile.n_tiles;     // after the wait's acquire, read again each tile
    if (n_tiles == 0) break;
    consume<T, D, TILE_N, STAGES, OVERLAP, false, true, true>(hd, base + L::kQ, base + L::kK, base + L::kV, bars,
                                                             tma_tile.row0, n_tiles, cw, tid, g0, base + L::kO,
                                                             tma_tile.qhead);
    g0 += n_tiles;
  }
  if (OVERLAP == 2 && cw == 0) named_barrier(kTurnBarrier, 2 * kWarpgroup);
  // The last O's copy reads the O tile: the block's shared memory must
  // outlast it.
  if (tid == 0) asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
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

// TMA_KERNEL instantiates the producer = tma entry point
// (attn_fwd_…_tma): the standard parameters, then K's and V's tensor maps
// (const CUtensorMap* in global memory, which the plan asks the kit for).
#define TMA_KERNEL(NAME, T, D, TILE_N, STAGES, OVERLAP)                                                    \
  extern "C" __global__ void __launch_bounds__(kThreads, 1)                                                      \
      NAME(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,         \
           int heads, int kv_heads, int seq_q, int seq_k, int causal, float scale_log2, const void* q_map,         \
           const void* k_map, const void* v_map, const void* o_map) {                                            \
    extern __shared__ __align__(1024) unsigned char hopper_smem[];                                                 \
    const Maps maps = Maps::of(q_map, k_map, v_map, o_map, heads, kv_heads);                                     \
    hopper_attention<T, D, TILE_N, STAGES, OVERLAP, false, true>(                                                 \
        head_of<D>(q, k, v, o, heads, kv_heads, seq_q, seq_k, causal, scale_log2), hopper_smem, maps);           \
  }

// PERSISTENT_KERNEL instantiates the producer = tma-persistent entry point (attn_fwd_…_tma_persistent): the TMA kernel's parameters,
// then the batch size and the tile counter (a zeroed int). Its grid is one
// block an SM at most (the plan's), whatever the work.
#define PERSISTENT_KERNEL(NAME, T, D, TILE_N, STAGES, OVERLAP)                                                   \
  extern "C" __global__ void __launch_bounds__(kThreads, 1)                                                      \
      NAME(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,         \
           int heads, int kv_heads, int seq_q, int seq_k, int causal, float scale_log2, const void* q_map,         \
           const void* k_map, const void* v_map, const void* o_map, int batch, int* counter) {                   \
    extern __shared__ __align__(1024) unsigned char hopper_smem[];                                                 \
    const Maps maps = Maps::of(q_map, k_map, v_map, o_map, heads, kv_heads);                                     \
    Tiles tiles;                                                                                                 \
    tiles.q_tiles = (seq_q + kTileM - 1) / kTileM;                                                               \
    tiles.bh = batch * heads;                                                                                    \
    tiles.heads = heads;                                                                                         \
    tiles.kv_heads = kv_heads;                                                                                   \
    tiles.group = tile_group<T, D>(tiles.bh, heads, kv_heads, seq_k);                                            \
    hopper_attention_persistent<T, D, TILE_N, STAGES, OVERLAP>(                                                   \
        head_of<D>(q, k, v, o, heads, kv_heads, seq_q, seq_k, causal, scale_log2), hopper_smem, maps, tiles,      \
        counter);                                                                                                \
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

TMA_KERNEL(attn_fwd_fp16_d64_n64_s2_o0_tma, half, 64, 64, 2, 0)
TMA_KERNEL(attn_fwd_fp16_d64_n64_s2_o1_tma, half, 64, 64, 2, 1)
TMA_KERNEL(attn_fwd_fp16_d64_n64_s2_o2_tma, half, 64, 64, 2, 2)
TMA_KERNEL(attn_fwd_fp16_d64_n64_s3_o0_tma, half, 64, 64, 3, 0)
TMA_KERNEL(attn_fwd_fp16_d64_n64_s3_o1_tma, half, 64, 64, 3, 1)
TMA_KERNEL(attn_fwd_fp16_d64_n64_s3_o2_tma, half, 64, 64, 3, 2)
TMA_KERNEL(attn_fwd_fp16_d64_n128_s2_o0_tma, half, 64, 128, 2, 0)
TMA_KERNEL(attn_fwd_fp16_d64_n128_s2_o1_tma, half, 64, 128, 2, 1)
TMA_KERNEL(attn_fwd_fp16_d64_n128_s2_o2_tma, half, 64, 128, 2, 2)
TMA_KERNEL(attn_fwd_fp16_d64_n128_s3_o0_tma, half, 64, 128, 3, 0)
TMA_KERNEL(attn_fwd_fp16_d64_n128_s3_o1_tma, half, 64, 128, 3, 1)
TMA_KERNEL(attn_fwd_fp16_d64_n128_s3_o2_tma, half, 64, 128, 3, 2)
TMA_KERNEL(attn_fwd_fp16_d128_n64_s2_o0_tma, half, 128, 64, 2, 0)
TMA_KERNEL(attn_fwd_fp16_d128_n64_s2_o1_tma, half, 128, 64, 2, 1)
TMA_KERNEL(attn_fwd_fp16_d128_n64_s2_o2_tma, half, 128, 64, 2, 2)
TMA_KERNEL(attn_fwd_fp16_d128_n64_s3_o0_tma, half, 128, 64, 3, 0)
TMA_KERNEL(attn_fwd_fp16_d128_n64_s3_o1_tma, half, 128, 64, 3, 1)
TMA_KERNEL(attn_fwd_fp16_d128_n64_s3_o2_tma, half, 128, 64, 3, 2)
TMA_KERNEL(attn_fwd_fp16_d128_n128_s2_o0_tma, half, 128, 128, 2, 0)
TMA_KERNEL(attn_fwd_fp16_d128_n128_s2_o1_tma, half, 128, 128, 2, 1)
TMA_KERNEL(attn_fwd_fp16_d128_n128_s2_o2_tma, half, 128, 128, 2, 2)
TMA_KERNEL(attn_fwd_fp16_d128_n128_s3_o0_tma, half, 128, 128, 3, 0)
TMA_KERNEL(attn_fwd_fp16_d128_n128_s3_o1_tma, half, 128, 128, 3, 1)
TMA_KERNEL(attn_fwd_fp16_d128_n128_s3_o2_tma, half, 128, 128, 3, 2)
TMA_KERNEL(attn_fwd_bf16_d64_n64_s2_o0_tma, __nv_bfloat16, 64, 64, 2, 0)
TMA_KERNEL(attn_fwd_bf16_d64_n64_s2_o1_tma, __nv_bfloat16, 64, 64, 2, 1)
TMA_KERNEL(attn_fwd_bf16_d64_n64_s2_o2_tma, __nv_bfloat16, 64, 64, 2, 2)
TMA_KERNEL(attn_fwd_bf16_d64_n64_s3_o0_tma, __nv_bfloat16, 64, 64, 3, 0)
TMA_KERNEL(attn_fwd_bf16_d64_n64_s3_o1_tma, __nv_bfloat16, 64, 64, 3, 1)
TMA_KERNEL(attn_fwd_bf16_d64_n64_s3_o2_tma, __nv_bfloat16, 64, 64, 3, 2)
TMA_KERNEL(attn_fwd_bf16_d64_n128_s2_o0_tma, __nv_bfloat16, 64, 128, 2, 0)
TMA_KERNEL(attn_fwd_bf16_d64_n128_s2_o1_tma, __nv_bfloat16, 64, 128, 2, 1)
TMA_KERNEL(attn_fwd_bf16_d64_n128_s2_o2_tma, __nv_bfloat16, 64, 128, 2, 2)
TMA_KERNEL(attn_fwd_bf16_d64_n128_s3_o0_tma, __nv_bfloat16, 64, 128, 3, 0)
TMA_KERNEL(attn_fwd_bf16_d64_n128_s3_o1_tma, __nv_bfloat16, 64, 128, 3, 1)
TMA_KERNEL(attn_fwd_bf16_d64_n128_s3_o2_tma, __nv_bfloat16, 64, 128, 3, 2)
TMA_KERNEL(attn_fwd_bf16_d128_n64_s2_o0_tma, __nv_bfloat16, 128, 64, 2, 0)
TMA_KERNEL(attn_fwd_bf16_d128_n64_s2_o1_tma, __nv_bfloat16, 128, 64, 2, 1)
TMA_KERNEL(attn_fwd_bf16_d128_n64_s2_o2_tma, __nv_bfloat16, 128, 64, 2, 2)
TMA_KERNEL(attn_fwd_bf16_d128_n64_s3_o0_tma, __nv_bfloat16, 128, 64, 3, 0)
TMA_KERNEL(attn_fwd_bf16_d128_n64_s3_o1_tma, __nv_bfloat16, 128, 64, 3, 1)
TMA_KERNEL(attn_fwd_bf16_d128_n64_s3_o2_tma, __nv_bfloat16, 128, 64, 3, 2)
TMA_KERNEL(attn_fwd_bf16_d128_n128_s2_o0_tma, __nv_bfloat16, 128, 128, 2, 0)
TMA_KERNEL(attn_fwd_bf16_d128_n128_s2_o1_tma, __nv_bfloat16, 128, 128, 2, 1)
TMA_KERNEL(attn_fwd_bf16_d128_n128_s2_o2_tma, __nv_bfloat16, 128, 128, 2, 2)
TMA_KERNEL(attn_fwd_bf16_d128_n128_s3_o0_tma, __nv_bfloat16, 128, 128, 3, 0)
TMA_KERNEL(attn_fwd_bf16_d128_n128_s3_o1_tma, __nv_bfloat16, 128, 128, 3, 1)
TMA_KERNEL(attn_fwd_bf16_d128_n128_s3_o2_tma, __nv_bfloat16, 128, 128, 3, 2)

// The persistent schedule: every TMA combination (D128 with tile_n 128 and
// 3 stages stores O through the Q tile: HopperLayout::kOwnO).
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n64_s2_o0_tma_persistent, half, 64, 64, 2, 0)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n64_s2_o1_tma_persistent, half, 64, 64, 2, 1)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n64_s2_o2_tma_persistent, half, 64, 64, 2, 2)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n64_s3_o0_tma_persistent, half, 64, 64, 3, 0)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n64_s3_o1_tma_persistent, half, 64, 64, 3, 1)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n64_s3_o2_tma_persistent, half, 64, 64, 3, 2)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n128_s2_o0_tma_persistent, half, 64, 128, 2, 0)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n128_s2_o1_tma_persistent, half, 64, 128, 2, 1)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n128_s2_o2_tma_persistent, half, 64, 128, 2, 2)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n128_s3_o0_tma_persistent, half, 64, 128, 3, 0)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n128_s3_o1_tma_persistent, half, 64, 128, 3, 1)
PERSISTENT_KERNEL(attn_fwd_fp16_d64_n128_s3_o2_tma_persistent, half, 64, 128, 3, 2)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n64_s2_o0_tma_persistent, half, 128, 64, 2, 0)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n64_s2_o1_tma_persistent, half, 128, 64, 2, 1)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n64_s2_o2_tma_persistent, half, 128, 64, 2, 2)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n64_s3_o0_tma_persistent, half, 128, 64, 3, 0)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n64_s3_o1_tma_persistent, half, 128, 64, 3, 1)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n64_s3_o2_tma_persistent, half, 128, 64, 3, 2)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n128_s2_o0_tma_persistent, half, 128, 128, 2, 0)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n128_s2_o1_tma_persistent, half, 128, 128, 2, 1)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n128_s2_o2_tma_persistent, half, 128, 128, 2, 2)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n64_s2_o0_tma_persistent, __nv_bfloat16, 64, 64, 2, 0)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n64_s2_o1_tma_persistent, __nv_bfloat16, 64, 64, 2, 1)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n64_s2_o2_tma_persistent, __nv_bfloat16, 64, 64, 2, 2)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n64_s3_o0_tma_persistent, __nv_bfloat16, 64, 64, 3, 0)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n64_s3_o1_tma_persistent, __nv_bfloat16, 64, 64, 3, 1)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n64_s3_o2_tma_persistent, __nv_bfloat16, 64, 64, 3, 2)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n128_s2_o0_tma_persistent, __nv_bfloat16, 64, 128, 2, 0)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n128_s2_o1_tma_persistent, __nv_bfloat16, 64, 128, 2, 1)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n128_s2_o2_tma_persistent, __nv_bfloat16, 64, 128, 2, 2)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n128_s3_o0_tma_persistent, __nv_bfloat16, 64, 128, 3, 0)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n128_s3_o1_tma_persistent, __nv_bfloat16, 64, 128, 3, 1)
PERSISTENT_KERNEL(attn_fwd_bf16_d64_n128_s3_o2_tma_persistent, __nv_bfloat16, 64, 128, 3, 2)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n64_s2_o0_tma_persistent, __nv_bfloat16, 128, 64, 2, 0)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n64_s2_o1_tma_persistent, __nv_bfloat16, 128, 64, 2, 1)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n64_s2_o2_tma_persistent, __nv_bfloat16, 128, 64, 2, 2)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n64_s3_o0_tma_persistent, __nv_bfloat16, 128, 64, 3, 0)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n64_s3_o1_tma_persistent, __nv_bfloat16, 128, 64, 3, 1)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n64_s3_o2_tma_persistent, __nv_bfloat16, 128, 64, 3, 2)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n128_s2_o0_tma_persistent, __nv_bfloat16, 128, 128, 2, 0)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n128_s2_o1_tma_persistent, __nv_bfloat16, 128, 128, 2, 1)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n128_s2_o2_tma_persistent, __nv_bfloat16, 128, 128, 2, 2)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n128_s3_o0_tma_persistent, half, 128, 128, 3, 0)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n128_s3_o1_tma_persistent, half, 128, 128, 3, 1)
PERSISTENT_KERNEL(attn_fwd_fp16_d128_n128_s3_o2_tma_persistent, half, 128, 128, 3, 2)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n128_s3_o0_tma_persistent, __nv_bfloat16, 128, 128, 3, 0)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n128_s3_o1_tma_persistent, __nv_bfloat16, 128, 128, 3, 1)
PERSISTENT_KERNEL(attn_fwd_bf16_d128_n128_s3_o2_tma_persistent, __nv_bfloat16, 128, 128, 3, 2)

// ---- decode: split-KV attention over a paged KV cache (flash-decoding) -------
//
// The op `decode` (package ops/decode; FlashAttention's flash_attn_with_kvcache
// layout): q [B, q_len, H, D], k_cache and v_cache [num_pages, page_size,
// KVH, D], block_table [B, max_pages] int32, cache_seqlens [B] int32, o [B,
// q_len, H, D]. Key j of sequence b is slot j % page_size of page
// block_table[b, j / page_size]. Query i of sequence b (length L) sits at
// p = L - q_len + i: causal rows see keys j <= p (bottom-right aligned),
// window_left W >= 0 adds j >= p - W, softcap c > 0 replaces the score s by
// c·tanh(s / c).
//
// decode_<dtype>_d<D>_n<TILE_N>_s<STAGES>, the split kernel. Grid (row blocks
// × splits, KV heads, batch), 128 threads (four warps). A block owns the
// query rows that share one KV head, packed GQA-style: packed row
// r = i·(H/KVH) + hh is query i of head kvh·(H/KVH) + hh, sixteen rows a
// block (one m16 tile; more rows take more row blocks, adjacent in the grid so
// that they read the same keys out of L2). It walks one contiguous key range
// (its split: split_keys keys from the first key any query of the sequence
// sees, the last split taking whatever is left) in tiles of TILE_N keys that a
// STAGES-deep cp.async ring brings into shared memory, 16 bytes a copy, each
// key row looked up in the block table; keys past the range are zero-filled,
// never read. Each warp takes a quarter of every tile: S = Q·Kᵀ and O += P·V
// as mma.sync m16n8k16 with fp32 accumulators (ldmatrix from 16-byte chunks
// XOR-swizzled by row), masking, softcap and an online softmax in exp2 in
// registers. At the end the four warps merge their (max, sum, O) through
// shared memory. With one split the block writes O in the dtype itself;
// otherwise it writes its normalised partial O (fp32) and the rows' log2-sum-
// exp2 (LSE; -inf where a row sees no key of the split) to the scratch
// buffers o_part [B·q_len·H, splits, D] and lse_part [B·q_len·H, splits].
//
// decode_<dtype>_d<D>_combine, the second kernel when there are several
// splits: one warp per output row merges the splits by their LSEs (a split
// whose LSE is -inf is skipped, its partial never read) and writes O.
//
// The Go side (decode.go, decodeSharedBytes) computes the same shared memory
// size; the kernel traps if launched with less.

namespace paged_decode {

constexpr int kThreads = 128;
constexpr int kWarps = kThreads / 32;
constexpr int kRows = 16;  // packed query rows a block: one m16 tile
// At least three blocks' registers per SM (168 a thread): what the ptxas gate
// allows every kernel of the plugin, and room for two or three blocks where
// their shared memory fits.
constexpr int kMinBlocks = 3;
// The combine's: 64 registers a thread. Left to itself ptxas gave one
// instantiation 32 registers and a 4-byte spill.
constexpr int kCombineMinBlocks = 8;

template <typename T, int D, int TILE_N, int STAGES>
struct Layout {
  static constexpr int kTileBytes = TILE_N * D * static_cast<int>(sizeof(T));
  static constexpr int kQ = 0;
  static constexpr int kK = kRows * D * static_cast<int>(sizeof(T));
  static constexpr int kV = kK + STAGES * kTileBytes;
  static constexpr int kBytes = kV + STAGES * kTileBytes;
  // The merge at the end reuses the K/V stages: each warp's O (rows padded
  // by 8 floats against bank conflicts), then its row maxima and sums.
  static constexpr int kMergeLd = D + 8;
  static constexpr int kMergeO = kK;
  static constexpr int kMergeM = kMergeO + kWarps * kRows * kMergeLd * 4;
  static constexpr int kMergeL = kMergeM + kWarps * kRows * 4;
  static_assert(kMergeL + kWarps * kRows * 4 <= kBytes, "the merge fits in the K/V stages");
  static_assert(kTileBytes % 128 == 0, "stages stay 128-byte aligned");
};

// swz is the element offset of 16-byte chunk c of row r in a [rows][D] tile
// whose chunks are XOR-swizzled by r % 8: the eight rows one ldmatrix matrix
// reads then sit in eight different bank groups.
template <int D>
__device__ __forceinline__ int swz(int r, int c) {
  return r * D + ((c ^ (r & 7)) << 3);
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr)
               : "memory");
}

// Mma<T> is mma.sync m16n8k16 with fp32 accumulators (d += a·b) and the
// packing of two floats into one register of its A operand.
template <typename T> struct Mma;

template <> struct Mma<half> {
  static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

template <> struct Mma<__nv_bfloat16> {
  static __device__ __forceinline__ void run(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
};

// store4 writes four floats as four elements of T (one 8-byte store).
template <typename T>
__device__ __forceinline__ void store4(T* dst, float4 v) {
  uint2 raw;
  raw.x = Mma<T>::pack(v.x, v.y);
  raw.y = Mma<T>::pack(v.z, v.w);
  *reinterpret_cast<uint2*>(dst) = raw;
}

// Decode is one block's view of the problem: where its rows and keys are.
// DENSE is dense attention's layout (split_kernel's DENSE): q and o [B, H,
// q_len, D], queries aligned top-left.
template <bool DENSE>
struct Decode {
  int heads, kv_heads, q_len, group, rows_total;
  int b, kvh, row0, split, num_splits;
  int seqlen;      // L, clamped to the block table's reach
  int start, end;  // the block's keys [start, end): its split's, cut at the last its rows see
  int causal, window_left;

  // global_row is the row of q and o (of [B·q_len·H, D], or [B·H·q_len, D]
  // dense) of packed row r.
  __device__ __forceinline__ size_t global_row(int r) const {
    const int i = r / group;
    const int h = kvh * group + r % group;
    if constexpr (DENSE) return (static_cast<size_t>(b) * heads + h) * q_len + i;
    return (static_cast<size_t>(b) * q_len + i) * heads + h;
  }
  // position is where query i sits among the keys: bottom-right aligned in
  // the cache, top-left in dense attention.
  __device__ __forceinline__ int position(int i) const { return DENSE ? i : seqlen - q_len + i; }
  // key_end is one past the last key query i sees within the split.
  __device__ __forceinline__ int key_end(int i) const { return min(causal ? position(i) + 1 : seqlen, end); }
  // key_begin is the first key query i sees (the split's start bounds it too).
  __device__ __forceinline__ int key_begin(int i) const {
    return window_left >= 0 ? max(start, position(i) - window_left) : start;
  }
};

template <typename T, int D, int TILE_N, int STAGES, bool DENSE>
__device__ __forceinline__ void split_kernel(const T* __restrict__ q, const T* __restrict__ k_cache,
                                             const T* __restrict__ v_cache, const int* __restrict__ block_table,
                                             const int* __restrict__ cache_seqlens, T* __restrict__ o,
                                             float* __restrict__ o_part, float* __restrict__ lse_part, int heads,
                                             int kv_heads, int q_len, int page_size, int max_pages, int split_keys,
                                             int causal, int window_left, float score_scale, float softcap_log2,
                                             unsigned char* smem) {
  using L = Layout<T, D, TILE_N, STAGES>;
  constexpr int kChunks = D / 8;                // 16-byte chunks of a row
  constexpr int kWarpKeys = TILE_N / kWarps;    // keys of a tile one warp takes
  constexpr int kNB = kWarpKeys / 8;            // its n8 blocks of scores
  constexpr int kPasses = TILE_N * kChunks / kThreads;  // copies per thread per tile (of K, and of V)
  static_assert(kWarpKeys % 16 == 0 && kPasses * kThreads == TILE_N * kChunks && kThreads % kChunks == 0, "tile shape");
  require_dynamic_smem(L::kBytes);

  Decode<DENSE> p;
  p.heads = heads;
  p.kv_heads = kv_heads;
  p.q_len = q_len;
  p.group = heads / kv_heads;
  p.rows_total = q_len * p.group;
  const int row_blocks = (p.rows_total + kRows - 1) / kRows;
  p.num_splits = gridDim.x / row_blocks;
  p.row0 = (blockIdx.x % row_blocks) * kRows;
  p.split = blockIdx.x / row_blocks;
  p.kvh = blockIdx.y;
  p.b = blockIdx.z;
  p.causal = causal;
  p.window_left = window_left;
  // Dense: one "page" of seq_k keys per (sequence, KV head), no table.
  p.seqlen = DENSE ? page_size : max(0, min(cache_seqlens[p.b], max_pages * page_size));
  // The split's keys, counted from the first key any query of the sequence sees.
  const int range_begin = window_left >= 0 ? max(0, p.position(0) - window_left) : 0;
  p.start = range_begin + p.split * split_keys;
  p.end = p.split == p.num_splits - 1 ? p.seqlen : min(p.seqlen, p.start + split_keys);
  // Causal: no row of the block sees past its last query's position, so
  // the tiles beyond are not walked (top-left, the first rows see few keys).
  if (causal) p.end = min(p.end, p.position((min(p.row0 + kRows, p.rows_total) - 1) / p.group) + 1);
  const bool direct = p.num_splits == 1;  // write O itself: no partials, no combine

  if (p.start >= p.end) {
    // No key in this split: its rows' LSE is -inf (the combine skips it);
    // with a single split (an empty sequence) O is zero.
    for (int r = threadIdx.x; r < kRows; r += kThreads) {
      if (p.row0 + r < p.rows_total && !direct) lse_part[p.global_row(p.row0 + r) * p.num_splits + p.split] = kNegInf;
    }
    if (direct) {
      for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
        const int r = p.row0 + c / kChunks;
        if (r < p.rows_total) *reinterpret_cast<uint4*>(o + p.global_row(r) * D + (c % kChunks) * 8) = make_uint4(0, 0, 0, 0);
      }
    }
    return;
  }

  const uint32_t base = smem_addr(smem);
  T* s_q = reinterpret_cast<T*>(smem + L::kQ);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const int g = lane / 4;   // this thread's rows of the m16 tile: g and g + 8
  const int qd = lane % 4;  // and its pair of columns in each n8 block: 2·qd, 2·qd + 1

  // Q: the block's 16 packed rows, zeros past the last (group·q_len) row.
  for (int c = threadIdx.x; c < kRows * kChunks; c += kThreads) {
    const int r = c / kChunks;
    const int ch = c % kChunks;
    const bool valid = p.row0 + r < p.rows_total;
    const T* src = valid ? q + p.global_row(p.row0 + r) * D + ch * 8 : q;
    cp_async_16(s_q + swz<D>(r, ch), src, valid);
  }

  // load_tile copies keys [start + t·TILE_N, +TILE_N) of K and V into stage
  // `stage`, each key row from its page; keys at or past the split's end are
  // zero-filled and their block-table entries never read. Tiles are loaded
  // in order, t = 0, 1, ...: each thread keeps the (page index, slot) of its
  // first row of the next tile and steps it, one division a tile instead of
  // one a row.
  const int ch = threadIdx.x % kChunks;  // the chunk of each row this thread copies
  const int r_first = threadIdx.x / kChunks;
  constexpr int kRowStep = kThreads / kChunks;  // rows between a thread's copies
  const size_t head_offset = static_cast<size_t>(p.kvh) * D + ch * 8;
  const size_t slot_stride = static_cast<size_t>(kv_heads) * D;  // elements from one slot to the next
  const int* table = DENSE ? nullptr : block_table + static_cast<size_t>(p.b) * max_pages;
  int cursor_page = (p.start + r_first) / page_size;
  int cursor_slot = (p.start + r_first) - cursor_page * page_size;
  // Dense: K and V [B, KVH, seq_k, D], this block's head's keys in a row.
  const size_t dense_rows = (static_cast<size_t>(p.b) * kv_heads + p.kvh) * static_cast<size_t>(p.seqlen) * D + ch * 8;
  auto load_tile = [&](int t, int stage) {
    const int j0 = p.start + t * TILE_N;
    T* s_k = reinterpret_cast<T*>(smem + L::kK + stage * L::kTileBytes);
    T* s_v = reinterpret_cast<T*>(smem + L::kV + stage * L::kTileBytes);
    if constexpr (DENSE) {
#pragma unroll
      for (int pass = 0; pass < kPasses; ++pass) {
        const int r = r_first + pass * kRowStep;
        const bool valid = j0 + r < p.end;
        const size_t at = dense_rows + (valid ? static_cast<size_t>(j0 + r) * D : 0);
        cp_async_16(s_k + swz<D>(r, ch), k_cache + at, valid);
        cp_async_16(s_v + swz<D>(r, ch), v_cache + at, valid);
      }
      return;
    }
    int page_index = cursor_page;
    int slot = cursor_slot;
#pragma unroll
    for (int pass = 0; pass < kPasses; ++pass) {
      const int r = r_first + pass * kRowStep;
      const bool valid = j0 + r < p.end;
      size_t at = 0;
      if (valid) at = (static_cast<size_t>(table[page_index]) * page_size + slot) * slot_stride + head_offset;
      cp_async_16(s_k + swz<D>(r, ch), k_cache + at, valid);
      cp_async_16(s_v + swz<D>(r, ch), v_cache + at, valid);
      slot += kRowStep;
      while (slot >= page_size) {  // at most once where page_size >= kRowStep (8 or 16)
        slot -= page_size;
        ++page_index;
      }
    }
    cursor_slot += TILE_N;
    const int pages = cursor_slot / page_size;
    cursor_page += pages;
    cursor_slot -= pages * page_size;
  };

  const int n_tiles = (p.end - p.start + TILE_N - 1) / TILE_N;
#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < n_tiles) load_tile(s, s);
    cp_async_commit();  // one group per stage, empty or not, so the waits count alike
  }

  // Row bounds: this thread's two rows, and the block's (for tiles every row
  // sees whole, which skip the masking). A padding row (past rows_total)
  // takes the last real row's bounds; its Q is zero and it is never written.
  int lo[2], hi[2];
#pragma unroll
  for (int rho = 0; rho < 2; ++rho) {
    const int i = min(p.row0 + g + 8 * rho, p.rows_total - 1) / p.group;
    lo[rho] = p.key_begin(i);
    hi[rho] = p.key_end(i);
  }
  const int i_first = p.row0 / p.group;
  const int i_last = (min(p.row0 + kRows, p.rows_total) - 1) / p.group;
  const int block_lo = p.key_begin(i_last);  // the largest first key of the block's rows
  const int block_hi = p.key_end(i_first);   // the smallest end

  float acc[D / 8][4];
#pragma unroll
  for (int db = 0; db < D / 8; ++db) acc[db][0] = acc[db][1] = acc[db][2] = acc[db][3] = 0.f;
  float m[2] = {kNegInf, kNegInf};
  float l[2] = {0.f, 0.f};
  const int wk0 = warp * kWarpKeys;  // this warp's first key row in each tile

  for (int t = 0; t < n_tiles; ++t) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();  // tile t has landed; every warp is done with tile t-1's stage
    {
      const int next = t + STAGES - 1;
      if (next < n_tiles) load_tile(next, next % STAGES);
      cp_async_commit();
    }
    const int stage = t % STAGES;
    const uint32_t k_base = base + L::kK + stage * L::kTileBytes;
    const uint32_t v_base = base + L::kV + stage * L::kTileBytes;
    const int j0 = p.start + t * TILE_N;

    // S = Q·Kᵀ over this warp's kWarpKeys keys.
    float s[kNB][4];
#pragma unroll
    for (int nb = 0; nb < kNB; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.f;
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks) {
      // Q's fragment (the A operand) comes from shared memory every tile:
      // kept in registers it would cost D/4 of them for little.
      uint32_t qf[4];
      ldmatrix_x4(qf, base + L::kQ + swz<D>(lane % 16, 2 * ks + lane / 16) * static_cast<int>(sizeof(T)));
#pragma unroll
      for (int np = 0; np < kNB / 2; ++np) {
        const int key = wk0 + np * 16 + (lane / 16) * 8 + lane % 8;
        uint32_t bk[4];
        ldmatrix_x4(bk, k_base + swz<D>(key, 2 * ks + (lane / 8) % 2) * static_cast<int>(sizeof(T)));
        Mma<T>::run(s[2 * np], qf, bk[0], bk[1]);
        Mma<T>::run(s[2 * np + 1], qf, bk[2], bk[3]);
      }
    }

    // Scale (log2 units), softcap, mask.
    const bool whole = j0 >= block_lo && j0 + TILE_N <= block_hi;
#pragma unroll
    for (int nb = 0; nb < kNB; ++nb) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[nb][e] * score_scale;
        if (softcap_log2 > 0.f) x = tanhf(x) * softcap_log2;
        if (!whole) {
          const int j = j0 + wk0 + nb * 8 + 2 * qd + (e & 1);
          if (j < lo[e >> 1] || j >= hi[e >> 1]) x = kNegInf;
        }
        s[nb][e] = x;
      }
    }

    // Online softmax, per row: the quad of lanes that holds it reduces.
#pragma unroll
    for (int rho = 0; rho < 2; ++rho) {
      float mx = kNegInf;
#pragma unroll
      for (int nb = 0; nb < kNB; ++nb) mx = fmaxf(mx, fmaxf(s[nb][2 * rho], s[nb][2 * rho + 1]));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(m[rho], mx);
      const float shift = m_new == kNegInf ? 0.f : m_new;  // no key yet: exp2(-inf - 0) = 0, not NaN
      const float alpha = fast_exp2(m[rho] - shift);
      m[rho] = m_new;
      float sum = 0.f;
#pragma unroll
      for (int nb = 0; nb < kNB; ++nb) {
        s[nb][2 * rho] = fast_exp2(s[nb][2 * rho] - shift);
        s[nb][2 * rho + 1] = fast_exp2(s[nb][2 * rho + 1] - shift);
        sum += s[nb][2 * rho] + s[nb][2 * rho + 1];
      }
      l[rho] = l[rho] * alpha + sum;
#pragma unroll
      for (int db = 0; db < D / 8; ++db) {
        acc[db][2 * rho] *= alpha;
        acc[db][2 * rho + 1] *= alpha;
      }
    }

    // O += P·V: P's accumulator layout is the A operand's, 16 keys a step.
#pragma unroll
    for (int kb = 0; kb < kNB / 2; ++kb) {
      const uint32_t pa[4] = {Mma<T>::pack(s[2 * kb][0], s[2 * kb][1]), Mma<T>::pack(s[2 * kb][2], s[2 * kb][3]),
                              Mma<T>::pack(s[2 * kb + 1][0], s[2 * kb + 1][1]),
                              Mma<T>::pack(s[2 * kb + 1][2], s[2 * kb + 1][3])};
      const int key = wk0 + kb * 16 + lane % 8 + ((lane / 8) % 2) * 8;
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        uint32_t bv[4];
        ldmatrix_x4_trans(bv, v_base + swz<D>(key, 2 * dp + lane / 16) * static_cast<int>(sizeof(T)));
        Mma<T>::run(acc[2 * dp], pa, bv[0], bv[1]);
        Mma<T>::run(acc[2 * dp + 1], pa, bv[2], bv[3]);
      }
    }
  }

  // Merge the four warps: every warp is done with the stages, which the
  // merge buffers reuse.
  cp_async_wait<0>();
  __syncthreads();
  float* s_o = reinterpret_cast<float*>(smem + L::kMergeO);
  float* s_m = reinterpret_cast<float*>(smem + L::kMergeM);
  float* s_l = reinterpret_cast<float*>(smem + L::kMergeL);
#pragma unroll
  for (int rho = 0; rho < 2; ++rho) {
    l[rho] += __shfl_xor_sync(0xffffffffu, l[rho], 1);
    l[rho] += __shfl_xor_sync(0xffffffffu, l[rho], 2);
    if (qd == 0) {
      s_m[warp * kRows + g + 8 * rho] = m[rho];
      s_l[warp * kRows + g + 8 * rho] = l[rho];
    }
  }
  __syncthreads();
#pragma unroll
  for (int rho = 0; rho < 2; ++rho) {
    const int r = g + 8 * rho;
    float row_max = kNegInf;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) row_max = fmaxf(row_max, s_m[w * kRows + r]);
    float row_sum = 0.f;
    if (row_max != kNegInf) {
#pragma unroll
      for (int w = 0; w < kWarps; ++w) row_sum += s_l[w * kRows + r] * fast_exp2(s_m[w * kRows + r] - row_max);
    }
    // This warp's share of the row, normalised; 0 where the row saw no key.
    const float scale = row_sum > 0.f ? fast_exp2(m[rho] - row_max) / row_sum : 0.f;
#pragma unroll
    for (int db = 0; db < D / 8; ++db) {
      *reinterpret_cast<float2*>(s_o + (warp * kRows + r) * L::kMergeLd + db * 8 + 2 * qd) =
          make_float2(acc[db][2 * rho] * scale, acc[db][2 * rho + 1] * scale);
    }
    if (!direct && warp == 0 && qd == 0 && p.row0 + r < p.rows_total) {
      lse_part[p.global_row(p.row0 + r) * p.num_splits + p.split] = row_sum > 0.f ? row_max + log2f(row_sum) : kNegInf;
    }
  }
  __syncthreads();
  for (int c = threadIdx.x; c < kRows * D / 4; c += kThreads) {
    const int r = c / (D / 4);
    const int d = (c % (D / 4)) * 4;
    if (p.row0 + r >= p.rows_total) continue;
    float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float4 x = *reinterpret_cast<const float4*>(s_o + (w * kRows + r) * L::kMergeLd + d);
      v.x += x.x;
      v.y += x.y;
      v.z += x.z;
      v.w += x.w;
    }
    const size_t row = p.global_row(p.row0 + r);
    if (direct) {
      store4<T>(o + row * D + d, v);
    } else {
      *reinterpret_cast<float4*>(o_part + (row * p.num_splits + p.split) * D + d) = v;
    }
  }
}

// kMaxSplits bounds the splits the combine takes: four LSEs a lane (the
// plan's decodeMaxSplits).
constexpr int kMaxSplits = 128;

// combine_kernel merges the splits of one output row a warp: the LSE-weighted
// mean of the splits' normalised partial outputs, skipping splits whose LSE is
// -inf (their partials are not written). The LSEs are read at once, one a
// lane, and the weights shared by shuffles, so the partials' loads do not
// wait on them one by one.
template <typename T, int D>
__device__ __forceinline__ void combine_kernel(const float* __restrict__ o_part, const float* __restrict__ lse_part,
                                               T* __restrict__ o, int rows, int num_splits) {
  constexpr int kPer = D / 32;  // output elements a lane
  constexpr int kLSEs = kMaxSplits / 32;
  static_assert(kPer == 2 || kPer == 4, "head dim 64 or 128");
  if (num_splits > kMaxSplits) __trap();
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * kWarps + threadIdx.x / 32;
  if (row >= rows) return;
  const float* lse = lse_part + static_cast<size_t>(row) * num_splits;
  float w[kLSEs];
  float row_max = kNegInf;
#pragma unroll
  for (int k = 0; k < kLSEs; ++k) {
    const int s = lane + 32 * k;
    w[k] = s < num_splits ? lse[s] : kNegInf;
    row_max = fmaxf(row_max, w[k]);
  }
  row_max = group_max<32>(row_max);
  float sum = 0.f;
#pragma unroll
  for (int k = 0; k < kLSEs; ++k) {
    w[k] = w[k] == kNegInf ? 0.f : fast_exp2(w[k] - row_max);  // all -inf: every weight 0
    sum += w[k];
  }
  sum = group_sum<32>(sum);
  float acc[kPer] = {};
  const float* part = o_part + static_cast<size_t>(row) * num_splits * D + lane * kPer;
#pragma unroll
  for (int k = 0; k < kLSEs; ++k) {
    const int n = min(32, num_splits - 32 * k);
#pragma unroll 8
    for (int ss = 0; ss < n; ++ss) {
      const float ws = __shfl_sync(0xffffffffu, w[k], ss);
      if (ws == 0.f) continue;  // the same in every lane: a split this row has no key in
      const float* src = part + static_cast<size_t>(32 * k + ss) * D;
      if constexpr (kPer == 4) {
        const float4 x = *reinterpret_cast<const float4*>(src);
        acc[0] += ws * x.x;
        acc[1] += ws * x.y;
        acc[2] += ws * x.z;
        acc[3] += ws * x.w;
      } else {
        const float2 x = *reinterpret_cast<const float2*>(src);
        acc[0] += ws * x.x;
        acc[1] += ws * x.y;
      }
    }
  }
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  T* dst = o + static_cast<size_t>(row) * D + lane * kPer;
  if constexpr (kPer == 4) {
    store4<T>(dst, make_float4(acc[0] * inv, acc[1] * inv, acc[2] * inv, acc[3] * inv));
  } else {
    *reinterpret_cast<uint32_t*>(dst) = Mma<T>::pack(acc[0] * inv, acc[1] * inv);
  }
}

}  // namespace paged_decode

// DECODE_KERNEL instantiates one split kernel, decode_<dtype>_d<D>_n<TILE_N>_s<STAGES>
// (cudakit.OpKernelName): the op's tensors in order (q, k_cache, v_cache,
// block_table, cache_seqlens, o), the scratch (o_part, lse_part; null with
// one split), then heads, kv_heads, q_len, page_size, max_pages, split_keys,
// causal, window_left, the score scale (scale·log2(e), or scale / softcap with
// a softcap) and softcap·log2(e) (0: none).
#define DECODE_KERNEL(NAME, T, D, TILE_N, STAGES)                                                                     \
  extern "C" __global__ void __launch_bounds__(paged_decode::kThreads, paged_decode::kMinBlocks)                    \
      NAME(const T* __restrict__ q, const T* __restrict__ k_cache, const T* __restrict__ v_cache,                    \
           const int* __restrict__ block_table, const int* __restrict__ cache_seqlens, T* __restrict__ o,            \
           float* __restrict__ o_part, float* __restrict__ lse_part, int heads, int kv_heads, int q_len,              \
           int page_size, int max_pages, int split_keys, int causal, int window_left, float score_scale,              \
           float softcap_log2) {                                                                                      \
    extern __shared__ __align__(128) unsigned char decode_smem[];                                                   \
    paged_decode::split_kernel<T, D, TILE_N, STAGES, false>(q, k_cache, v_cache, block_table, cache_seqlens, o,     \
                                                            o_part, lse_part, heads, kv_heads, q_len, page_size,      \
                                                            max_pages, split_keys, causal, window_left, score_scale,  \
                                                            softcap_log2, decode_smem);                               \
  }

// SPLIT_KERNEL instantiates the same split kernel for dense attention
// forward, attn_fwd_<dtype>_d<D>_split_n<TILE_N>_s<STAGES>, which the plan
// picks where the query rows are few (decode-like shapes: a 128-row wgmma
// tile would be mostly empty, and the grid would leave SMs idle). Its
// layout is attention's: q and o [B, H, seq_q, D], k and v [B, KVH, seq_k,
// D]; causal is top-left. Parameters: q, k, v, o, the scratch (o_part,
// lse_part; null with one split), heads, kv_heads, seq_q, seq_k, split_keys,
// causal and scale·log2(e). With several splits the combine kernel follows
// (attn_fwd_<dtype>_d<D>_combine: the same kernel as decode's; the rows of
// o are [B·H·seq_q, D]).
#define SPLIT_KERNEL(NAME, T, D, TILE_N, STAGES)                                                                      \
  extern "C" __global__ void __launch_bounds__(paged_decode::kThreads, paged_decode::kMinBlocks)                    \
      NAME(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o,             \
           float* __restrict__ o_part, float* __restrict__ lse_part, int heads, int kv_heads, int seq_q, int seq_k,  \
           int split_keys, int causal, float score_scale) {                                                          \
    extern __shared__ __align__(128) unsigned char split_smem[];                                                    \
    paged_decode::split_kernel<T, D, TILE_N, STAGES, true>(q, k, v, nullptr, nullptr, o, o_part, lse_part, heads,    \
                                                           kv_heads, seq_q, seq_k, 1, split_keys, causal, -1,         \
                                                           score_scale, 0.f, split_smem);                             \
  }

// COMBINE_KERNEL instantiates decode_<dtype>_d<D>_combine (and attention's
// attn_fwd_<dtype>_d<D>_combine): o_part, lse_part, o, the output rows
// (B·q_len·H) and the splits; four rows a block.
#define COMBINE_KERNEL(NAME, T, D)                                                                            \
  extern "C" __global__ void __launch_bounds__(paged_decode::kThreads, paged_decode::kCombineMinBlocks)             \
      NAME(const float* __restrict__ o_part, const float* __restrict__ lse_part, T* __restrict__ o, int rows,         \
           int num_splits) {                                                                                          \
    paged_decode::combine_kernel<T, D>(o_part, lse_part, o, rows, num_splits);                                        \
  }

DECODE_KERNEL(decode_fp16_d64_n64_s2, half, 64, 64, 2)
DECODE_KERNEL(decode_fp16_d64_n64_s3, half, 64, 64, 3)
DECODE_KERNEL(decode_fp16_d64_n128_s2, half, 64, 128, 2)
DECODE_KERNEL(decode_fp16_d64_n128_s3, half, 64, 128, 3)
DECODE_KERNEL(decode_fp16_d128_n64_s2, half, 128, 64, 2)
DECODE_KERNEL(decode_fp16_d128_n64_s3, half, 128, 64, 3)
DECODE_KERNEL(decode_fp16_d128_n128_s2, half, 128, 128, 2)
DECODE_KERNEL(decode_fp16_d128_n128_s3, half, 128, 128, 3)
DECODE_KERNEL(decode_bf16_d64_n64_s2, __nv_bfloat16, 64, 64, 2)
DECODE_KERNEL(decode_bf16_d64_n64_s3, __nv_bfloat16, 64, 64, 3)
DECODE_KERNEL(decode_bf16_d64_n128_s2, __nv_bfloat16, 64, 128, 2)
DECODE_KERNEL(decode_bf16_d64_n128_s3, __nv_bfloat16, 64, 128, 3)
DECODE_KERNEL(decode_bf16_d128_n64_s2, __nv_bfloat16, 128, 64, 2)
DECODE_KERNEL(decode_bf16_d128_n64_s3, __nv_bfloat16, 128, 64, 3)
DECODE_KERNEL(decode_bf16_d128_n128_s2, __nv_bfloat16, 128, 128, 2)
DECODE_KERNEL(decode_bf16_d128_n128_s3, __nv_bfloat16, 128, 128, 3)

COMBINE_KERNEL(decode_fp16_d64_combine, half, 64)
COMBINE_KERNEL(decode_fp16_d128_combine, half, 128)
COMBINE_KERNEL(decode_bf16_d64_combine, __nv_bfloat16, 64)
COMBINE_KERNEL(decode_bf16_d128_combine, __nv_bfloat16, 128)

SPLIT_KERNEL(attn_fwd_fp16_d64_split_n64_s2, half, 64, 64, 2)
SPLIT_KERNEL(attn_fwd_fp16_d64_split_n64_s3, half, 64, 64, 3)
SPLIT_KERNEL(attn_fwd_fp16_d64_split_n128_s2, half, 64, 128, 2)
SPLIT_KERNEL(attn_fwd_fp16_d64_split_n128_s3, half, 64, 128, 3)
SPLIT_KERNEL(attn_fwd_fp16_d128_split_n64_s2, half, 128, 64, 2)
SPLIT_KERNEL(attn_fwd_fp16_d128_split_n64_s3, half, 128, 64, 3)
SPLIT_KERNEL(attn_fwd_fp16_d128_split_n128_s2, half, 128, 128, 2)
SPLIT_KERNEL(attn_fwd_fp16_d128_split_n128_s3, half, 128, 128, 3)
SPLIT_KERNEL(attn_fwd_bf16_d64_split_n64_s2, __nv_bfloat16, 64, 64, 2)
SPLIT_KERNEL(attn_fwd_bf16_d64_split_n64_s3, __nv_bfloat16, 64, 64, 3)
SPLIT_KERNEL(attn_fwd_bf16_d64_split_n128_s2, __nv_bfloat16, 64, 128, 2)
SPLIT_KERNEL(attn_fwd_bf16_d64_split_n128_s3, __nv_bfloat16, 64, 128, 3)
SPLIT_KERNEL(attn_fwd_bf16_d128_split_n64_s2, __nv_bfloat16, 128, 64, 2)
SPLIT_KERNEL(attn_fwd_bf16_d128_split_n64_s3, __nv_bfloat16, 128, 64, 3)
SPLIT_KERNEL(attn_fwd_bf16_d128_split_n128_s2, __nv_bfloat16, 128, 128, 2)
SPLIT_KERNEL(attn_fwd_bf16_d128_split_n128_s3, __nv_bfloat16, 128, 128, 3)

COMBINE_KERNEL(attn_fwd_fp16_d64_combine, half, 64)
COMBINE_KERNEL(attn_fwd_fp16_d128_combine, half, 128)
COMBINE_KERNEL(attn_fwd_bf16_d64_combine, __nv_bfloat16, 64)
COMBINE_KERNEL(attn_fwd_bf16_d128_combine, __nv_bfloat16, 128)
