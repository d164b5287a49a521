// harness.cu: a standalone check and timer for the cuda-hopper kernels, for
// iterating on a Hopper machine without Go. It includes the plugin's kernel
// source, runs each case on random inputs, compares sampled rows (all rows
// of small cases) with an fp64 CPU reference, counts unwritten outputs (the
// output is poisoned with NaN first), and times the kernel with CUDA events.
//
//   nvcc -std=c++17 -O3 -Icudakit/gpu/kernels \
//        -gencode arch=compute_90a,code=sm_90a -o harness scripts/hopper/harness.cu
//   ./harness                every case below, then a summary table
//   ./harness small          only the small cases (for compute-sanitizer)
//   ./harness [small] TEXT   only the kernels whose name holds TEXT, e.g.
//                            _o2_ (overlap 2) or _ahead (producer ahead)
//
// Exit status 1 when any case fails. Times here are the harness's own
// (events around back-to-back launches, inputs hot in L2), not flashcore's
// measurement contract.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../plugins/cuda-hopper/kernel.cu"

#define CHECK(x)                                                                          \
  do {                                                                                    \
    cudaError_t err_ = (x);                                                               \
    if (err_ != cudaSuccess) {                                                            \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(err_)); \
      std::exit(2);                                                                       \
    }                                                                                     \
  } while (0)

using Kernel = void (*)(const void*, const void*, const void*, void*, int, int, int, int, int, float);

struct Entry {
  const char* name;
  const void* fn;
  bool bf16;
  int d, n, stages, overlap;
  bool ahead;
};

#define E(NAME, BF, D, N, S, O, A) {#NAME, reinterpret_cast<const void*>(&NAME), BF, D, N, S, O, A}
static const Entry kEntries[] = {
    E(attn_fwd_fp16_d64_n64_s2_o0_wait, false, 64, 64, 2, 0, false),
    E(attn_fwd_fp16_d64_n64_s2_o0_ahead, false, 64, 64, 2, 0, true),
    E(attn_fwd_fp16_d64_n64_s2_o1_wait, false, 64, 64, 2, 1, false),
    E(attn_fwd_fp16_d64_n64_s2_o1_ahead, false, 64, 64, 2, 1, true),
    E(attn_fwd_fp16_d64_n64_s2_o2_wait, false, 64, 64, 2, 2, false),
    E(attn_fwd_fp16_d64_n64_s2_o2_ahead, false, 64, 64, 2, 2, true),
    E(attn_fwd_fp16_d64_n64_s3_o0_wait, false, 64, 64, 3, 0, false),
    E(attn_fwd_fp16_d64_n64_s3_o0_ahead, false, 64, 64, 3, 0, true),
    E(attn_fwd_fp16_d64_n64_s3_o1_wait, false, 64, 64, 3, 1, false),
    E(attn_fwd_fp16_d64_n64_s3_o1_ahead, false, 64, 64, 3, 1, true),
    E(attn_fwd_fp16_d64_n64_s3_o2_wait, false, 64, 64, 3, 2, false),
    E(attn_fwd_fp16_d64_n64_s3_o2_ahead, false, 64, 64, 3, 2, true),
    E(attn_fwd_fp16_d64_n128_s2_o0_wait, false, 64, 128, 2, 0, false),
    E(attn_fwd_fp16_d64_n128_s2_o0_ahead, false, 64, 128, 2, 0, true),
    E(attn_fwd_fp16_d64_n128_s2_o1_wait, false, 64, 128, 2, 1, false),
    E(attn_fwd_fp16_d64_n128_s2_o1_ahead, false, 64, 128, 2, 1, true),
    E(attn_fwd_fp16_d64_n128_s2_o2_wait, false, 64, 128, 2, 2, false),
    E(attn_fwd_fp16_d64_n128_s2_o2_ahead, false, 64, 128, 2, 2, true),
    E(attn_fwd_fp16_d64_n128_s3_o0_wait, false, 64, 128, 3, 0, false),
    E(attn_fwd_fp16_d64_n128_s3_o0_ahead, false, 64, 128, 3, 0, true),
    E(attn_fwd_fp16_d64_n128_s3_o1_wait, false, 64, 128, 3, 1, false),
    E(attn_fwd_fp16_d64_n128_s3_o1_ahead, false, 64, 128, 3, 1, true),
    E(attn_fwd_fp16_d64_n128_s3_o2_wait, false, 64, 128, 3, 2, false),
    E(attn_fwd_fp16_d64_n128_s3_o2_ahead, false, 64, 128, 3, 2, true),
    E(attn_fwd_fp16_d128_n64_s2_o0_wait, false, 128, 64, 2, 0, false),
    E(attn_fwd_fp16_d128_n64_s2_o0_ahead, false, 128, 64, 2, 0, true),
    E(attn_fwd_fp16_d128_n64_s2_o1_wait, false, 128, 64, 2, 1, false),
    E(attn_fwd_fp16_d128_n64_s2_o1_ahead, false, 128, 64, 2, 1, true),
    E(attn_fwd_fp16_d128_n64_s2_o2_wait, false, 128, 64, 2, 2, false),
    E(attn_fwd_fp16_d128_n64_s2_o2_ahead, false, 128, 64, 2, 2, true),
    E(attn_fwd_fp16_d128_n64_s3_o0_wait, false, 128, 64, 3, 0, false),
    E(attn_fwd_fp16_d128_n64_s3_o0_ahead, false, 128, 64, 3, 0, true),
    E(attn_fwd_fp16_d128_n64_s3_o1_wait, false, 128, 64, 3, 1, false),
    E(attn_fwd_fp16_d128_n64_s3_o1_ahead, false, 128, 64, 3, 1, true),
    E(attn_fwd_fp16_d128_n64_s3_o2_wait, false, 128, 64, 3, 2, false),
    E(attn_fwd_fp16_d128_n64_s3_o2_ahead, false, 128, 64, 3, 2, true),
    E(attn_fwd_fp16_d128_n128_s2_o0_wait, false, 128, 128, 2, 0, false),
    E(attn_fwd_fp16_d128_n128_s2_o0_ahead, false, 128, 128, 2, 0, true),
    E(attn_fwd_fp16_d128_n128_s2_o1_wait, false, 128, 128, 2, 1, false),
    E(attn_fwd_fp16_d128_n128_s2_o1_ahead, false, 128, 128, 2, 1, true),
    E(attn_fwd_fp16_d128_n128_s2_o2_wait, false, 128, 128, 2, 2, false),
    E(attn_fwd_fp16_d128_n128_s2_o2_ahead, false, 128, 128, 2, 2, true),
    E(attn_fwd_fp16_d128_n128_s3_o0_wait, false, 128, 128, 3, 0, false),
    E(attn_fwd_fp16_d128_n128_s3_o0_ahead, false, 128, 128, 3, 0, true),
    E(attn_fwd_fp16_d128_n128_s3_o1_wait, false, 128, 128, 3, 1, false),
    E(attn_fwd_fp16_d128_n128_s3_o1_ahead, false, 128, 128, 3, 1, true),
    E(attn_fwd_fp16_d128_n128_s3_o2_wait, false, 128, 128, 3, 2, false),
    E(attn_fwd_fp16_d128_n128_s3_o2_ahead, false, 128, 128, 3, 2, true),
    E(attn_fwd_bf16_d64_n64_s2_o0_wait, true, 64, 64, 2, 0, false),
    E(attn_fwd_bf16_d64_n64_s2_o0_ahead, true, 64, 64, 2, 0, true),
    E(attn_fwd_bf16_d64_n64_s2_o1_wait, true, 64, 64, 2, 1, false),
    E(attn_fwd_bf16_d64_n64_s2_o1_ahead, true, 64, 64, 2, 1, true),
    E(attn_fwd_bf16_d64_n64_s2_o2_wait, true, 64, 64, 2, 2, false),
    E(attn_fwd_bf16_d64_n64_s2_o2_ahead, true, 64, 64, 2, 2, true),
    E(attn_fwd_bf16_d64_n64_s3_o0_wait, true, 64, 64, 3, 0, false),
    E(attn_fwd_bf16_d64_n64_s3_o0_ahead, true, 64, 64, 3, 0, true),
    E(attn_fwd_bf16_d64_n64_s3_o1_wait, true, 64, 64, 3, 1, false),
    E(attn_fwd_bf16_d64_n64_s3_o1_ahead, true, 64, 64, 3, 1, true),
    E(attn_fwd_bf16_d64_n64_s3_o2_wait, true, 64, 64, 3, 2, false),
    E(attn_fwd_bf16_d64_n64_s3_o2_ahead, true, 64, 64, 3, 2, true),
    E(attn_fwd_bf16_d64_n128_s2_o0_wait, true, 64, 128, 2, 0, false),
    E(attn_fwd_bf16_d64_n128_s2_o0_ahead, true, 64, 128, 2, 0, true),
    E(attn_fwd_bf16_d64_n128_s2_o1_wait, true, 64, 128, 2, 1, false),
    E(attn_fwd_bf16_d64_n128_s2_o1_ahead, true, 64, 128, 2, 1, true),
    E(attn_fwd_bf16_d64_n128_s2_o2_wait, true, 64, 128, 2, 2, false),
    E(attn_fwd_bf16_d64_n128_s2_o2_ahead, true, 64, 128, 2, 2, true),
    E(attn_fwd_bf16_d64_n128_s3_o0_wait, true, 64, 128, 3, 0, false),
    E(attn_fwd_bf16_d64_n128_s3_o0_ahead, true, 64, 128, 3, 0, true),
    E(attn_fwd_bf16_d64_n128_s3_o1_wait, true, 64, 128, 3, 1, false),
    E(attn_fwd_bf16_d64_n128_s3_o1_ahead, true, 64, 128, 3, 1, true),
    E(attn_fwd_bf16_d64_n128_s3_o2_wait, true, 64, 128, 3, 2, false),
    E(attn_fwd_bf16_d64_n128_s3_o2_ahead, true, 64, 128, 3, 2, true),
    E(attn_fwd_bf16_d128_n64_s2_o0_wait, true, 128, 64, 2, 0, false),
    E(attn_fwd_bf16_d128_n64_s2_o0_ahead, true, 128, 64, 2, 0, true),
    E(attn_fwd_bf16_d128_n64_s2_o1_wait, true, 128, 64, 2, 1, false),
    E(attn_fwd_bf16_d128_n64_s2_o1_ahead, true, 128, 64, 2, 1, true),
    E(attn_fwd_bf16_d128_n64_s2_o2_wait, true, 128, 64, 2, 2, false),
    E(attn_fwd_bf16_d128_n64_s2_o2_ahead, true, 128, 64, 2, 2, true),
    E(attn_fwd_bf16_d128_n64_s3_o0_wait, true, 128, 64, 3, 0, false),
    E(attn_fwd_bf16_d128_n64_s3_o0_ahead, true, 128, 64, 3, 0, true),
    E(attn_fwd_bf16_d128_n64_s3_o1_wait, true, 128, 64, 3, 1, false),
    E(attn_fwd_bf16_d128_n64_s3_o1_ahead, true, 128, 64, 3, 1, true),
    E(attn_fwd_bf16_d128_n64_s3_o2_wait, true, 128, 64, 3, 2, false),
    E(attn_fwd_bf16_d128_n64_s3_o2_ahead, true, 128, 64, 3, 2, true),
    E(attn_fwd_bf16_d128_n128_s2_o0_wait, true, 128, 128, 2, 0, false),
    E(attn_fwd_bf16_d128_n128_s2_o0_ahead, true, 128, 128, 2, 0, true),
    E(attn_fwd_bf16_d128_n128_s2_o1_wait, true, 128, 128, 2, 1, false),
    E(attn_fwd_bf16_d128_n128_s2_o1_ahead, true, 128, 128, 2, 1, true),
    E(attn_fwd_bf16_d128_n128_s2_o2_wait, true, 128, 128, 2, 2, false),
    E(attn_fwd_bf16_d128_n128_s2_o2_ahead, true, 128, 128, 2, 2, true),
    E(attn_fwd_bf16_d128_n128_s3_o0_wait, true, 128, 128, 3, 0, false),
    E(attn_fwd_bf16_d128_n128_s3_o0_ahead, true, 128, 128, 3, 0, true),
    E(attn_fwd_bf16_d128_n128_s3_o1_wait, true, 128, 128, 3, 1, false),
    E(attn_fwd_bf16_d128_n128_s3_o1_ahead, true, 128, 128, 3, 1, true),
    E(attn_fwd_bf16_d128_n128_s3_o2_wait, true, 128, 128, 3, 2, false),
    E(attn_fwd_bf16_d128_n128_s3_o2_ahead, true, 128, 128, 3, 2, true),
};

struct Case {
  bool bf16;
  int b, h, kvh, sq, sk, d;
  bool causal;
  int n, stages, overlap;
  bool small;
  bool ahead;
};

static int shared_bytes(int elem, int d, int n, int stages) {
  return 128 * d * elem + 2 * stages * n * d * elem + 2 * stages * 8 + 1024;
}

static uint16_t to_bits(float x, bool bf16) {
  if (bf16) {
    __nv_bfloat16 v = __float2bfloat16_rn(x);
    return *reinterpret_cast<uint16_t*>(&v);
  }
  half v = __float2half_rn(x);
  return *reinterpret_cast<uint16_t*>(&v);
}

static float from_bits(uint16_t u, bool bf16) {
  if (bf16) return __bfloat162float(*reinterpret_cast<__nv_bfloat16*>(&u));
  return __half2float(*reinterpret_cast<half*>(&u));
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static float uniform() {  // in [-1, 1)
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return static_cast<float>((rng_state >> 40) * (1.0 / (1ull << 24))) * 2.f - 1.f;
}

struct Result {
  double rel_err, max_abs;
  long unwritten;
  double us_b2b, us_each, tflops;
  bool pass;
};

static double flops(const Case& c) {
  double pairs = 0;
  for (int i = 0; i < c.sq; ++i) pairs += c.causal ? std::min(i + 1, c.sk) : c.sk;
  return 4.0 * c.b * c.h * pairs * c.d;
}

static Result run_case(const Case& c, const Entry& e, int reps) {
  const size_t qn = size_t(c.b) * c.h * c.sq * c.d, kvn = size_t(c.b) * c.kvh * c.sk * c.d;
  std::vector<uint16_t> hq(qn), hk(kvn), hv(kvn), ho(qn);
  for (auto& x : hq) x = to_bits(uniform() * 2.f, c.bf16);
  for (auto& x : hk) x = to_bits(uniform() * 2.f, c.bf16);
  for (auto& x : hv) x = to_bits(uniform(), c.bf16);
  void *dq, *dk, *dv, *dout;
  CHECK(cudaMalloc(&dq, qn * 2));
  CHECK(cudaMalloc(&dk, kvn * 2));
  CHECK(cudaMalloc(&dv, kvn * 2));
  CHECK(cudaMalloc(&dout, qn * 2));
  CHECK(cudaMemcpy(dq, hq.data(), qn * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dk, hk.data(), kvn * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dv, hv.data(), kvn * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dout, 0xFF, qn * 2));
  const int smem = shared_bytes(2, c.d, c.n, c.stages);
  CHECK(cudaFuncSetAttribute(e.fn, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const double scale = 1.0 / std::sqrt(double(c.d));
  int heads = c.h, kvh = c.kvh, sq = c.sq, sk = c.sk, causal = c.causal;
  float scale_log2 = float(scale * 1.4426950408889634);
  void* args[] = {&dq, &dk, &dv, &dout, &heads, &kvh, &sq, &sk, &causal, &scale_log2};
  dim3 grid((c.sq + 127) / 128, c.h, c.b), block(384);
  auto launch = [&] { CHECK(cudaLaunchKernel(e.fn, grid, block, args, smem, 0)); };
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemcpy(ho.data(), dout, qn * 2, cudaMemcpyDeviceToHost));

  Result r{};
  for (auto x : ho)
    if (std::isnan(from_bits(x, c.bf16))) ++r.unwritten;
  // Reference rows: all of a small case, else 192 random (b, h, row).
  const long total_rows = long(c.b) * c.h * c.sq;
  const long nrows = c.small ? total_rows : std::min<long>(total_rows, 192);
  double err2 = 0, ref2 = 0;
  std::vector<double> p(c.sk), acc(c.d);
  for (long s = 0; s < nrows; ++s) {
    long idx = c.small ? s : long((uniform() * 0.5f + 0.5f) * total_rows) % total_rows;
    if (s == nrows - 1 && !c.small) idx = total_rows - 1;  // always the last row (tails)
    const int i = idx % c.sq, h = (idx / c.sq) % c.h, b = idx / (long(c.sq) * c.h);
    const int kh = h / (c.h / c.kvh);
    const uint16_t* qr = &hq[((size_t(b) * c.h + h) * c.sq + i) * c.d];
    const uint16_t* kb = &hk[(size_t(b) * c.kvh + kh) * c.sk * c.d];
    const uint16_t* vb = &hv[(size_t(b) * c.kvh + kh) * c.sk * c.d];
    double m = -INFINITY, l = 0;
    for (int j = 0; j < c.sk; ++j) {
      if (c.causal && j > i) { p[j] = -INFINITY; continue; }
      double dot = 0;
      for (int x = 0; x < c.d; ++x) dot += double(from_bits(qr[x], c.bf16)) * from_bits(kb[size_t(j) * c.d + x], c.bf16);
      p[j] = dot * scale;
      m = std::max(m, p[j]);
    }
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int j = 0; j < c.sk; ++j) {
      if (p[j] == -INFINITY) continue;
      const double w = std::exp(p[j] - m);
      l += w;
      for (int x = 0; x < c.d; ++x) acc[x] += w * from_bits(vb[size_t(j) * c.d + x], c.bf16);
    }
    const uint16_t* orow = &ho[((size_t(b) * c.h + h) * c.sq + i) * c.d];
    for (int x = 0; x < c.d; ++x) {
      const double ref = acc[x] / l, got = from_bits(orow[x], c.bf16);
      const double diff = std::isnan(got) ? 1e30 : got - ref;
      err2 += diff * diff;
      ref2 += ref * ref;
      r.max_abs = std::max(r.max_abs, std::fabs(diff));
    }
  }
  r.rel_err = std::sqrt(err2 / ref2);
  r.pass = r.unwritten == 0 && r.rel_err < (c.bf16 ? 1e-2 : 2e-3);

  if (reps > 0) {
    cudaEvent_t a, z;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&z));
    for (int w = 0; w < 3; ++w) launch();
    CHECK(cudaEventRecord(a));
    for (int k = 0; k < reps; ++k) launch();
    CHECK(cudaEventRecord(z));
    CHECK(cudaEventSynchronize(z));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, z));
    r.us_b2b = 1000.0 * ms / reps;
    std::vector<float> each;
    for (int k = 0; k < 20; ++k) {
      CHECK(cudaEventRecord(a));
      launch();
      CHECK(cudaEventRecord(z));
      CHECK(cudaEventSynchronize(z));
      CHECK(cudaEventElapsedTime(&ms, a, z));
      each.push_back(1000.f * ms);
    }
    std::sort(each.begin(), each.end());
    r.us_each = each[each.size() / 2];
    r.tflops = flops(c) / (r.us_b2b * 1e-6) / 1e12;
    CHECK(cudaEventDestroy(a));
    CHECK(cudaEventDestroy(z));
  }
  CHECK(cudaGetLastError());
  CHECK(cudaFree(dq));
  CHECK(cudaFree(dk));
  CHECK(cudaFree(dv));
  CHECK(cudaFree(dout));
  return r;
}

static const Entry* find(const Case& c) {
  for (const auto& e : kEntries)
    if (e.bf16 == c.bf16 && e.d == c.d && e.n == c.n && e.stages == c.stages && e.overlap == c.overlap &&
        e.ahead == c.ahead)
      return &e;
  return nullptr;
}

int main(int argc, char** argv) {
  bool only_small = false;
  const char* only_name = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "small") == 0)
      only_small = true;
    else
      only_name = argv[i];
  }
  std::vector<Case> cases;
  // Small cases: every kernel, tails, causal, GQA, unequal lengths; all rows checked.
  for (const auto& e : kEntries) {
    cases.push_back({e.bf16, 1, 2, 2, 200, 200, e.d, false, e.n, e.stages, e.overlap, true, e.ahead});
    cases.push_back({e.bf16, 2, 4, 2, 130, 77, e.d, true, e.n, e.stages, e.overlap, true, e.ahead});
    cases.push_back({e.bf16, 1, 2, 1, 300, 600, e.d, true, e.n, e.stages, e.overlap, true, e.ahead});
  }
  for (bool ahead : {false, true}) {
    cases.push_back({false, 1, 2, 1, 64, 300, 64, false, 128, 3, 1, true, ahead});
    cases.push_back({false, 1, 2, 1, 300, 64, 128, true, 128, 3, 2, true, ahead});
    cases.push_back({true, 1, 1, 1, 1, 1, 128, true, 64, 2, 2, true, ahead});
  }
  if (!only_small) {
    // The issue's shapes: the seed shape and B4 H16 S2048 D128 with every
    // tunable, the rest with tile_n 128 and 3 stages.
    for (bool ahead : {false, true}) {
      for (int n : {64, 128})
        for (int st : {2, 3})
          for (int ov : {0, 1, 2}) {
            cases.push_back({false, 1, 8, 8, 512, 512, 64, false, n, st, ov, false, ahead});
            cases.push_back({false, 4, 16, 16, 2048, 2048, 128, false, n, st, ov, false, ahead});
          }
      for (int ov : {1, 2}) {
        cases.push_back({false, 2, 16, 16, 8192, 8192, 128, false, 128, 3, ov, false, ahead});
        cases.push_back({false, 2, 16, 16, 8192, 8192, 128, true, 128, 3, ov, false, ahead});
        cases.push_back({false, 1, 32, 32, 16384, 16384, 128, true, 128, 3, ov, false, ahead});
      }
      cases.push_back({true, 4, 16, 16, 2048, 2048, 128, true, 128, 3, 1, false, ahead});
      cases.push_back({false, 8, 16, 16, 1024, 1024, 64, false, 128, 3, 1, false, ahead});
      cases.push_back({false, 4, 32, 8, 2048, 2048, 128, true, 128, 3, 2, false, ahead});  // GQA
    }
  }
  int fails = 0, ran = 0;
  std::printf("%-5s %-26s %-7s %-4s %-3s %-3s %-6s %-10s %-10s %-6s %-10s %-10s %-8s %s\n", "dtype",
              "shape B,H/KVH,Sq,Sk,D", "causal", "n", "st", "ov", "prod", "rel_err", "max_abs", "unwrit", "us_b2b", "us_each", "TF/s", "verdict");
  for (const auto& c : cases) {
    const Entry* e = find(c);
    if (!e) { std::printf("no kernel\n"); return 2; }
    if (only_name && !std::strstr(e->name, only_name)) continue;
    const Result r = run_case(c, *e, c.small ? 0 : (c.sq >= 8192 ? 10 : 50));
    fails += !r.pass;
    ++ran;
    char shape[64];
    std::snprintf(shape, sizeof shape, "%d,%d/%d,%d,%d,%d", c.b, c.h, c.kvh, c.sq, c.sk, c.d);
    std::printf("%-5s %-26s %-7s %-4d %-3d %-3d %-6s %-10.2e %-10.2e %-6ld %-10.2f %-10.2f %-8.1f %s\n",
                c.bf16 ? "bf16" : "fp16", shape, c.causal ? "causal" : "-", c.n, c.stages, c.overlap,
                c.ahead ? "ahead" : "wait", r.rel_err, r.max_abs, r.unwritten, r.us_b2b,
                r.us_each, r.tflops, r.pass ? "PASS" : "FAIL");
    std::fflush(stdout);
  }
  std::printf("%d cases, %d failed\n", ran, fails);
  return fails ? 1 : 0;
}
