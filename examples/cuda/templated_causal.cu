// Tiled attention forward, templated on the element type, the head dim and
// the masking: an example of a kernel used as it is written, a __global__
// template with no extern "C" wrapper. Its spec (templated_causal.toml)
// names it "attn_fwd<{T}, {D}, {causal}>", and flashcore instantiates it
// for every dtype, head dim and masking the spec declares
// (docs/cuda.md#template-kernels).
//
// Grid (ceil(Sq/4), B*H), 128 threads: each warp owns one query row, and
// the block's four warps share 32-key tiles of K and V in shared memory
// (fp32). In a tile, lane j scores key j; the warp keeps an online softmax
// in base 2 (the scale comes multiplied by log2(e)), each lane holding D/32
// elements of the output row. fp32 accumulation throughout.
//
// Layout (docs/cuda.md): Q and O are contiguous [B, H, Sq, D], K and V
// [B, H_kv, Sk, D]; query head h reads key/value head h / (H / H_kv); a
// causal row i sees keys j <= i (top-left). Any Sq and Sk.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>

#define ROWS 4  // query rows per block, one warp each
#define TILE 32 // keys per tile, one per lane

__device__ __forceinline__ float to_float(half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ void store(half* p, float x) { *p = __float2half_rn(x); }
__device__ __forceinline__ void store(__nv_bfloat16* p, float x) { *p = __float2bfloat16_rn(x); }

template <typename T, int D, bool IS_CAUSAL>
__global__ void __launch_bounds__(32 * ROWS)
    attn_fwd(const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v, T* __restrict__ o, int H,
             int H_kv, int Sq, int Sk, float scale_log2e) {
    constexpr int E = D / 32; // output elements per lane
    __shared__ float q_s[ROWS][D];
    __shared__ float k_s[TILE][D + 1]; // +1: lane j reads row j without bank conflicts
    __shared__ float v_s[TILE][D];

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int first_row = blockIdx.x * ROWS;
    const int row = first_row + warp;
    const int bh = blockIdx.y, b = bh / H, h = bh % H;
    const int kv_head = h / (H / H_kv);
    const T* k_head = k + ((size_t)b * H_kv + kv_head) * Sk * D;
    const T* v_head = v + ((size_t)b * H_kv + kv_head) * Sk * D;

    for (int i = threadIdx.x; i < ROWS * D; i += blockDim.x) {
        const int r = first_row + i / D;
        q_s[i / D][i % D] = r < Sq ? to_float(q[((size_t)bh * Sq + r) * D + i % D]) * scale_log2e : 0.f;
    }
    // The keys any row of the block sees: a causal block stops after its last row.
    int keys = Sk;
    if (IS_CAUSAL) keys = min(Sk, min(first_row + ROWS, Sq));
    const int last_key = IS_CAUSAL ? row : Sk - 1; // the last key this row sees

    float acc[E], m = -INFINITY, l = 0.f;
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] = 0.f;
    for (int tile = 0; tile < keys; tile += TILE) {
        __syncthreads(); // the previous tile is read
        for (int i = threadIdx.x; i < TILE * D; i += blockDim.x) {
            const int j = tile + i / D;
            k_s[i / D][i % D] = j < Sk ? to_float(k_head[(size_t)j * D + i % D]) : 0.f;
            v_s[i / D][i % D] = j < Sk ? to_float(v_head[(size_t)j * D + i % D]) : 0.f;
        }
        __syncthreads();
        const int j = tile + lane;
        float s = -INFINITY;
        if (j < Sk && j <= last_key) {
            s = 0.f;
#pragma unroll 8
            for (int d = 0; d < D; ++d) s += q_s[warp][d] * k_s[lane][d];
        }
        float tile_max = s;
        for (int offset = 16; offset > 0; offset >>= 1)
            tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, offset));
        if (tile_max == -INFINITY) continue; // no key of this tile is visible to this row
        const float m_new = fmaxf(m, tile_max);
        const float alpha = exp2f(m - m_new); // 0 on the first tile (m = -inf)
        const float p = exp2f(s - m_new);     // 0 for a masked key
        float p_sum = p;
        for (int offset = 16; offset > 0; offset >>= 1) p_sum += __shfl_xor_sync(0xffffffffu, p_sum, offset);
        l = l * alpha + p_sum;
#pragma unroll
        for (int e = 0; e < E; ++e) acc[e] *= alpha;
        for (int jj = 0; jj < TILE; ++jj) {
            const float pj = __shfl_sync(0xffffffffu, p, jj);
#pragma unroll
            for (int e = 0; e < E; ++e) acc[e] += pj * v_s[jj][lane * E + e];
        }
        m = m_new;
    }
    if (row >= Sq) return;
    T* o_row = o + ((size_t)bh * Sq + row) * D;
#pragma unroll
    for (int e = 0; e < E; ++e) store(&o_row[lane * E + e], acc[e] / l);
}
