/* elementwise.cu: the residual add, scaling, the final logit softcap, and the fp32 ->
 * bf16 / f16 conversion that feeds cuBLAS. Each is one grid-stride pass. */
#include "kcommon.cuh"

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

__global__ void to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void to_f16_kernel(__half *dst, const float *src, size_t n) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2half_rn(src[i]);
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

extern "C" void k_convert(cudaStream_t s, void *dst, int wdtype, const float *src, size_t n) {
    if (!n) return;
    if (wdtype == KDT_BF16)
        k_launch(to_bf16_kernel, dim3(grid_for(n)), dim3(256), s, (__nv_bfloat16 *)dst, src, n);
    else
        k_launch(to_f16_kernel, dim3(grid_for(n)), dim3(256), s, (__half *)dst, src, n);
    K_CHECK_LAUNCH();
}
