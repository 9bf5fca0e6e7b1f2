/* backend_cuda.h: what the CUDA backend offers beyond the backend table (backend.h declares
 * backend_cuda_new itself): its counters, for benchmarks and tests.
 *
 * Environment switches read by backend_cuda_new (backend_cuda_env.c); any other GEMMA_CUDA_*
 * variable, and any other value, is refused with a message naming it. Tuned by the GPU search
 * spaces:
 *   GEMMA_CUDA_MV_MMA=0|1|2|int4  bf16 and int4 products on the CUDA cores (0, default) or the
 *                             tensor cores, bf16 with x split exactly into three bf16 (1) or
 *                             into two (2), int4 with x exact under both (matvec_mma.cu,
 *                             matvec_q_mma.cu); int4: the int4 products alone. Cheaper verify
 *                             passes, a slower plain step, other last bits
 *   GEMMA_CUDA_MLP=1|0|mma|all  the whole-MLP kernel for bf16 MLPs where it fits (1, default:
 *                             mlp.cu, sm_90+), none (0: gate, up, GeLU and down as grouped
 *                             products), the whole-MLP kernel on the tensor cores for bf16
 *                             MLPs (mma: mlp_mma.cu), or mlp.cu for bf16, int8 and int4 MLPs
 *                             alike (all: faster verify passes, a slower int4 decode step)
 *   GEMMA_CUDA_DEQUANT=ahead|keep  the 16-bit copies of int8 / int4 matrices that prefill
 *                             products read: made each prompt, one product ahead, in two
 *                             buffers (ahead, default), or kept on the device from a matrix's
 *                             second prefill product on while it has room (keep: faster
 *                             prefill, E4B int4 7.7 GB more device memory;
 *                             backend_cuda_dequant.c)
 * By architecture:
 *   GEMMA_CUDA_ATTN=auto|split|cluster   attention as one kernel of thread block clusters for
 *                             short rings (cluster: sm_90+ only) or slices + merge (split);
 *                             auto (default): cluster where the GPU has clusters
 *   GEMMA_CUDA_GEMM=auto|own  bf16 and int8 / int4 products of more than 17 inputs (prefill
 *                             chunks) on cuBLAS
 *                             (auto, default) or every product on our kernels (own)
 * For debugging:
 *   GEMMA_CUDA_GRAPHS=0       every step eager, no CUDA-graph capture / replay
 *   GEMMA_CUDA_FUSE=0         no fusion of neighbouring ops: every op its own kernel
 *   GEMMA_CUDA_PDL=0          no programmatic dependent launch (otherwise on for sm_90+)
 *   GEMMA_CUDA_PROFILE=1      time every op (graphs off); the per-family table goes to stderr
 *                             when the backend is destroyed
 * MV_MMA, MLP and ATTN each sum in their own order: results differ in the last bits between
 * their values. */
#ifndef BACKEND_CUDA_H
#define BACKEND_CUDA_H

#include <stdio.h>

#include "backend.h"
#include "quant.h"

typedef struct {
    double bytes;             /* bytes moved by every op so far (weights, activations, KV) */
    long decode_steps;        /* single-token steps begun */
    long replays;             /* of which replayed from a CUDA graph */
    long captures;            /* graphs captured */
    size_t weight_bytes;      /* weights held on the device */
    char device[256];         /* device name and compute capability */
    int attn_form;            /* the attention's form: kernels.h K_ATTN_SPLIT or K_ATTN_CLUSTER */
    long attn_split_ops;      /* attention ops issued (run eagerly or captured) as slices + merge */
    long attn_rows_ops;       /* attention ops over more than BACKEND_VERIFY_ROWS rows (prefill) */
    int mlp_form;             /* the whole-MLP kernel asked for: 0, K_MLP_CORES or K_MLP_MMA */
    int mlp_quant;            /* and for int8 / int4 MLPs too (GEMMA_CUDA_MLP=all) */
    long mlp_ops;             /* MLPs issued (run eagerly or captured) as one whole-MLP kernel */
    long dequant_ahead;       /* quantized matrices' 16-bit copies made one product ahead */
    long dequant_ahead_used;  /* prefill products that found their copy made so */
    long dequant_kept;        /* copies kept on the device (GEMMA_CUDA_DEQUANT=keep) */
    long dequant_kept_writes; /* copies written since the counters were zeroed (a kept copy once) */
    size_t dequant_kept_bytes; /* and their bytes */
} backend_cuda_counters;

void backend_cuda_stats(backend *b, backend_cuda_counters *c);
/* 1 when the backend multiplies by q (int8 / int4 weights: kernels/matvec_q.h wants cols a
 * multiple of 128 and group 32, 64 or 128), else 0: the decoder refuses such a model by name. */
int backend_cuda_takes_quant(const quant_matrix *q);
/* Zero the counters (bytes, calls, times, steps, copies made), e.g. after a prefill, to see decode
 * alone. The kept copies themselves (dequant_kept, _bytes) stay. */
void backend_cuda_reset_counters(backend *b);
/* The per-family table (times only when GEMMA_CUDA_PROFILE=1). */
void backend_cuda_profile_print(backend *b, FILE *f);

#endif
