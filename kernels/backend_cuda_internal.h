/* backend_cuda_internal.h: what backend_cuda.c shares with the other C files of the CUDA
 * backend. backend_cuda.c owns the state (stream, weight table, counters); a file that adds
 * ops (backend_cuda_draft.c: the drafter's head and the device-id embed) reaches it only
 * through these calls, and backend_cuda.c puts the ops into the table. */
#ifndef BACKEND_CUDA_INTERNAL_H
#define BACKEND_CUDA_INTERNAL_H

#include <cuda_runtime_api.h>

#include "backend.h"

/* Kernel families of the profile table, for cuda_op_end. */
extern const int cuda_family_embed, cuda_family_draft_head;

/* The device copy of w's data, made on first use (which must not be inside a captured step).
 * Runs what fusion has held back first. */
const void *cuda_weight(backend *b, const tensor *w);
/* Start an op: runs what fusion has held back, starts the op's timer when profiling; returns
 * the stream to launch on. */
cudaStream_t cuda_op_begin(backend *b);
/* End an op of `family` that moved `bytes` (counted, and timed when profiling). */
void cuda_op_end(backend *b, int family, double bytes);

/* backend_cuda_l2.c: L2 prefetch hints for the products of a decode step (NULL when the budget
 * is 0, and every call then does nothing). cuda_l2_step at every step_begin; cuda_l2_launch
 * right before each own-kernel product launch over the weights w[0 .. nw) (bytes each) with n
 * inputs: it sets that launch's hints (k_matvec_set_l2_prefetch). */
typedef struct cuda_l2 cuda_l2;
cuda_l2 *cuda_l2_new(size_t budget_bytes);
void cuda_l2_free(cuda_l2 *l);
void cuda_l2_step(cuda_l2 *l);
void cuda_l2_launch(cuda_l2 *l, const void *const *w, const size_t *bytes, int nw, int n);
/* The backend's (backend_cuda.c), for the product launches of backend_cuda_fuse.c. */
cuda_l2 *cuda_l2_of(backend *b);

/* backend_cuda_draft.c: backend.h's draft_head and embed_dev. */
void cuda_draft_head(backend *b, int *id, int *work, float *logits, const float *cscores,
                     int n_centroids, int top_k, const tensor *head, const int *ordering,
                     const float *x);
void cuda_embed_dev(backend *b, float *out, const tensor *table, const int *ids, int n, float s);

#endif
