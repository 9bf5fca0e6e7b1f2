/* mma.cuh: the tensor cores' warp-wide operations as inline PTX - mma.sync on bf16 operands with
 * fp32 accumulators, ldmatrix from shared memory, and the exact split of an fp32 into three bf16
 * that lets a bf16 mma multiply fp32 x - shared by matvec_mma.cu (the products), mlp_mma.cu
 * (the whole MLP) and matvec_q_mma.cu (int4 products). The fragment layouts are the PTX ISA's: lane
 * (g, t), g = lane / 4, t = lane % 4. The mma computes each output element from its row of A and
 * its column of B alone, so a row's or a column's bits do not depend on what the other rows and
 * columns hold: the property that lets a verify pass of several inputs reproduce a decode step of
 * one. */
#ifndef MMA_CUH
#define MMA_CUH

#include <cuda_bf16.h>

/* d += A B, m16n8k16, bf16 operands, fp32 accumulators. A: a0 (row g, k 2t, 2t + 1), a1 (row
 * g + 8), a2 (row g, k 2t + 8, 2t + 9), a3 (row g + 8, k 2t + 8 ..); B: b0 (k 2t, 2t + 1, column
 * g), b1 (k 2t + 8, 2t + 9); d: (g, 2t), (g, 2t + 1), (g + 8, 2t), (g + 8, 2t + 1). */
__device__ __forceinline__ void mma_bf16(float d[4], unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* d = A B, m16n8k16 as mma_bf16, from a zero accumulator (matvec_q_mma.cu: a sum a group of
 * scales, scaled on the CUDA cores). */
__device__ __forceinline__ void mma_bf16_zero(float d[4], unsigned a0, unsigned a1, unsigned a2,
                                              unsigned a3, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f));
}

/* d += A B, m16n8k8: A a0 (row g, k 2t, 2t + 1), a1 (row g + 8); B b0 (k 2t, 2t + 1, column g);
 * d as m16n8k16's. */
__device__ __forceinline__ void mma_bf16_k8(float d[4], unsigned a0, unsigned a1, unsigned b0) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5}, {%6}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(b0));
}

/* Four 8 x 8 matrices of 16-bit elements from shared memory: lanes 8i .. 8i + 7 give the
 * addresses of matrix i's rows (16 bytes each); lane (g, t) receives elements (g, 2t) and
 * (g, 2t + 1) of each - with trans, elements (2t, g) and (2t + 1, g). */
__device__ __forceinline__ void ldsm_x4(unsigned r[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldsm_x4_trans(unsigned r[4], unsigned addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* What x leaves after its top 16 bits (a bf16, truncated): exact in fp32, with 8 significant bits
 * fewer than x. */
__device__ __forceinline__ float bf16_rest(float x) {
    return x - __uint_as_float(__float_as_uint(x) & 0xffff0000u);
}

/* x = hi + mid + lo exactly (|x| >= 2^-110), each part the top 16 bits - a bf16, truncated - of
 * what the parts before it leave: x - hi has at most 16 significant bits and is exact in fp32,
 * its rest after mid at most 8, which bf16 holds (matvec_mma.cu's mma_b, SPLIT 3, says more).
 * The parts come back as the fp32 whose top halves they are. */
__device__ __forceinline__ void split3(float x, unsigned &hi, unsigned &mid, unsigned &lo) {
    const float r = bf16_rest(x), q = bf16_rest(r);
    hi = __float_as_uint(x), mid = __float_as_uint(r), lo = __float_as_uint(q);
}

/* Two parts as a bf16 pair: a's top half low (the lower k), b's high. */
__device__ __forceinline__ unsigned bf16_pair(unsigned a, unsigned b) {
    return __byte_perm(a, b, 0x7632);
}

/* Warps that share a tile of 16 rows (split-K) in the products on the tensor cores
 * (matvec_mma.cu, matvec_q_mma.cu): from 1, doubled while fewer than a block's warps, while every
 * slice keeps at least slice_steps of the row's steps, and while the launch of tiles times k
 * warps still fits wave blocks. A function of the shape (and the multiprocessors) alone, so a
 * verify pass splits as its decode step does. */
static inline int mma_split_k(int rows, int steps, int slice_steps, int warps, long wave) {
    const long tiles = (rows + 15) / 16;
    int k = 1;
    while (k < warps && steps >= 2 * k * slice_steps && (tiles * 2 * k + warps - 1) / warps <= wave)
        k *= 2;
    return k;
}

#endif
