/* elementwise.cu: the residual add, scaling, the final logit softcap, and what feeds cuBLAS and
 * takes its products back: the exact split of fp32 into three bf16 and the sum of the three
 * products. Each is one grid-stride pass. */
#include "kcommon.cuh"
#include "mma.cuh"

__global__ void add_kernel(float *out, const float *x, const float *y, size_t n) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = x[i] + y[i];
}

__global__ void scale_kernel(float *x, float v, size_t n) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= v;
}

__global__ void softcap_kernel(float *x, size_t n, float cap) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = cap * tanhf(x[i] / cap);
}

__global__ void split3_bf16_kernel(uint16_t *dst, const float *src, size_t n) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned hi, mid, lo;
        split3(src[i], hi, mid, lo);
        dst[i] = (uint16_t)(hi >> 16), dst[n + i] = (uint16_t)(mid >> 16),
        dst[2 * n + i] = (uint16_t)(lo >> 16);
    }
}

/* out[i] = y[i] + (y[m + i] + y[2m + i]): the product of hi, plus those of mid and lo, the two
 * small ones first. */
__global__ void sum3_kernel(float *out, const float *y, size_t m) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = y[i] + (y[m + i] + y[2 * m + i]);
}

/* Enough blocks to fill the GPU, few enough that big arrays loop. */
static unsigned grid_for(size_t n) {
    unsigned b = k_blocks(n, 256);
    return b > 4096 ? 4096 : b;
}

extern "C" void k_add(cudaStream_t s, float *out, const float *x, const float *y, size_t n) {
    if (!n || (k_skip & K_SKIP_ELEMENTWISE)) return;
    k_launch(add_kernel, dim3(grid_for(n)), dim3(256), s, out, x, y, n);
    K_CHECK_LAUNCH();
}

extern "C" void k_scale(cudaStream_t s, float *x, float v, size_t n) {
    if (!n || (k_skip & K_SKIP_ELEMENTWISE)) return;
    k_launch(scale_kernel, dim3(grid_for(n)), dim3(256), s, x, v, n);
    K_CHECK_LAUNCH();
}

extern "C" void k_softcap(cudaStream_t s, float *x, size_t n, float cap) {
    if (!n || (k_skip & K_SKIP_ELEMENTWISE)) return;
    k_launch(softcap_kernel, dim3(grid_for(n)), dim3(256), s, x, n, cap);
    K_CHECK_LAUNCH();
}

extern "C" void k_split3_bf16(cudaStream_t s, void *dst, const float *src, size_t n) {
    if (!n) return;
    k_launch(split3_bf16_kernel, dim3(grid_for(n)), dim3(256), s, (uint16_t *)dst, src, n);
    K_CHECK_LAUNCH();
}

extern "C" void k_sum3(cudaStream_t s, float *out, const float *y, size_t m) {
    if (!m) return;
    k_launch(sum3_kernel, dim3(grid_for(m)), dim3(256), s, out, y, m);
    K_CHECK_LAUNCH();
}
