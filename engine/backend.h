/* backend.h: the small set of operations the forward pass is written in.
 *
 * forward.c describes the Gemma 4 computation once, as calls on a backend; a backend
 * implements the calls for one kind of hardware. backend_cpu.c is the reference one
 * (OpenMP over output rows / heads); the CUDA backend (kernels/) fills the same table with
 * kernels and cuBLAS, and forward.c does not change.
 *
 * Rules every backend follows:
 *   - Activations are fp32 buffers the backend allocated (b->alloc); on a GPU they live in
 *     device memory. The forward pass only ever passes such buffers (plus offsets into them)
 *     to the ops, and moves data to or from the host only through upload / download.
 *   - Weights are `tensor`s (model.h) in their file dtype; the backend reads them as they
 *     are (bf16 / f16 converted to fp32 inside the inner loop, fp32 accumulation). A linear
 *     layer may come as DT_Q8 / DT_Q4 (WEIGHT_DTYPE, HEAD_DTYPE: a quant.h matrix); the CPU
 *     backend multiplies those with quant_matmul, the CUDA backend with matvec_q.cu (input
 *     features a multiple of 128: decoder_new refuses a model whose layers are not).
 *   - A batch of n rows is always n consecutive positions of the one stream (prefill,
 *     teacher forcing, speculative verify); row t of a [n][dim] buffer starts at t * dim.
 *   - Ops may run asynchronously on a GPU; download and argmax synchronise.
 *
 * The KV cache of a layer is a [len][kv_dim] buffer used as a ring: position p lives in
 * row p % len. Full-attention layers get len = max_model_len (so the ring never wraps);
 * sliding layers get a ring just big enough for their window plus one chunk of new rows
 * (see decoder.c). */
#ifndef BACKEND_H
#define BACKEND_H

#include <stddef.h>

#include "model.h"

/* The most rows one speculative verify pass hands the backend at once: up to 16 drafts and the
 * served token before them (NUM_SPECULATIVE_TOKENS is bounded by it: speculate.h SPEC_MAX_K). A
 * backend may tune its kernels for matmuls of at most this many rows and treat larger ones as
 * prefill chunks. */
#define BACKEND_VERIFY_ROWS 17

typedef struct backend backend;

struct backend {
    const char *name; /* "cpu", "cuda" */
    void *impl;       /* the backend's own state */

    /* Buffers: n fp32 values, zero-filled. */
    float *(*alloc)(backend *b, size_t n);
    void (*release)(backend *b, float *p);
    void (*upload)(backend *b, float *dst, const float *host_src, size_t n);
    void (*download)(backend *b, float *host_dst, const float *src, size_t n);
    void (*copy)(backend *b, float *dst, const float *src, size_t n);

    /* out[t][r] = sum_c w[r][c] * x[t][c] for t < n, r < w->rows, c < w->cols: a matvec when
     * n == 1, otherwise a small matmul that reads each weight row once for all n rows. */
    void (*matmul)(backend *b, float *out, const tensor *w, const float *x, int n);

    /* For each of n_vec vectors of dim values: out = x / sqrt(mean(x^2) + eps), times w
     * when w is non-NULL (Gemma 4's RMSNorm multiplies by w itself, not 1 + w). out may
     * equal x. */
    void (*rmsnorm)(backend *b, float *out, const float *x, const tensor *w, int n_vec, int dim,
                    float eps);

    /* Rotary embedding, "rotate half" layout, in place on x[n_tok][n_heads][head_dim]: row
     * t is at position pos0 + t, and pair (i, i + head_dim/2) rotates by angle
     * (pos0 + t) * inv_freq[i] for i < head_dim/2. inv_freq is a backend buffer of
     * head_dim/2 values; zero entries (proportional RoPE's unrotated part) leave the pair
     * unchanged. */
    void (*rope)(backend *b, float *x, int n_tok, int n_heads, int head_dim, int pos0,
                 const float *inv_freq);

    /* Store rows src[n_tok][kv_dim] of positions pos0.. into the ring cache[len][kv_dim]. */
    void (*kv_write)(backend *b, float *cache, const float *src, int n_tok, int kv_dim, int pos0,
                     int len);

    /* Causal attention with scale 1 (Gemma 4 normalises q and k instead):
     * q[n_tok][n_heads][head_dim], row t at position p = pos0 + t, attends to the positions
     * max(0, p - window + 1) .. p (all of 0 .. p when window == 0) held in the rings
     * kc / vc [len][n_kv_heads][head_dim]; query head h reads kv head
     * h / (n_heads / n_kv_heads). Softmax in fp32. out[n_tok][n_heads][head_dim]. */
    void (*attention)(backend *b, float *out, const float *q, const float *kc, const float *vc,
                      int n_tok, int pos0, int len, int window, int n_heads, int n_kv_heads,
                      int head_dim);

    /* out[r][j] = gelu_tanh(gate[r][j]) * up[r * up_stride + j] for r < rows, j < dim
     * (gelu_pytorch_tanh). out may equal gate. */
    void (*gelu_mul)(backend *b, float *out, const float *gate, const float *up, int rows, int dim,
                     int up_stride);

    void (*add)(backend *b, float *out, const float *x, const float *y, size_t n); /* x + y */
    void (*scale)(backend *b, float *x, float s, size_t n);                        /* x *= s */

    /* out[t][:] = table[ids[t]][:] * s for t < n (ids is a host array, checked by the
     * caller to lie inside the table). */
    void (*embed)(backend *b, float *out, const tensor *table, const int *ids, int n, float s);

    /* x = cap * tanh(x / cap) */
    void (*softcap)(backend *b, float *x, size_t n, float cap);

    /* Index of the largest of x[0..n) (the first on ties, as torch.argmax); synchronises. */
    int (*argmax)(backend *b, const float *x, int n);

    /* Optional (NULL on the CPU backend): whole-step recording. forward.c calls step_begin
     * before the ops of a chunk of n tokens at position pos; key names everything else that
     * decides which ops the chunk runs. A return of 1 means the backend has replayed a
     * recorded step with these tokens at this position, and the ops must not be issued; 0
     * means issue them, then call step_end. The CUDA backend records single-token steps as
     * CUDA graphs (kernels/backend_cuda.c). */
    int (*step_begin)(backend *b, const int *tokens, int n, int pos, int key);
    void (*step_end)(backend *b);

    /* Optional (NULL: nothing to gain): the sequence starting now attends to at most this many
     * positions (0: no bound but the caches'). Called between sequences (decoder_begin), never
     * inside a step. A backend may then pick kernels suited to that length; it must stay
     * correct past it (only slower), and every op of the sequence must see the same choice, so
     * that a speculative verify still reproduces the decode steps bit for bit: a backend that
     * records steps keys them by every choice the horizon makes. The CUDA backend runs
     * full-attention layers of a long cache as one cluster kernel when the sequence is short
     * (kernels/attention.cu k_attention_splits; graphs keyed by k_attention_horizon_class). */
    void (*set_horizon)(backend *b, int positions);

    /* Optional (NULL: callers run matmul, softcap and argmax): the fused greedy head. For each
     * of n input rows x[t], the row r of w maximising cap * tanh((w[r] . x[t]) / cap) (the plain
     * dot when cap is 0), the first on ties, into out[t] (a host array); the caller's buffers
     * are not written (the CPU backend never stores the scores, the CUDA backend keeps them in
     * a scratch and synchronises once for all n rows). Every score equals what matmul +
     * softcap would have written, so the choice is argmax's over them. Synchronises. */
    void (*matmul_argmax)(backend *b, int *out, const tensor *w, const float *x, int n, float cap);

    /* Optional (NULL on the CPU backend, where assistant.c runs the head as matmuls and picks on
     * the host): the MTP drafter's centroid-masked greedy head (assistant.h) on the device.
     * cscores[n_centroids] are the centroid scores (a backend buffer); the top_k clusters are
     * picked (descending, ties to the lower index), logits[j * per + t] gets the logit of the
     * t-th token of the j-th of them (row c_j * per + t of head, the lm_head rows in cluster
     * order, per = head->rows / n_centroids) against x[head->cols], and *id the token
     * ordering[c_j * per + t] with the highest logit (the smaller id on ties). id and work are
     * int words in backend buffers (work: top_k + 4 words of scratch); ordering is a host array
     * of head->rows ids, copied to the device once. Does not synchronise: the id stays on the
     * device for embed_dev, so a chain of draft steps needs no host round trip. */
    void (*draft_head)(backend *b, int *id, int *work, float *logits, const float *cscores,
                       int n_centroids, int top_k, const tensor *head, const int *ordering,
                       const float *x);

    /* Optional (NULL on the CPU backend): embed as above, but ids[n] are int words in a backend
     * buffer (e.g. what draft_head wrote); they must lie inside the table. */
    void (*embed_dev)(backend *b, float *out, const tensor *table, const int *ids, int n, float s);

    void (*destroy)(backend *b);
};

/* The CPU backend; n_threads 0 = OpenMP's default. */
backend *backend_cpu_new(int n_threads);

/* The CUDA backend (kernels/backend_cuda.c, in engines built with CUDA): NULL with a message
 * in err when no CUDA device is usable. */
backend *backend_cuda_new(char *err, size_t errlen);

#endif
