/* backend_cuda_internal.h: what backend_cuda.c shares with the other C files of the CUDA
 * backend. backend_cuda.c owns the state (stream, weight table, counters; the table's code is
 * backend_cuda_weights.c); a file that adds ops (backend_cuda_draft.c: the drafter's head and
 * the device-id embed) reaches it only through these calls, and backend_cuda.c puts the ops
 * into the table. */
#ifndef BACKEND_CUDA_INTERNAL_H
#define BACKEND_CUDA_INTERNAL_H

#include <cuda_runtime_api.h>

#include "backend.h"
#include "util.h"

/* A CUDA runtime call that must succeed: otherwise die naming the call and the error. */
#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) die("CUDA: %s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

/* backend_cuda_weights.c: the weight table. */
typedef struct {
    const void *host; /* key: the tensor's host data; NULL = empty slot */
    int transposed;   /* and the layout: 1 = stored [cols][rows] (cuda_weight_t) */
    void *dev;
    size_t bytes;
} cuda_weight_slot;

typedef struct {
    cuda_weight_slot *slots; /* cap slots (a power of two), n of them used */
    size_t cap, n;
    size_t bytes; /* bytes of weights on the device */
} cuda_weights;

/* The device copy of w's data (transposed: stored [cols][rows], 16-bit dtypes only), copied on
 * s and waited for the first time it is asked for. capturing: a copy now would be recorded into
 * a CUDA graph - a programming error, fatal. A tensor at the address of one seen before with
 * another size means that one's host memory was reused: its copy is replaced, after drop(ctx)
 * lets the caller forget what may hold the old address. */
const void *cuda_weights_get(cuda_weights *cw, cudaStream_t s, const tensor *w, int transposed,
                             int capturing, void (*drop)(void *), void *ctx);
void cuda_weights_free(cuda_weights *cw);

/* Kernel families of the profile table, for cuda_op_end. */
extern const int cuda_family_embed, cuda_family_draft_head;

/* The device copy of w's data, made (and waited for) on first use, which must not be inside a
 * captured step. Runs what fusion has held back first. */
const void *cuda_weight(backend *b, const tensor *w);
/* The same stored transposed ([cols][rows]; 16-bit dtypes): mlp.cu's down. */
const void *cuda_weight_t(backend *b, const tensor *w);
/* Whether MLPs go to a whole-MLP kernel where it takes them (GEMMA_CUDA_MLP): 0, K_MLP_CORES
 * (mlp.cu, the default) or K_MLP_MMA (mlp_mma.cu). */
int cuda_mlp_on(backend *b);
/* Count an MLP issued as one whole-MLP kernel (backend_cuda_counters mlp_ops). */
void cuda_mlp_count(backend *b);
/* mlp.cu's partial sums: a device buffer of at least `floats` (grown outside captures only). */
float *cuda_mlp_scratch(backend *b, size_t floats);
/* Start an op: runs what fusion has held back, starts the op's timer when profiling; returns
 * the stream to launch on. */
cudaStream_t cuda_op_begin(backend *b);
/* End an op of `family` that moved `bytes` (counted, and timed when profiling). */
void cuda_op_end(backend *b, int family, double bytes);

/* backend_cuda_draft.c: backend.h's draft_head and embed_dev. */
void cuda_draft_head(backend *b, int *id, int *work, float *logits, const float *cscores,
                     int n_centroids, int top_k, const tensor *head, const int *ordering,
                     const float *x);
void cuda_embed_dev(backend *b, float *out, const tensor *table, const int *ids, int n, float s);

#endif
