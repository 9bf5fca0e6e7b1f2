/* elementwise.cu: the residual add, scaling, the final logit softcap, and what feeds cuBLAS and
 * takes its products back: the split of fp32 into two bf16 (x to 2^-17 of itself) or, row by row
 * scaled by a power of two, into two fp16 (x to 2^-23), and the sum of the two products. Each is
 * one grid-stride pass (the fp16 split: a block a row, which first finds the row's largest
 * magnitude). */
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

/* hi = bf16(x) and lo = bf16(x - hi), both rounded to nearest, as matvec_mma.cu's SPLIT 2: x -
 * hi is exact in fp32 and at most half hi's last place, 2^-8 of x's binade, and only a power of
 * two reaches that bound, which lo holds exactly; anything smaller lies in a binade 2^-9 below
 * x's or lower, where lo's rounding leaves at most 2^-17 of x's. So |x - hi - lo| <=
 * max(2^-17 |x|, 2^-134): the second term where lo falls among bf16's subnormals (|x| below about
 * 2^-117), half their spacing. */
__global__ void split2_bf16_kernel(uint16_t *dst, const float *src, size_t n) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float x = src[i];
        const __nv_bfloat16 hi = __float2bfloat16_rn(x);
        dst[i] = __bfloat16_as_ushort(hi);
        dst[n + i] = __bfloat16_as_ushort(__float2bfloat16_rn(__fsub_rn(x, __bfloat162float(hi))));
    }
}

/* out[i] = y[i] + y[m + i]: the product of hi plus that of lo. */
__global__ void sum2_kernel(float *out, const float *y, size_t m) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = y[i] + y[m + i];
}

/* Row t of x[n][cols] times 2^ex[t] as two fp16 parts, dst = [2][n][cols] (hi, lo). ex[t] = 14
 * - the binade of the row's largest magnitude, so the row's values lie below 2^15 and fp16's
 * normal range covers its top 29 binades. hi = fp16(x'), lo = fp16(x' - hi), both rounded to
 * nearest: the difference is exact in fp32 and at most half hi's last place, 2^-11 of x''s
 * binade (a power of two that lo holds exactly, or a binade 2^-12 below or lower), and lo's
 * rounding leaves at most 2^-23 of x', or half fp16's smallest subnormal, 2^-25: |x' - hi - lo|
 * <= max(2^-23 |x'|, 2^-25), so at most 2^-23 of |x| where |x| is within 2^-16 of the row's
 * largest, and 2^-39 of that largest elsewhere. A row of zeros, or one holding inf, keeps ex 0,
 * and its parts then hold inf - inf = NaN, as the bf16 split's do; a NaN is left out of the row's
 * largest and stays NaN. */
__global__ void split2_f16_rows_kernel(__half *dst, int *ex, const float *src, int n, int cols) {
    __shared__ float shared[32];
    k_wait_prior();
    const size_t part = (size_t)n * cols;
    for (int t = blockIdx.x; t < n; t += gridDim.x) {
        const float *x = src + (size_t)t * cols;
        float m = 0.0f;
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            m = fmaxf(m, fabsf(x[c]));
        m = block_max(m, shared);
        const int e = m > 0.0f && isfinite(m) ? 14 - ilogbf(m) : 0;
        if (!threadIdx.x) ex[t] = e;
        __half *h = dst + (size_t)t * cols;
        for (int c = threadIdx.x; c < cols; c += blockDim.x) {
            const float v = ldexpf(x[c], e);
            const __half a = __float2half_rn(v);
            h[c] = a, h[part + c] = __float2half_rn(__fsub_rn(v, __half2float(a)));
        }
    }
}

/* out[t][r] = (y[i] + y[m + i]) * 2^-(ex[t] + e), i = t rows + r, m = n rows: the sum of
 * split2_f16_rows's two products, scaled back (exactly: a power of two, one rounding at most,
 * where the result is an fp32 subnormal). */
__global__ void sum2_rows_kernel(float *out, const float *y, size_t m, int rows, const int *ex,
                                 int e) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < m;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = ldexpf(y[i] + y[m + i], -(ex[i / rows] + e));
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

extern "C" void k_split2_bf16(cudaStream_t s, void *dst, const float *src, size_t n) {
    if (!n) return;
    k_launch(split2_bf16_kernel, dim3(grid_for(n)), dim3(256), s, (uint16_t *)dst, src, n);
    K_CHECK_LAUNCH();
}

extern "C" void k_sum2(cudaStream_t s, float *out, const float *y, size_t m) {
    if (!m) return;
    k_launch(sum2_kernel, dim3(grid_for(m)), dim3(256), s, out, y, m);
    K_CHECK_LAUNCH();
}

extern "C" void k_split2_f16_rows(cudaStream_t s, void *dst, int *ex, const float *src, int n,
                                  int cols) {
    if (n < 1 || cols < 1) return;
    k_launch(split2_f16_rows_kernel, dim3(n < 4096 ? n : 4096), dim3(256), s, (__half *)dst, ex,
             src, n, cols);
    K_CHECK_LAUNCH();
}

extern "C" void k_sum2_rows(cudaStream_t s, float *out, const float *y, int n, int rows,
                            const int *ex, int e) {
    const size_t m = (size_t)n * rows;
    if (!m) return;
    k_launch(sum2_rows_kernel, dim3(grid_for(m)), dim3(256), s, out, y, m, rows, ex, e);
    K_CHECK_LAUNCH();
}
