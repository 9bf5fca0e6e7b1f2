/* backend_cuda_env.h: the CUDA backend's switches as read from the environment
 * (backend_cuda_env.c; backend_cuda.h says what each one does). */
#ifndef BACKEND_CUDA_ENV_H
#define BACKEND_CUDA_ENV_H

#include <stddef.h>

#include "kernels.h"

#define CUDA_ATTN_AUTO (-1) /* the cluster form where the device runs it, else the split form */

typedef struct {
    int gemm_own;     /* GEMMA_CUDA_GEMM=own: every product on our kernels (0: auto) */
    int use_graphs;   /* GEMMA_CUDA_GRAPHS */
    int fuse;         /* GEMMA_CUDA_FUSE */
    int pdl;          /* GEMMA_CUDA_PDL (the backend also needs sm_90 for it) */
    int profile;      /* GEMMA_CUDA_PROFILE */
    int attn;         /* GEMMA_CUDA_ATTN: CUDA_ATTN_AUTO, K_ATTN_SPLIT or K_ATTN_CLUSTER */
    int mlp;          /* GEMMA_CUDA_MLP: 0, or K_MLP_CORES / K_MLP_MMA for the bf16 MLPs it takes */
    int mlp_quant;    /* GEMMA_CUDA_MLP=all: int8 / int4 MLPs too (on the CUDA cores) */
    int dequant_keep; /* GEMMA_CUDA_DEQUANT=keep: prefill's 16-bit copies kept on the device */
    int mv_mma;       /* GEMMA_CUDA_MV_MMA 0, 1 or 2 (int4: 0): bf16 products, k_matvec_set_mma */
    int q_mma;        /* GEMMA_CUDA_MV_MMA 1, 2 or int4: int4 products, k_matvec_q_set_mma */
} cuda_switches;

/* Fill sw from the environment: 0, or -1 with a message naming the variable and its value. A
 * GEMMA_CUDA_* variable that is not one of the switches is refused too. */
int cuda_switches_from_env(cuda_switches *sw, char *err, size_t errlen);

#endif
