/* embed.cu: embedding gathers - token rows of the embedding table and of the per-layer
 * embedding table (PLE), converted to fp32 and scaled. The token ids are read from device
 * memory, so a captured decode step gathers whatever token the backend stored before the
 * replay. */
#include "kcommon.cuh"

template <typename T>
__global__ void embed_kernel(float *out, const T *table, int cols, const int *ids, float scale) {
    k_wait_prior();
    const int t = blockIdx.y;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= cols) return;
    const T *row = table + (size_t)ids[t] * cols;
    out[(size_t)t * cols + c] = to_f32(row[c]) * scale;
}

extern "C" void k_embed(cudaStream_t s, float *out, const void *table, int wdtype, int cols,
                        const int *ids, int n, float scale) {
    if (n <= 0 || cols <= 0) return;
    dim3 grid(k_blocks((size_t)cols, 256), n);
    if (wdtype == KDT_BF16)
        k_launch(embed_kernel<__nv_bfloat16>, dim3(grid), dim3(256), s, out,
                 (const __nv_bfloat16 *)table, cols, ids, scale);
    else if (wdtype == KDT_F16)
        k_launch(embed_kernel<__half>, dim3(grid), dim3(256), s, out, (const __half *)table, cols,
                 ids, scale);
    else
        k_launch(embed_kernel<float>, dim3(grid), dim3(256), s, out, (const float *)table, cols,
                 ids, scale);
    K_CHECK_LAUNCH();
}
