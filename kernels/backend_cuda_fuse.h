/* backend_cuda_fuse.h: the CUDA backend's op queue (backend_cuda_fuse.c), which fuses
 * neighbouring ops of the forward pass into fewer kernels, and the few things it needs from
 * backend_cuda.c beyond backend_cuda_internal.h. */
#ifndef BACKEND_CUDA_FUSE_H
#define BACKEND_CUDA_FUSE_H

#include "backend.h"

typedef struct cuda_fuser cuda_fuser;

/* backend_cuda_fuse.c */
/* fuse 0: every op runs at once and alone. fuse_mm: grouping of matrix products (1 below in
 * backend_cuda_fuse.c) - CUDA_FUSE_MM_OFF, CUDA_FUSE_MM_ON (the default), CUDA_FUSE_MM_AUTO
 * (every matrix; gate and up paired only for matrices of at most CUDA_FUSE_MM_AUTO_BYTES), or
 * CUDA_FUSE_MM_NOPAIR (every matrix, but gate and up stay two plain matrices of the launch and
 * gelu_mul its own kernel). */
enum { CUDA_FUSE_MM_OFF = 0, CUDA_FUSE_MM_ON = 1, CUDA_FUSE_MM_AUTO = 2, CUDA_FUSE_MM_NOPAIR = 3 };
#define CUDA_FUSE_MM_AUTO_BYTES ((size_t)1 << 20)
cuda_fuser *cuda_fuser_new(int fuse, int fuse_mm);
void cuda_fuser_free(cuda_fuser *f);
/* Run every queued op. backend_cuda.c calls it before any op that is not queued, before
 * downloads, argmax, step_begin / step_end and the counters. Re-entrant: the queue is emptied
 * before its ops run. */
void cuda_fuse_flush(backend *b);
/* Fill the queued ops into the table: matmul, rmsnorm, rope, kv_write, gelu_mul, add. */
void cuda_fuse_install(backend *b);

/* backend_cuda.c, for the queue */
cuda_fuser *cuda_fuser_of(backend *b);
/* Position arguments of a kernel (kernels.h): the host value when eager, the device word
 * plus an offset while a step is being captured. */
const int *cuda_pos(backend *b, int pos0, int *pos_arg);
/* Would matmul(w, n) run our matrix-vector kernel (rather than cuBLAS)? */
int cuda_matmul_own(backend *b, const tensor *w, int n);
/* One matrix product, launched now (our kernel or cuBLAS), counted and timed. */
void cuda_matmul_now(backend *b, float *out, const tensor *w, const float *x, int n);
/* Kernel families of the profile table, for cuda_op_end. */
extern const int cuda_family_matvec, cuda_family_rmsnorm, cuda_family_rope, cuda_family_kv_write,
    cuda_family_gelu_mul, cuda_family_add, cuda_family_norm_rope_kv;

#endif
