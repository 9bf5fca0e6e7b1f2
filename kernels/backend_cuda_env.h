/* backend_cuda_env.h: the CUDA backend's switches from the environment (backend_cuda_env.c;
 * backend_cuda.h lists them). */
#ifndef BACKEND_CUDA_ENV_H
#define BACKEND_CUDA_ENV_H

#include <stddef.h>

#include "backend_cuda_fuse.h"
#include "kernels.h"

#define CUDA_ATTN_AUTO (-1) /* the cluster form where the device runs it, else the split form */

typedef struct {
    int gemm_mode;  /* GEMMA_CUDA_GEMM: 0 own, 1 cublas for every bf16/f16 product, 2 (default)
                       bf16 products of n > 17 */
    int use_graphs; /* GEMMA_CUDA_GRAPHS */
    int profile;    /* GEMMA_CUDA_PROFILE */
    int fuse;       /* GEMMA_CUDA_FUSE */
    int fuse_mm;    /* GEMMA_CUDA_FUSE_MM: CUDA_FUSE_MM_* */
    int pdl;        /* GEMMA_CUDA_PDL (the backend also needs sm_90 for it) */
    int attn;       /* GEMMA_CUDA_ATTN: CUDA_ATTN_AUTO, K_ATTN_SPLIT or K_ATTN_CLUSTER */
    int mlp;        /* GEMMA_CUDA_MLP: 0, or K_MLP_CORES / K_MLP_MMA for the MLPs it takes */
    k_mv_tuning mv; /* GEMMA_CUDA_MV_UNROLL, _PREFETCH, _DECODE, _GRID, _SPLIT, _ROWS, _ROWS_MIN */
} cuda_switches;

/* Fill sw from the environment: 0, or -1 with a message naming the variable and its value. */
int cuda_switches_from_env(cuda_switches *sw, char *err, size_t errlen);

#endif
