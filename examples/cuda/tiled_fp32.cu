// A kernel in the shape many public "minimal FlashAttention" kernels have,
// written here to show that the CUDA-file route takes such a kernel as it
// is (tiled_fp32.toml says how):
//   - a C++ (mangled) symbol, not extern "C";
//   - its own parameter order, with tile counts and sizes as parameters;
//   - fp32 only, no masking, one head dim, no bounds checks: the lengths
//     must be multiples of the 32-row tiles (seq_multiple = 32);
//   - running statistics l and m in global buffers that must start at 0
//     and -inf, and an output it reads before it writes (O must start at
//     0): the spec resets all three before every call.
//
// Grid (B, H), one block of Br = Bc = 32 threads per (batch, head); thread
// tx owns query row tx of each query tile. Shared memory holds the query
// tile, one K and one V tile, and the tile's scores.
__global__ void tiled_forward(const float* Q, const float* K, const float* V, const int N, const int d,
                              const int Tc, const int Tr, const int Bc, const int Br, const float softmax_scale,
                              float* l, float* m, float* O) {
    const int tx = threadIdx.x;
    const size_t head = (size_t)blockIdx.x * gridDim.y + blockIdx.y;  // batch * heads + head
    const size_t base = head * N * d;                                  // of Q, K, V and O
    const size_t row_base = head * N;                                  // of l and m
    extern __shared__ float sram[];
    float* q_tile = sram;              // Br x d
    float* k_tile = q_tile + Br * d;   // Bc x d
    float* v_tile = k_tile + Bc * d;   // Bc x d
    float* scores = v_tile + Bc * d;   // Br x Bc

    for (int j = 0; j < Tc; ++j) {
        for (int x = 0; x < d; ++x) {
            k_tile[tx * d + x] = K[base + (size_t)(j * Bc + tx) * d + x];
            v_tile[tx * d + x] = V[base + (size_t)(j * Bc + tx) * d + x];
        }
        __syncthreads();
        for (int i = 0; i < Tr; ++i) {
            const size_t row = (size_t)i * Br + tx;
            for (int x = 0; x < d; ++x) q_tile[tx * d + x] = Q[base + row * d + x];
            const float m_prev = m[row_base + row], l_prev = l[row_base + row];
            float m_tile = -INFINITY;
            for (int y = 0; y < Bc; ++y) {
                float s = 0.f;
                for (int x = 0; x < d; ++x) s += q_tile[tx * d + x] * k_tile[y * d + x];
                s *= softmax_scale;
                scores[tx * Bc + y] = s;
                m_tile = fmaxf(m_tile, s);
            }
            float l_tile = 0.f;
            for (int y = 0; y < Bc; ++y) {
                const float p = expf(scores[tx * Bc + y] - m_tile);
                scores[tx * Bc + y] = p;
                l_tile += p;
            }
            const float m_new = fmaxf(m_prev, m_tile);
            const float old_weight = l_prev * expf(m_prev - m_new);  // 0 on the first tile (m = -inf, l = 0)
            const float tile_weight = expf(m_tile - m_new);
            const float l_new = old_weight + tile_weight * l_tile;
            for (int x = 0; x < d; ++x) {
                float pv = 0.f;
                for (int y = 0; y < Bc; ++y) pv += scores[tx * Bc + y] * v_tile[y * d + x];
                float* o = &O[base + row * d + x];
                *o = (old_weight * *o + tile_weight * pv) / l_new;
            }
            m[row_base + row] = m_new;
            l[row_base + row] = l_new;
        }
        __syncthreads();
    }
}
