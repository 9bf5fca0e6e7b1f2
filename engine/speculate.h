/* speculate.h: the serving loop - greedy generation, speculative when a drafter proposes
 * (NUM_SPECULATIVE_TOKENS = k). Every token the engine serves (bench, generate) comes out of it.
 *
 * Prefill: the prompt runs through the target, and the head's greedy choice after it is the
 * first token x. Then one step, with the target's cache holding positions 0..P-1 and the newest
 * token x (already served) at position P:
 *   draft    the proposer (the MTP drafter) guesses k tokens d1..dk after x;
 *   verify   one target pass over [x, d1..dk] at positions P..P+k gives the greedy token g_i
 *            after each prefix (head_forward_argmax over its k+1 rows);
 *   accept   m = how many leading drafts equal the target's own choice (d_{i+1} == g_i);
 *            d1..dm and the bonus token g_m are served, so every step serves m + 1 tokens;
 *   rollback the cache is cut back to P + m + 1 positions (decoder_truncate): the rejected
 *            drafts' KV is dropped, and g_m becomes the new x.
 * With k = 0 there is no drafter and each step verifies [x] alone: one plain greedy decode step
 * (with the full head, the decoder's own fused step: head.h).
 *
 * Every served token is the target's greedy choice given the served tokens before it, so the
 * output for any k equals plain greedy decoding. Bit for bit, too: the CPU backend computes a row
 * of a few-row matmul with the same kernel as a single row (backend_cpu.c), and the CUDA
 * backend's row results do not depend on how many rows share a launch (matvec.cu's split depends
 * on the shapes of the matrices launched together, which the op queue groups alike for a verify
 * chunk and a decode step; attention.cu's on the ring), so a verify row is the decode step it
 * replaces (checked on the GPU by tests/kernels/cuda_ops draft and scripts/test_gpu.sh step 5).
 *
 * Stats: the accepted-length histogram and the time in draft and verify (the caller times the
 * whole; the rest is prefill, rollback and bookkeeping). */
#ifndef SPECULATE_H
#define SPECULATE_H

#include <stddef.h>
#include <stdint.h>

#include "assistant.h"
#include "backend.h"
#include "engine.h"
#include "head.h"

/* The most drafts per step: a verify pass runs the drafts and the token before them. */
#define SPEC_MAX_K (BACKEND_VERIFY_ROWS - 1)

/* The result's output_hash: FNV-1a of every served token id's four bytes, folded into h from
 * OUTPUT_HASH_SEED, so runs that serve equal text hash equally whatever k, head or device. */
#define OUTPUT_HASH_SEED 0xcbf29ce484222325ULL
uint64_t output_hash_token(uint64_t h, int id);

typedef struct {
    long steps;                /* verify passes */
    long drafted;              /* draft tokens proposed */
    long accepted;             /* draft tokens accepted */
    long served;               /* tokens served by the steps (accepted + bonus) */
    long hist[SPEC_MAX_K + 1]; /* hist[m]: steps that accepted m drafts */
    double draft_s;            /* in the proposer */
    double verify_s;           /* in the target's verify pass and its head */
} spec_stats;

/* What proposes the drafts: the MTP drafter, or (tests) anything else. Called right after a
 * target forward whose row `row` (of its last chunk) produced x; pos is x's position. Writes
 * up to k tokens into out and returns how many. */
typedef int (*spec_propose_fn)(void *ctx, int row, int x, int pos, int k, int *out);

/* Called once per served token, in order (e.g. to print a continuation as it grows). */
typedef void (*spec_served_fn)(void *ctx, int id);

typedef struct {
    decoder *d;
    head *h;
    int k;                   /* NUM_SPECULATIVE_TOKENS (0 = plain greedy) */
    spec_propose_fn propose; /* NULL with k = 0 */
    void *propose_ctx;
    spec_served_fn served; /* optional; speculator_init leaves it NULL */
    void *served_ctx;
    spec_stats stats;
} speculator;

/* A speculator over decoder d with head h; with dr non-NULL the drafter proposes (k >= 1). */
void speculator_init(speculator *s, decoder *d, head *h, drafter *dr, int k);

/* Reset the cache, prefill prompt[0..n), and serve up to max_new greedy tokens into out (may be
 * NULL), stopping before stop_id (-1: never; bench ignores EOS). *first_at (may be NULL) gets
 * now_seconds() once the first token is known; hash (may be NULL) folds every served token in
 * (output_hash_token). Returns the tokens served, or -1 when the cache would overflow.
 */
int spec_generate(speculator *s, const int *prompt, int n, int max_new, int stop_id, int *out,
                  double *first_at, uint64_t *hash);

/* Mean accepted drafts per verify pass (the result's accept_len; tokens served per pass are one
 * more). */
double spec_mean_accept(const spec_stats *st);

#endif
