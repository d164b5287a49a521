// decode-harness.cu: a standalone check and timer for the cuda-hopper decode
// kernels (split-KV paged flash-decoding), for iterating on a Hopper machine
// without Go. It includes the plugin's kernel source, builds each case as the
// decode op's contract lays it out (q [B, q_len, H, D], k_cache and v_cache
// [num_pages, page_size, KVH, D] with the pages scattered through the pool in
// a random order, block_table [B, max_pages] whose entries past a sequence's
// last page point to poison pages, poison in the slots past L of the last
// page), runs the split kernel and, with several splits, the combine kernel
// as backend.go plans them, compares the output with an fp64 CPU reference
// (every row of small cases, sampled rows of large ones), counts NaNs (the
// output and the scratch are poisoned with 0xFF first) and times a call with
// CUDA events, L2 flushed before each call, reporting the bandwidth of the K
// and V bytes the visible keys take.
//
//   nvcc -std=c++17 -O3 -Icudakit/gpu/kernels \
//        -gencode arch=compute_90a,code=sm_90a -o decode-harness scripts/hopper/decode-harness.cu
//   ./decode-harness               every case below, then a summary table
//   ./decode-harness small         only the small cases (for compute-sanitizer)
//   ./decode-harness [small] TEXT  only the cases whose label holds TEXT
//
// Exit status 1 when any case fails. The split heuristic (num_splits auto)
// and the geometry are ported from plugins/cuda-hopper/decode.go; keep them
// in step.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "../../plugins/cuda-hopper/kernel.cu"

#define CHECK(x)                                                                                   \
  do {                                                                                             \
    cudaError_t err_ = (x);                                                                        \
    if (err_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(err_));   \
      std::exit(2);                                                                                \
    }                                                                                              \
  } while (0)

namespace {

struct SplitEntry {
  const char* name;
  const void* fn;
  bool bf16;
  int d, n, stages;
};

#define SE(NAME, BF, D, N, S) {#NAME, reinterpret_cast<const void*>(&NAME), BF, D, N, S}
const SplitEntry kSplits[] = {
    SE(decode_fp16_d64_n64_s2, false, 64, 64, 2),     SE(decode_fp16_d64_n64_s3, false, 64, 64, 3),
    SE(decode_fp16_d64_n128_s2, false, 64, 128, 2),   SE(decode_fp16_d64_n128_s3, false, 64, 128, 3),
    SE(decode_fp16_d128_n64_s2, false, 128, 64, 2),   SE(decode_fp16_d128_n64_s3, false, 128, 64, 3),
    SE(decode_fp16_d128_n128_s2, false, 128, 128, 2), SE(decode_fp16_d128_n128_s3, false, 128, 128, 3),
    SE(decode_bf16_d64_n64_s2, true, 64, 64, 2),      SE(decode_bf16_d64_n64_s3, true, 64, 64, 3),
    SE(decode_bf16_d64_n128_s2, true, 64, 128, 2),    SE(decode_bf16_d64_n128_s3, true, 64, 128, 3),
    SE(decode_bf16_d128_n64_s2, true, 128, 64, 2),    SE(decode_bf16_d128_n64_s3, true, 128, 64, 3),
    SE(decode_bf16_d128_n128_s2, true, 128, 128, 2),  SE(decode_bf16_d128_n128_s3, true, 128, 128, 3),
};

struct CombineEntry {
  const char* name;
  const void* fn;
  bool bf16;
  int d;
};
const CombineEntry kCombines[] = {
    {"decode_fp16_d64_combine", reinterpret_cast<const void*>(&decode_fp16_d64_combine), false, 64},
    {"decode_fp16_d128_combine", reinterpret_cast<const void*>(&decode_fp16_d128_combine), false, 128},
    {"decode_bf16_d64_combine", reinterpret_cast<const void*>(&decode_bf16_d64_combine), true, 64},
    {"decode_bf16_d128_combine", reinterpret_cast<const void*>(&decode_bf16_d128_combine), true, 128},
};

enum Dist { kEqual, kUniform, kLongTail };
const char* kDistNames[] = {"equal", "uniform", "long-tail"};

struct Case {
  int batch, heads, kv_heads, q_len, d, page_size, context;
  Dist dist;
  bool bf16, causal;
  int window;      // -1: none
  float softcap;   // 0: none
  int splits;      // 0: auto (the plugin's heuristic)
  int tile_n, stages;
  bool small;      // run under `small` (compute-sanitizer)
};

// ---- the plan, ported from plugins/cuda-hopper/decode.go ----------------------

int ceil_div(long a, long b) { return static_cast<int>((a + b - 1) / b); }

int shared_bytes(int d, int n, int stages) { return 16 * d * 2 + 2 * stages * n * d * 2; }

int blocks_per_sm(int shared) { return std::max(1, std::min(3, (228 * 1024) / (shared + 1024))); }

int auto_splits(int units, int tiles, int slots, bool balanced) {
  const int max_splits = std::min(128, tiles / 2);
  if (max_splits <= 1 || units <= 0 || slots <= 0) return 1;
  if (balanced && units * 10 >= slots * 8) return 1;
  auto eff = [&](int s) {
    const double waves = double(units) * s / slots;
    return waves / std::ceil(waves);
  };
  double best = 0;
  for (int s = 1; s <= max_splits; ++s) best = std::max(best, eff(s));
  int splits = 1;
  while (eff(splits) < 0.85 * best) ++splits;
  if (!balanced) splits = std::max(splits, std::min(max_splits, ceil_div(4L * slots, units)));
  return splits;
}

struct Geometry {
  int row_blocks, splits, split_keys, shared;
};

Geometry plan(const Case& c) {
  Geometry g;
  const int rows_per_kv = c.q_len * (c.heads / c.kv_heads);
  g.row_blocks = ceil_div(rows_per_kv, 16);
  g.shared = shared_bytes(c.d, c.tile_n, c.stages);
  int visible = c.context;
  if (c.window >= 0) visible = std::min(visible, c.window + c.q_len);
  visible = std::max(visible, 1);
  int splits = c.splits;
  if (splits == 0) {
    const bool balanced = c.batch == 1 || c.dist == kEqual;
    splits = auto_splits(c.batch * c.kv_heads * g.row_blocks, ceil_div(visible, c.tile_n), 132 * blocks_per_sm(g.shared),
                         balanced);
  }
  splits = std::min(splits, 128);
  g.split_keys = ceil_div(ceil_div(visible, splits), c.tile_n) * c.tile_n;
  g.splits = ceil_div(visible, g.split_keys);
  return g;
}

// ---- inputs -------------------------------------------------------------------

uint16_t to_half_bits(float x, bool bf16) {
  if (bf16) {
    __nv_bfloat16 h = __float2bfloat16_rn(x);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    return b;
  }
  half h = __float2half_rn(x);
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

float from_half_bits(uint16_t b, bool bf16) {
  if (bf16) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  half h;
  std::memcpy(&h, &b, 2);
  return __half2float(h);
}

struct Inputs {
  int max_pages, num_pages;
  std::vector<int> seqlens, table;
  std::vector<uint16_t> q, k, v;
  double kv_bytes_read;
};

Inputs make_inputs(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_real_distribution<float> uni(0.f, 1.f);
  Inputs in;
  in.max_pages = ceil_div(c.context, c.page_size);
  in.seqlens.resize(c.batch);
  for (int b = 0; b < c.batch; ++b) {
    int L = c.context;
    if (b > 0 && c.dist == kUniform) L = c.q_len + static_cast<int>(uni(rng) * (c.context - c.q_len));
    if (b > 0 && c.dist == kLongTail) L = c.q_len + static_cast<int>(std::pow(uni(rng), 4.f) * (c.context - c.q_len));
    in.seqlens[b] = std::max(c.q_len, std::min(L, c.context));
  }
  // Pages: every sequence's in a shuffled pool, then poison pages.
  int used = 0;
  for (int L : in.seqlens) used += ceil_div(L, c.page_size);
  const int poison_pages = 5;
  in.num_pages = used + poison_pages;
  std::vector<int> order(in.num_pages);
  for (int i = 0; i < in.num_pages; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  in.table.assign(static_cast<size_t>(c.batch) * in.max_pages, 0);
  int next = 0;
  for (int b = 0; b < c.batch; ++b) {
    const int pages = ceil_div(in.seqlens[b], c.page_size);
    for (int p = 0; p < in.max_pages; ++p) {
      in.table[static_cast<size_t>(b) * in.max_pages + p] =
          p < pages ? order[next++] : order[used + static_cast<int>(rng() % poison_pages)];
    }
  }
  const size_t slot_elems = static_cast<size_t>(c.kv_heads) * c.d;
  in.k.resize(static_cast<size_t>(in.num_pages) * c.page_size * slot_elems);
  in.v.resize(in.k.size());
  // Poison everywhere first (keys ±8, values 100), then the real keys.
  for (size_t i = 0; i < in.k.size(); ++i) {
    in.k[i] = to_half_bits((rng() & 1) ? 8.f : -8.f, c.bf16);
    in.v[i] = to_half_bits(100.f, c.bf16);
  }
  in.kv_bytes_read = 0;
  for (int b = 0; b < c.batch; ++b) {
    const int L = in.seqlens[b];
    for (int j = 0; j < L; ++j) {
      const int page = in.table[static_cast<size_t>(b) * in.max_pages + j / c.page_size];
      const size_t at = (static_cast<size_t>(page) * c.page_size + j % c.page_size) * slot_elems;
      for (size_t e = 0; e < slot_elems; ++e) {
        in.k[at + e] = to_half_bits(normal(rng), c.bf16);
        in.v[at + e] = to_half_bits(normal(rng), c.bf16);
      }
    }
    const int visible = c.window >= 0 ? std::min(L, c.window + c.q_len) : L;
    in.kv_bytes_read += 2.0 * visible * slot_elems * 2;
  }
  in.q.resize(static_cast<size_t>(c.batch) * c.q_len * c.heads * c.d);
  for (auto& x : in.q) x = to_half_bits(normal(rng), c.bf16);
  return in;
}

// reference is row (b, i, h) of o in fp64 from the inputs as stored.
std::vector<double> reference(const Case& c, const Inputs& in, int b, int i, int h) {
  const int group = c.heads / c.kv_heads;
  const int kvh = h / group;
  const int L = in.seqlens[b];
  const int p = L - c.q_len + i;
  const int hi = c.causal ? p + 1 : L;
  const int lo = c.window >= 0 ? std::max(0, p - c.window) : 0;
  const double scale = 1.0 / std::sqrt(double(c.d));
  const uint16_t* q = &in.q[((static_cast<size_t>(b) * c.q_len + i) * c.heads + h) * c.d];
  std::vector<double> s;
  std::vector<size_t> at;
  double mx = -INFINITY;
  for (int j = lo; j < hi; ++j) {
    const int page = in.table[static_cast<size_t>(b) * in.max_pages + j / c.page_size];
    const size_t a = ((static_cast<size_t>(page) * c.page_size + j % c.page_size) * c.kv_heads + kvh) * c.d;
    double dot = 0;
    for (int e = 0; e < c.d; ++e) dot += double(from_half_bits(q[e], c.bf16)) * from_half_bits(in.k[a + e], c.bf16);
    dot *= scale;
    if (c.softcap > 0) dot = c.softcap * std::tanh(dot / c.softcap);
    s.push_back(dot);
    at.push_back(a);
    mx = std::max(mx, dot);
  }
  std::vector<double> out(c.d, 0.0);
  double sum = 0;
  for (size_t n = 0; n < s.size(); ++n) {
    const double w = std::exp(s[n] - mx);
    sum += w;
    for (int e = 0; e < c.d; ++e) out[e] += w * from_half_bits(in.v[at[n] + e], c.bf16);
  }
  for (auto& x : out) x = sum > 0 ? x / sum : 0;
  return out;
}

// ---- one case -------------------------------------------------------------------

struct Result {
  std::string label;
  bool pass;
  double max_err, rel_l2, us, gbps;
  int nan, rows_checked, splits;
};

std::string label_of(const Case& c) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "B%d H%d/%d q%d D%d p%d L%d %s %s%s%s%s splits=%s n%d s%d", c.batch, c.heads, c.kv_heads,
                c.q_len, c.d, c.page_size, c.context, kDistNames[c.dist], c.bf16 ? "bf16" : "fp16",
                c.causal ? " causal" : "", c.window >= 0 ? (" w" + std::to_string(c.window)).c_str() : "",
                c.softcap > 0 ? (" cap" + std::to_string(static_cast<int>(c.softcap))).c_str() : "",
                c.splits ? std::to_string(c.splits).c_str() : "auto", c.tile_n, c.stages);
  return buf;
}

Result run_case(const Case& c, void* flush, size_t flush_bytes) {
  Result r{};
  r.label = label_of(c);
  const SplitEntry* se = nullptr;
  for (const auto& e : kSplits)
    if (e.bf16 == c.bf16 && e.d == c.d && e.n == c.tile_n && e.stages == c.stages) se = &e;
  const CombineEntry* ce = nullptr;
  for (const auto& e : kCombines)
    if (e.bf16 == c.bf16 && e.d == c.d) ce = &e;
  if (!se || !ce) {
    std::printf("%s: no kernel\n", r.label.c_str());
    r.pass = false;
    return r;
  }
  const Geometry g = plan(c);
  r.splits = g.splits;
  Inputs in = make_inputs(c, 1234 + c.batch * 7 + c.context);
  const int rows = c.batch * c.q_len * c.heads;
  const size_t o_elems = static_cast<size_t>(rows) * c.d;

  uint16_t *dq, *dk, *dv, *dO;
  int *dtable, *dlens;
  float *dpart = nullptr, *dlse = nullptr;
  CHECK(cudaMalloc(&dq, in.q.size() * 2));
  CHECK(cudaMalloc(&dk, in.k.size() * 2));
  CHECK(cudaMalloc(&dv, in.v.size() * 2));
  CHECK(cudaMalloc(&dO, o_elems * 2));
  CHECK(cudaMalloc(&dtable, in.table.size() * 4));
  CHECK(cudaMalloc(&dlens, in.seqlens.size() * 4));
  CHECK(cudaMemcpy(dq, in.q.data(), in.q.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dk, in.k.data(), in.k.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dv, in.v.data(), in.v.size() * 2, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dtable, in.table.data(), in.table.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dlens, in.seqlens.data(), in.seqlens.size() * 4, cudaMemcpyHostToDevice));
  CHECK(cudaMemset(dO, 0xFF, o_elems * 2));
  if (g.splits > 1) {
    CHECK(cudaMalloc(&dpart, static_cast<size_t>(rows) * g.splits * c.d * 4));
    CHECK(cudaMalloc(&dlse, static_cast<size_t>(rows) * g.splits * 4));
    CHECK(cudaMemset(dpart, 0xFF, static_cast<size_t>(rows) * g.splits * c.d * 4));
    CHECK(cudaMemset(dlse, 0xFF, static_cast<size_t>(rows) * g.splits * 4));
  }
  CHECK(cudaFuncSetAttribute(se->fn, cudaFuncAttributeMaxDynamicSharedMemorySize, g.shared));

  const double scale = 1.0 / std::sqrt(double(c.d));
  float score_scale = static_cast<float>(scale * M_LOG2E), softcap_log2 = 0.f;
  if (c.softcap > 0) {
    score_scale = static_cast<float>(scale / c.softcap);
    softcap_log2 = static_cast<float>(c.softcap * M_LOG2E);
  }
  int heads = c.heads, kv_heads = c.kv_heads, q_len = c.q_len, page_size = c.page_size, max_pages = in.max_pages,
      split_keys = g.split_keys, causal = c.causal, window = c.window, splits = g.splits;
  void* split_args[] = {&dq,       &dk,        &dv,         &dtable,     &dlens,  &dO,     &dpart,       &dlse,
                        &heads,    &kv_heads,  &q_len,      &page_size,  &max_pages, &split_keys, &causal, &window,
                        &score_scale, &softcap_log2};
  int rows_arg = rows;
  void* combine_args[] = {&dpart, &dlse, &dO, &rows_arg, &splits};
  const dim3 grid(g.row_blocks * g.splits, c.kv_heads, c.batch);
  auto call = [&]() {
    CHECK(cudaLaunchKernel(se->fn, grid, dim3(128), split_args, g.shared, 0));
    if (g.splits > 1) CHECK(cudaLaunchKernel(ce->fn, dim3(ceil_div(rows, 4)), dim3(128), combine_args, 0, 0));
  };
  call();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<uint16_t> out(o_elems);
  CHECK(cudaMemcpy(out.data(), dO, o_elems * 2, cudaMemcpyDeviceToHost));

  // Check: every row of a small case, else 256 rows (first and last among them).
  std::vector<int> checked;
  if (rows <= 512 || c.small) {
    for (int x = 0; x < rows; ++x) checked.push_back(x);
  } else {
    std::mt19937 pick(7);
    checked = {0, rows - 1};
    for (int n = 0; n < 254; ++n) checked.push_back(static_cast<int>(pick() % rows));
  }
  for (size_t e = 0; e < o_elems; ++e) {
    if (std::isnan(from_half_bits(out[e], c.bf16)) || std::isinf(from_half_bits(out[e], c.bf16))) ++r.nan;
  }
  const double atol = c.bf16 ? 1.6e-2 : 2e-3, rtol = c.bf16 ? 3e-2 : 1e-2;
  double err2 = 0, ref2 = 0;
  int violations = 0;
  for (int row : checked) {
    const int h = row % c.heads;
    const int i = (row / c.heads) % c.q_len;
    const int b = row / (c.heads * c.q_len);
    const std::vector<double> want = reference(c, in, b, i, h);
    for (int e = 0; e < c.d; ++e) {
      const double got = from_half_bits(out[static_cast<size_t>(row) * c.d + e], c.bf16);
      const double err = std::fabs(got - want[e]);
      r.max_err = std::max(r.max_err, std::isnan(err) ? INFINITY : err);
      err2 += (got - want[e]) * (got - want[e]);
      ref2 += want[e] * want[e];
      if (!(err <= atol + rtol * std::fabs(want[e]))) {
        if (violations < 3) {
          std::printf("  %s: row %d (b %d, i %d, h %d) col %d: got %.6g, want %.6g\n", r.label.c_str(), row, b, i, h, e, got,
                      want[e]);
        }
        ++violations;
      }
    }
  }
  r.rows_checked = static_cast<int>(checked.size());
  r.rel_l2 = std::sqrt(err2 / std::max(ref2, 1e-30));
  const double rel_l2_tol = c.bf16 ? 1.6e-2 : 2e-3;
  r.pass = violations == 0 && r.nan == 0 && r.rel_l2 <= rel_l2_tol;

  // Time: a call at a time, L2 flushed before each, CUDA events around the kernels.
  const int reps = c.small ? 3 : 30;
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int rep = 0; rep < reps; ++rep) {
    CHECK(cudaMemsetAsync(flush, rep & 0xFF, flush_bytes));
    CHECK(cudaEventRecord(start));
    call();
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  r.us = times[times.size() / 2] * 1e3;
  const double bytes = in.kv_bytes_read + 2.0 * (in.q.size() + o_elems) + 4.0 * (in.table.size() + in.seqlens.size());
  r.gbps = bytes / (r.us * 1e-6) / 1e9;

  // The timed calls must give the checked output again, bit for bit.
  std::vector<uint16_t> again(o_elems);
  CHECK(cudaMemcpy(again.data(), dO, o_elems * 2, cudaMemcpyDeviceToHost));
  if (again != out) {
    std::printf("  %s: nondeterministic: a timed call's output differs from the checked call's\n", r.label.c_str());
    r.pass = false;
  }
  std::printf("%-4s %s: grid %d×%d×%d (%d splits of %d keys), %d rows checked, max err %.3g, rel L2 %.3g, NaN/Inf %d, "
              "%.2f µs, %.0f GB/s\n",
              r.pass ? "PASS" : "FAIL", r.label.c_str(), grid.x, grid.y, grid.z, g.splits, g.split_keys, r.rows_checked,
              r.max_err, r.rel_l2, r.nan, r.us, r.gbps);
  CHECK(cudaEventDestroy(start));
  CHECK(cudaEventDestroy(stop));
  cudaFree(dq);
  cudaFree(dk);
  cudaFree(dv);
  cudaFree(dO);
  cudaFree(dtable);
  cudaFree(dlens);
  cudaFree(dpart);
  cudaFree(dlse);
  return r;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  // Small cases: every kernel, odd lengths, GQA packing over several row
  // blocks, masks, page sizes that are not tile multiples, forced splits
  // (empty splits included).
  for (bool bf16 : {false, true}) {
    for (int d : {64, 128}) {
      for (int n : {64, 128}) {
        for (int s : {2, 3}) {
          out.push_back({3, 8, 2, 1, d, 16, 77, kUniform, bf16, true, -1, 0.f, 0, n, s, true});
          out.push_back({2, 16, 2, 5, d, 48, 301, kLongTail, bf16, true, 40, 0.f, 3, n, s, true});
          out.push_back({2, 6, 3, 3, d, 32, 200, kEqual, bf16, false, -1, 30.f, 7, n, s, true});
        }
      }
    }
  }
  out.push_back({1, 4, 4, 1, 128, 16, 1, kEqual, false, true, -1, 0.f, 0, 64, 3, true});         // one key
  out.push_back({1, 4, 4, 1, 128, 16, 1, kEqual, false, true, -1, 0.f, 4, 64, 3, true});         // one key, empty splits
  out.push_back({2, 64, 8, 16, 128, 16, 1000, kUniform, false, true, -1, 0.f, 0, 64, 3, true});  // 128 rows a KV head
  out.push_back({2, 64, 8, 16, 128, 16, 1000, kUniform, true, false, 100, 50.f, 5, 128, 2, true});
  out.push_back({4, 32, 8, 1, 128, 16, 4096, kEqual, false, true, 0, 0.f, 0, 64, 3, true});     // window 0: itself alone
  out.push_back({3, 8, 1, 2, 64, 64, 999, kLongTail, true, true, -1, 20.f, 16, 64, 3, true});
  // The issue's shapes: bandwidth at B >= 32 and 8k+ contexts (H100 ~3.35 TB/s).
  for (int b : {1, 8, 32, 64, 128}) {
    out.push_back({b, 32, 8, 1, 128, 16, 8192, kEqual, false, true, -1, 0.f, 0, 64, 3, false});
  }
  out.push_back({32, 32, 8, 1, 128, 16, 32768, kEqual, false, true, -1, 0.f, 0, 64, 3, false});
  out.push_back({32, 32, 32, 1, 128, 16, 8192, kEqual, false, true, -1, 0.f, 0, 64, 3, false});
  out.push_back({32, 32, 8, 1, 128, 128, 8192, kEqual, true, true, -1, 0.f, 0, 64, 3, false});
  out.push_back({64, 32, 8, 1, 64, 16, 8192, kEqual, false, true, -1, 0.f, 0, 64, 3, false});
  out.push_back({32, 32, 8, 1, 128, 16, 8192, kLongTail, false, true, -1, 0.f, 0, 64, 3, false});
  out.push_back({32, 32, 8, 4, 128, 16, 8192, kEqual, false, true, -1, 0.f, 0, 64, 3, false});
  out.push_back({32, 32, 8, 1, 128, 16, 8192, kEqual, false, true, -1, 0.f, 0, 128, 3, false});
  out.push_back({32, 32, 8, 1, 128, 16, 8192, kEqual, false, true, -1, 0.f, 0, 64, 2, false});
  for (int splits : {1, 2, 4}) out.push_back({32, 32, 8, 1, 128, 16, 8192, kEqual, false, true, -1, 0.f, splits, 64, 3, false});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool small_only = false;
  std::string filter;
  for (int a = 1; a < argc; ++a) {
    if (std::string(argv[a]) == "small") {
      small_only = true;
    } else {
      filter = argv[a];
    }
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, CC %d.%d\n", prop.name, prop.multiProcessorCount, prop.major, prop.minor);
  const size_t flush_bytes = 256u << 20;
  void* flush;
  CHECK(cudaMalloc(&flush, flush_bytes));
  std::vector<Result> results;
  for (const Case& c : cases()) {
    if (small_only && !c.small) continue;
    if (!filter.empty() && label_of(c).find(filter) == std::string::npos) continue;
    results.push_back(run_case(c, flush, flush_bytes));
  }
  int failed = 0;
  std::printf("\n| case | splits | µs | GB/s | %% of 3350 | check |\n|---|---:|---:|---:|---:|---|\n");
  for (const auto& r : results) {
    failed += !r.pass;
    std::printf("| %s | %d | %.2f | %.0f | %.0f%% | %s |\n", r.label.c_str(), r.splits, r.us, r.gbps, 100 * r.gbps / 3350,
                r.pass ? "PASS" : "FAIL");
  }
  std::printf("\n%zu cases, %d failed\n", results.size(), failed);
  cudaFree(flush);
  return failed ? 1 : 0;
}
