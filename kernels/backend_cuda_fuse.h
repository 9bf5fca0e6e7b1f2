/* backend_cuda_fuse.h: the CUDA backend's op queue (backend_cuda_fuse.c), which fuses
 * neighbouring ops of the forward pass into fewer kernels. */
#ifndef BACKEND_CUDA_FUSE_H
#define BACKEND_CUDA_FUSE_H

#include "backend.h"

typedef struct cuda_fuser cuda_fuser;

/* fuse 0: every op runs at once and alone. */
cuda_fuser *cuda_fuser_new(int fuse);
void cuda_fuser_free(cuda_fuser *f);
/* Run every queued op. backend_cuda.c calls it before any op that is not queued, before
 * downloads, argmax, step_begin / step_end and the counters. Re-entrant: the queue is emptied
 * before its ops run. */
void cuda_fuse_flush(backend *b);
/* Fill the queued ops into the table: matmul, rmsnorm, rope, kv_write, gelu_mul, add. */
void cuda_fuse_install(backend *b);

#endif
