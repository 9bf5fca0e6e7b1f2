/* rmsnorm.cu: RMSNorm over many short vectors (Gemma 4 normalises the residual stream, every
 * query and key head, and the values without a scale). One block per vector: the vector is
 * read once into registers / L1, its sum of squares reduced over the block, then scaled. */
#include "kcommon.cuh"

template <typename T>
__global__ void rmsnorm_kernel(float *out, const float *x, const T *w, int dim, float eps) {
    __shared__ float red[32];
    const float *xv = x + (size_t)blockIdx.x * dim;
    float *ov = out + (size_t)blockIdx.x * dim;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x)
        ss += xv[i] * xv[i];
    ss = block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = xv[i] * inv;
        ov[i] = w ? v * to_f32(w[i]) : v;
    }
}

extern "C" void k_rmsnorm(cudaStream_t s, float *out, const float *x, const void *w, int wdtype,
                          int n_vec, int dim, float eps) {
    if (n_vec <= 0) return;
    /* Short vectors (a 256-wide head) get one warp-multiple just above their size. */
    unsigned threads = dim >= 1024 ? 1024 : (unsigned)((dim + 31) / 32 * 32);
    if (wdtype == KDT_BF16)
        rmsnorm_kernel<<<n_vec, threads, 0, s>>>(out, x, (const __nv_bfloat16 *)w, dim, eps);
    else if (wdtype == KDT_F16)
        rmsnorm_kernel<<<n_vec, threads, 0, s>>>(out, x, (const __half *)w, dim, eps);
    else
        rmsnorm_kernel<<<n_vec, threads, 0, s>>>(out, x, (const float *)w, dim, eps);
    K_CHECK_LAUNCH();
}
