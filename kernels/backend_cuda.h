/* backend_cuda.h: what the CUDA backend offers beyond the backend table (backend.h declares
 * backend_cuda_new itself): its counters, for benchmarks and tests.
 *
 * Environment switches read by backend_cuda_new:
 *   GEMMA_CUDA_GRAPHS=0    run every step eagerly (no CUDA-graph capture / replay)
 *   GEMMA_CUDA_FUSE=0      no fusion of neighbouring ops (backend_cuda_fuse.c): every op its
 *                          own kernel, launched when called
 *   GEMMA_CUDA_FUSE_MM=0|1|auto|nopair   grouping of matrix products that read the same input
 *                          (q/k/v, gate/up + GeLU, the per-layer gate + GeLU) into one launch:
 *                          never; (1, the default) always, gate and up sharing warps with
 *                          the GeLU folded in; (auto) always, but gate and up paired only for
 *                          matrices of at most 1 MiB; or always but with gate and up as two
 *                          plain matrices and the GeLU separate. A product grouped with others
 *                          may be split otherwise than alone (matvec.cu launch_splits), so 0
 *                          changes the last bits of q / k / v and the like
 *   GEMMA_CUDA_MV_UNROLL=auto|4|8   unroll of the matrix-vector kernel's column loop (default
 *                          auto: 4 for a decode launch with the gate + up pair, else 8)
 *   GEMMA_CUDA_MV_GROUP=auto|0|1   a decode row's chunks in explicit groups (all loads of a
 *                          group, then their products): auto (default) groups of 4 in launches
 *                          of one wave or of many (matvec.cu mv_groups), never, or always
 *   GEMMA_CUDA_MV_BLOCK_WARPS=auto|8|4|2   warps a block of a decode launch whose matrices
 *                          all take one warp a row (no split): auto (default) 4 where blocks of
 *                          8 would run more than one wave, else 8 (matvec.cu mv_block_warps)
 *   GEMMA_CUDA_MV_PREFETCH=0|2|4   16-byte weight chunks per lane the matrix-vector kernel
 *                          loads before waiting for its predecessor (default 2; kcommon.cuh)
 *   GEMMA_CUDA_MV_DECODE=lean|lean8|general, GEMMA_CUDA_MV_GRID=blocks|persist|N   the n = 1
 *                          kernel and its grid (kernels.h: k_mv_tuning; defaults lean, blocks)
 *   GEMMA_CUDA_MV_SPLIT=N  split-K by the rule before (about N blocks per multiprocessor)
 *                          instead of the default one wave of blocks (matvec.cu split_for);
 *                          unlike the switches above, it changes a row's summation order
 *   GEMMA_CUDA_MV_ROWS=auto|1|2|4, GEMMA_CUDA_MV_ROWS_MIN=KiB   rows a warp takes in products
 *                          of 2 .. 8 inputs (speculative verify) in launches of at least KiB of
 *                          weights (default 1024), x loaded once for them: auto (the default: 2
 *                          up to 4 inputs, 4 from 5), 2 or 4; 1 (or a smaller launch): one
 *   GEMMA_CUDA_MV_MMA=0|1|2  bf16 products on the tensor cores (matvec_mma.cu): 1 with x split
 *                          exactly into three bf16, 2 into two (x to 16 bits: faster verify
 *                          passes, results further from the CPU's); summed in another order,
 *                          so results differ from the default's in the last bits; 0 (the
 *                          default): on the CUDA cores
 *   GEMMA_CUDA_MLP=0|1|mma  0: no whole-MLP kernel (mlp.cu): gate, up, GeLU and down as the
 *                          grouped products above. 1 (the default): an MLP with bf16 weights
 *                          whose shapes mlp.cu takes (sm_90 and newer, hidden a multiple of 256
 *                          up to 3584, at least 8 MLP rows a multiprocessor) is one kernel with
 *                          down stored transposed; mma: the same on the tensor cores
 *                          (mlp_mma.cu; x and h split exactly into three bf16), whose passes of
 *                          2 .. 8 inputs cost about what one does. Each sums in its own order,
 *                          so results differ between the three in the last bits
 *   GEMMA_CUDA_PDL=0       no programmatic dependent launch (it is on for sm_90 and newer)
 *   GEMMA_CUDA_ATTN=auto|split|cluster   attention as a slices kernel and a merge kernel
 *                          (split), or, for rings of up to 2048 positions (1024 for heads
 *                          wider than 256), as one kernel whose thread block clusters merge
 *                          their slices in distributed shared memory (cluster: sm_90 and
 *                          newer only; refused elsewhere); auto (default): cluster where the
 *                          GPU has clusters. The forms slice differently, so results differ
 *                          in the last bits
 *   GEMMA_CUDA_PROFILE=1   time every op per kernel family; the table (calls, ms, bytes,
 *                          GB/s) is printed to stderr when the backend is destroyed
 *   GEMMA_CUDA_GEMM=own|cublas|auto   who multiplies: our kernel everywhere, cuBLAS for every
 *                          bf16/f16 product (for comparison: speculation is not lossless then,
 *                          as cuBLAS may round a verify pass otherwise than the decode steps),
 *                          or (auto, the default) cuBLAS only for bf16 products of more rows
 *                          than any verify pass has (n > SPEC_MAX_K + 1 = 17: prefill chunks),
 *                          with fp32 x split exactly into three bf16 */
#ifndef BACKEND_CUDA_H
#define BACKEND_CUDA_H

#include <stdio.h>

#include "backend.h"

typedef struct {
    double bytes;        /* bytes moved by every op so far (weights, activations, KV) */
    long decode_steps;   /* single-token steps begun */
    long replays;        /* of which replayed from a CUDA graph */
    long captures;       /* graphs captured */
    size_t weight_bytes; /* weights held on the device */
    char device[256];    /* device name and compute capability */
    int attn_form;       /* the attention's form: kernels.h K_ATTN_SPLIT or K_ATTN_CLUSTER */
    long attn_split_ops; /* attention ops issued (run eagerly or captured) as slices + merge */
    int mlp_form;        /* the whole-MLP kernel asked for: 0, K_MLP_CORES or K_MLP_MMA */
    long mlp_ops;        /* MLPs issued (run eagerly or captured) as one whole-MLP kernel */
} backend_cuda_counters;

void backend_cuda_stats(backend *b, backend_cuda_counters *c);
/* Zero the counters (bytes, calls, times, steps), e.g. after a prefill, to see decode alone. */
void backend_cuda_reset_counters(backend *b);
/* The per-family table (times only when GEMMA_CUDA_PROFILE=1). */
void backend_cuda_profile_print(backend *b, FILE *f);

#endif
