/* matvec.cuh: what the matrix-vector kernel files share - a launch's matrices as the kernels see
 * them, the one dot product they sum with, the epilogue that stores a finished row, and the
 * launchers that matvec.cu hands products of 2 .. 8 inputs (matvec_rows.cu) and bf16 products on
 * the tensor cores (matvec_mma.cu) to. Device and launcher code; included by those .cu files
 * only. */
#ifndef MATVEC_CUH
#define MATVEC_CUH

#include "kcommon.cuh"

#define MV_WARPS 8 /* warps per block (matvec.cu's kernels and matvec_rows_kernel) */

/* acc + the dot product of four weights with four inputs: the one expression every CUDA-core
 * product sums with (matvec.cu, matvec_rows.cu), so that all of them round alike (matvec.cu's
 * reproducibility rule). One fma chain into acc: four instructions where the tree form acc +
 * (w0 x0 + ... + w3 x3) takes a multiply, three fmas and an add (E4B step 3.365 against 3.390 ms
 * on an H200). */
__device__ __forceinline__ float mv_dot4(const float *wf, const float4 xv, float acc) {
    acc = fmaf(wf[0], xv.x, acc);
    acc = fmaf(wf[1], xv.y, acc);
    acc = fmaf(wf[2], xv.z, acc);
    return fmaf(wf[3], xv.w, acc);
}

/* One matrix of a launch, as the kernel sees it: k warps per row, blocks from block0. */
struct mv_seg {
    float *out, *out_up;
    const void *w, *w_up;
    const float *mul;
    int rows, epilogue, mul_stride, k, block0;
};

struct mv_launch {
    mv_seg seg[K_MV_SEGS];
    int n_segs;
    int blocks; /* virtual blocks of all segments (the grid) */
    int wb;     /* warps a block of matvec1_kernel: MV_WARPS, or 4 (matvec.cu mv_block_warps) */
};

/* The kernels' view of a launcher's matrix: k warps per row (or row tile), blocks from block0. */
static inline mv_seg mv_seg_make(const k_mv_seg &s, int k, int block0) {
    mv_seg d;
    d.out = s.out;
    d.out_up = s.out_up;
    d.w = s.w;
    d.w_up = s.w_up;
    d.mul = s.mul;
    d.rows = s.rows;
    d.epilogue = s.epilogue;
    d.mul_stride = s.mul_stride;
    d.k = k;
    d.block0 = block0;
    return d;
}

/* The segment of a launch that virtual block b belongs to (segments are dealt blocks in order;
 * compile-time indices, so that L stays in parameter space). */
__device__ __forceinline__ int mv_seg_of(const mv_launch &L, int b) {
    int si = 0;
#pragma unroll
    for (int i = 1; i < K_MV_SEGS; i++)
        if (i < L.n_segs && b >= L.seg[i].block0) si = i;
    return si;
}

/* Store the finished products of (input t, row) by the segment's epilogue. */
__device__ __forceinline__ void mv_store(const mv_seg &sg, int t, int row, float v, float v_up) {
    const size_t o = (size_t)t * sg.rows + row;
    if (sg.epilogue == K_MV_GELU_PAIR) {
        sg.out_up[o] = v_up;
        sg.out[o] = gelu_tanh(v) * v_up;
    } else if (sg.epilogue == K_MV_GELU_MUL) {
        sg.out[o] = gelu_tanh(v) * sg.mul[(size_t)t * sg.mul_stride + row];
    } else {
        sg.out[o] = v;
    }
}

/* matvec_rows.cu: the products of L's matrices (weights of type T: float, __half or
 * __nv_bfloat16) with n = 2 .. 8 inputs, R (2 or 4) rows a warp (the gate + up pair: 2), on the
 * vector path (16-byte aligned, cols a multiple of 16 bytes of weights); blocks: L's virtual
 * blocks of R rows a warp. */
template <typename T>
void mv_rows_launch(cudaStream_t s, const mv_launch &L, unsigned blocks, const float *x, int cols,
                    int n, int R, bool pair);

/* matvec_mma.cu: the products of segs (bf16 weights, every matrix and x 16-byte aligned, cols a
 * multiple of 32) on the tensor cores, x split into split (2 or 3) bf16; sms the
 * multiprocessors. */
void mv_mma_launch(cudaStream_t s, const k_mv_seg *segs, int n_segs, const float *x, int cols,
                   int n, int split, int sms);

#endif
