/* norm_row.cuh: the arithmetic of one RMSNorm over one row, shared by rmsnorm.cu's kernels and
 * the prologue that folds a norm into the matrix-vector product reading its result (matvec.cu,
 * k_matvec_multi_norm). One definition, so that the fused decode step leaves exactly the floats
 * the separate kernels leave, and a speculative verify pass (which runs them separately)
 * reproduces it bit for bit.
 *
 * The order of the sum of squares is that of a "virtual block" of norm_threads(dim) threads
 * (dim rounded up to a warp multiple, at most 1024 - what k_rmsnorm and k_norm_add_norm
 * launch): virtual thread v adds its elements v, v + NT, v + 2 NT, ... in order, each virtual
 * warp of 32 is reduced with warp_sum, and the warp sums with one more warp_sum (block_sum's
 * order). A real block of a multiple of 32 threads plays it: real warp w takes the virtual
 * warps w, w + warps, ... So a 1024-thread rmsnorm block and a 256-thread matvec block get the
 * same bits. The elementwise steps are written with
 * __fmul_rn / __fadd_rn / __fmaf_rn: the compiler then contracts nothing differently in the two
 * kernels. */
#ifndef NORM_ROW_CUH
#define NORM_ROW_CUH

#include "kcommon.cuh"

/* Threads of the virtual block for a row of dim values. */
__host__ __device__ __forceinline__ int norm_threads(int dim) {
    return dim >= 1024 ? 1024 : (dim + 31) / 32 * 32;
}

/* sum over i < dim of term(i)^2, in the virtual block's order; every thread of the (real)
 * block gets it. term(i) is called once per i (by one thread), so it may also store. red: 32
 * floats of shared memory. MAXV: virtual warps a real warp plays at most (blockDim.x * MAXV >=
 * norm_threads(dim)); their sums are kept side by side (independent chains, reduced together).
 * rmsnorm.cu's kernels launch the virtual block itself (MAXV 1: block_sum's code); the
 * 256-thread matvec prologue needs 4. */
template <int MAXV, typename Term>
__device__ __forceinline__ float norm_sum_sq(int dim, Term term, float *red) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int nt = norm_threads(dim), vwarps = nt >> 5;
    float ss[MAXV]; /* virtual warps warp, warp + warps, ... */
#pragma unroll
    for (int k = 0; k < MAXV; k++)
        ss[k] = 0.0f;
    for (int i0 = threadIdx.x; i0 < dim; i0 += nt)
#pragma unroll
        for (int k = 0; k < MAXV; k++) {
            const int i = i0 + k * (int)blockDim.x;
            if (warp + k * warps < vwarps && i < dim) {
                const float v = term(i);
                ss[k] = __fmaf_rn(v, v, ss[k]);
            }
        }
#pragma unroll
    for (int k = 0; k < MAXV; k++)
        ss[k] = warp_sum(ss[k]);
    __syncthreads(); /* red may still be read by a previous call */
#pragma unroll
    for (int k = 0; k < MAXV; k++)
        if (lane == 0 && warp + k * warps < vwarps) red[warp + k * warps] = ss[k];
    __syncthreads();
    return warp_sum(lane < vwarps ? red[lane] : 0.0f);
}

/* 1 / sqrt(mean + eps) from the sum of squares. */
__device__ __forceinline__ float norm_inv(float ss, int dim, float eps) {
    return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, (float)dim), eps)));
}

/* One element of the norm: v * inv (* w when there is a scale). */
template <typename T>
__device__ __forceinline__ float norm_scale(float v, float inv, const T *w, int i) {
    const float s = __fmul_rn(v, inv);
    return w ? __fmul_rn(s, to_f32(w[i])) : s;
}

#endif
