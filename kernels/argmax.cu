/* argmax.cu: the greedy pick over the logits without copying them to the host, for one row
 * or for the n rows of a speculative verify at once (one launch pair, one download). Pass
 * one: K_ARGMAX_BLOCKS blocks per row each find the best of a strided share; pass two: one
 * block per row picks among them. Ties go to the lower index at every step, so the result is
 * torch.argmax's (and the CPU backend's) first maximum, whatever the number of rows. */
#include "kcommon.cuh"

#define AM_THREADS 512

/* Better (value, index) of two candidates: larger value, then lower index. */
__device__ __forceinline__ void am_pick(float &v, int &i, float v2, int i2) {
    if (v2 > v || (v2 == v && i2 < i)) {
        v = v2;
        i = i2;
    }
}

__device__ void am_block(float &v, int &i) {
    __shared__ float sv[AM_THREADS / 32];
    __shared__ int si[AM_THREADS / 32];
    for (int o = 16; o > 0; o >>= 1)
        am_pick(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sv[warp] = v;
        si[warp] = i;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < AM_THREADS / 32 ? sv[lane] : -INFINITY;
        i = lane < AM_THREADS / 32 ? si[lane] : 0x7fffffff;
        for (int o = 16; o > 0; o >>= 1)
            am_pick(v, i, __shfl_xor_sync(0xffffffffu, v, o), __shfl_xor_sync(0xffffffffu, i, o));
    }
}

/* Row blockIdx.y of x[rows][n]: block blockIdx.x's best into bv / bi[row][block]. */
__global__ void argmax_pass1(const float *x, int n, float *bv, int *bi) {
    k_wait_prior();
    const size_t row = blockIdx.y;
    x += row * n;
    float v = -INFINITY;
    int i = 0x7fffffff;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < n; j += gridDim.x * blockDim.x)
        am_pick(v, i, x[j], j);
    am_block(v, i);
    if (threadIdx.x == 0) {
        bv[row * gridDim.x + blockIdx.x] = v;
        bi[row * gridDim.x + blockIdx.x] = i;
    }
}

/* Row blockIdx.x: the best of its nb candidates into out[row]. */
__global__ void argmax_pass2(const float *bv, const int *bi, int nb, int *out) {
    k_wait_prior();
    const size_t row = blockIdx.x;
    float v = -INFINITY;
    int i = 0x7fffffff;
    for (int j = threadIdx.x; j < nb; j += blockDim.x)
        am_pick(v, i, bv[row * nb + j], bi[row * nb + j]);
    am_block(v, i);
    /* All -inf or NaN logits: fall back to 0, as a CPU scan that never finds a larger one. */
    if (threadIdx.x == 0) out[row] = i == 0x7fffffff ? 0 : i;
}

extern "C" void k_argmax_rows(cudaStream_t s, const float *x, int n, int rows, void *scratch,
                              int *out) {
    if (rows <= 0) return;
    float *bv = (float *)scratch;
    int *bi = (int *)scratch + (size_t)rows * K_ARGMAX_BLOCKS;
    k_launch(argmax_pass1, dim3(K_ARGMAX_BLOCKS, rows), dim3(AM_THREADS), s, x, n, bv, bi);
    K_CHECK_LAUNCH();
    k_launch(argmax_pass2, dim3(rows), dim3(AM_THREADS), s, (const float *)bv, (const int *)bi,
             K_ARGMAX_BLOCKS, out);
    K_CHECK_LAUNCH();
}

extern "C" void k_argmax(cudaStream_t s, const float *x, int n, void *scratch, int *out) {
    k_argmax_rows(s, x, n, 1, scratch, out);
}
