/* bench.h: the bench protocol, as the challenge's harness measures a server (DESIGN.md 5).
 *
 * WARMUP_NUM_PROMPTS prompts run first, outside the timed window (taken from the start of the
 * set, cycling when the set is shorter). Then, timed, every prompt of the set in order: reset the
 * cache, prefill the prompt, and serve MAX_NEW_TOKENS greedy tokens through the serving loop
 * (speculate.h: drafted and verified when NUM_SPECULATIVE_TOKENS > 0), end-of-sequence ignored.
 * tps = completion tokens / wall time of the whole timed set, so prefill and every
 * per-prompt overhead count; decode-only and prefill-only figures are kept beside it. */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "dataset.h"
#include "speculate.h"
#include "tokenizer.h"

typedef struct {
    int prompts;        /* timed prompts */
    long prompt_tokens; /* prompt tokens prefilled in the timed set */
    long tokens;        /* completion tokens of the timed set (prompts * MAX_NEW_TOKENS) */
    double wall_s;      /* the timed window: every prompt, prefill + decode + overhead */
    double prefill_s;   /* sum over prompts: reset + prefill + the first token's argmax */
    double decode_s;    /* sum over prompts: the steps serving the other MAX_NEW_TOKENS - 1 */
    double warmup_s;    /* the untimed warm-up */
    uint64_t out_hash;  /* output_hash_token over every served id of the timed set */
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

/* Run the protocol over ps (tokenized, lengths checked), every request served by s (reset,
 * prefill, MAX_NEW_TOKENS greedy tokens folded into the output hash). s->stats are cleared once
 * the warm-up is done, so they describe the timed set. Returns 0, or -1 with err naming the
 * prompt that does not fit the decoder's cache. */
int bench_run(speculator *s, const prompt_set *ps, int warmup_prompts, int max_new_tokens,
              bench_result *r, char *err, size_t errlen);

#endif
