// timing.cu: the kernels the measurement contract needs around every timed
// attention launch (docs/measurement.md).
//
// flashcore_spin holds the stream for a given number of nanoseconds, so that
// the host can queue the start event, the measured kernel and the stop event
// before any of them runs: the events then bracket device work only, with no
// host launch gap inside. While it spins it also measures the SM clock as
// clock64 cycles over %globaltimer nanoseconds, so every sample records the
// clock it ran at.
//
// flashcore_flush_l2 writes a buffer (twice the L2 size) so that the next
// kernel finds none of its inputs in L2: the "cold" L2 mode.
#include <stdint.h>

__device__ __forceinline__ uint64_t global_timer_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Launch with one block of one thread. clock_mhz may be null; otherwise
// clock_mhz[slot] receives the SM clock seen during the spin, in MHz.
extern "C" __global__ void flashcore_spin(uint64_t ns, float* clock_mhz, int slot) {
  const uint64_t t0 = global_timer_ns();
  const long long c0 = clock64();
  uint64_t t = t0;
  while (t - t0 < ns) t = global_timer_ns();
  const long long c1 = clock64();
  if (clock_mhz != nullptr && t > t0) {
    clock_mhz[slot] = static_cast<float>(static_cast<double>(c1 - c0) * 1000.0 / static_cast<double>(t - t0));
  }
}

// Grid-stride write of n16 16-byte words. salt changes the written values
// from one flush to the next so no write is elided.
extern "C" __global__ void flashcore_flush_l2(uint4* buf, uint64_t n16, unsigned int salt) {
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += stride) {
    buf[i] = make_uint4(salt, static_cast<unsigned int>(i), salt ^ 0x9e3779b9u, static_cast<unsigned int>(i >> 32));
  }
}
