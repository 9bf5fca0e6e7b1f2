/* bench.h: the bench protocol, as the challenge's harness measures a server (DESIGN.md 5).
 *
 * WARMUP_NUM_PROMPTS prompts run first, outside the timed window (taken from the start of the
 * set, cycling when the set is shorter). Then, timed, every prompt of the set in order: reset the
 * cache, prefill the prompt, and greedily decode MAX_NEW_TOKENS new tokens, end-of-sequence
 * ignored. tps = completion tokens / wall time of the whole timed set, so prefill and every
 * per-prompt overhead count; decode-only and prefill-only figures are kept beside it. */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "engine.h"
#include "tokenizer.h"

typedef struct {
    int prompts;        /* timed prompts */
    long prompt_tokens; /* prompt tokens prefilled in the timed set */
    long tokens;        /* completion tokens of the timed set (prompts * MAX_NEW_TOKENS) */
    double wall_s;      /* the timed window: every prompt, prefill + decode + overhead */
    double prefill_s;   /* sum over prompts: reset + prefill + the first token's argmax */
    double decode_s;    /* sum over prompts: the MAX_NEW_TOKENS - 1 single-token steps */
    double warmup_s;    /* the untimed warm-up */
    uint64_t out_hash;  /* FNV-1a over every generated id: equal runs generate equal text */
} bench_result;

/* Encode a prompt's text with one BOS in front (when the tokenizer has one; a text that already
 * starts with the BOS token does not get a second). Returns the count (*ids malloc'd), or -1
 * when the text is not valid UTF-8. */
int prompt_encode(const tokenizer *t, const char *text, int **ids);

/* Tokenize the prompts that came as text only (a BOS in front when the tokenizer has one).
 * Returns 0, or -1 with err naming the file and line. */
int bench_tokenize(prompt_set *ps, const tokenizer *t, char *err, size_t errlen);

/* Check that every prompt fits: at most max_len - max_new_tokens tokens. Returns 0, or -1 with
 * err naming the file, the line and the prompt's id. */
int bench_check_lengths(const prompt_set *ps, int max_len, int max_new_tokens, char *err,
                        size_t errlen);

/* FNV-1a of a token id's four bytes folded into h (start from BENCH_HASH_SEED): the output_hash
 * of every path that serves tokens (bench_greedy, speculate.c), so equal text hashes equally. */
#define BENCH_HASH_SEED 0xcbf29ce484222325ULL
uint64_t bench_hash_token(uint64_t h, int id);

/* Index of the largest of n logits (the first one on ties, as torch.argmax). */
int logits_argmax(const float *logits, int n);

/* One request: reset the cache, prefill prompt[0..n), then greedy-decode max_new tokens (EOS
 * ignored; the last one is never fed back). out (may be NULL) gets the max_new ids, *hash folds
 * them in (FNV-1a), *first_at gets now_seconds() when the first new token is known. logits holds
 * one row of vocab floats. Returns 0, or -1 when the cache would overflow. */
int bench_greedy(decoder *d, int vocab, const int *prompt, int n, int max_new, float *logits,
                 int *out, uint64_t *hash, double *first_at);

/* Run the protocol over ps (tokenized, lengths checked) on d. Returns 0, or -1 with err. */
int bench_run(decoder *d, int vocab, const prompt_set *ps, int warmup_prompts, int max_new_tokens,
              bench_result *r, char *err, size_t errlen);

/* How a request is served, for bench_run_with: as bench_greedy (reset, prefill, max_new greedy
 * tokens folded into *hash, *first_at set when the first is known); 0, or -1 when the cache
 * would overflow. warmed (may be NULL) is called once between the warm-up and the timed set. */
typedef struct {
    int (*serve)(void *ctx, const prompt *p, int max_new, uint64_t *hash, double *first_at);
    void (*warmed)(void *ctx);
    void *ctx;
} bench_server;

/* bench_run's protocol (same loop, timing and messages) with every request served by s. */
int bench_run_with(const bench_server *s, const prompt_set *ps, int warmup_prompts,
                   int max_new_tokens, bench_result *r, char *err, size_t errlen);

#endif
