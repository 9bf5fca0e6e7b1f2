/* ppl.h: teacher-forced perplexity through a configured decoder.
 *
 * A record {context, target} is scored as the challenge's harness scores it: the targets follow
 * the context in one sequence, and each target token's negative log-likelihood is taken from the
 * logits of the position before it, given everything before it. ppl = exp(total NLL / total
 * target tokens) over the whole record set (not a mean of per-record perplexities).
 *
 * The same decoder and head (same window, same weights, same keepset) serve decoding, so the
 * figure describes exactly the configuration that was timed. */
#ifndef PPL_H
#define PPL_H

#include <stddef.h>

#include "dataset.h"
#include "engine.h"

/* Upper bound of the logits buffer: 64 rows of a 262144-token vocabulary. */
#define PPL_LOGITS_BYTES ((size_t)64 << 20)
#define PPL_MAX_ROWS     64

typedef struct {
    double nll;     /* total negative log-likelihood in nats over the finite targets */
    long tokens;    /* target tokens scored */
    long nonfinite; /* targets whose log-probability was -inf or NaN (ppl is then infinite) */
    int records;    /* records scored */
} ppl_total;

/* -log softmax(logits)[target] over vocab entries, computed stably (max subtracted, sum in
 * double). +inf when the target's logit is -inf (or every logit is); NaN when a logit is NaN. */
double logits_nll(const float *logits, int vocab, int target);

/* Where the scores of a chunk of positions come from: the full lm_head (ppl_score) or a keepset
 * head (head.c). score() feeds the next m <= rows tokens to the decoder and writes their
 * [m][cols] scores to host memory `scores`; it returns decoder_forward's code (0; -1: the
 * cache is full; -2: a token the model cannot embed). */
typedef struct {
    int vocab;        /* the model's vocabulary: every token id must lie in [0, vocab) */
    int cols;         /* scores per position */
    const int *index; /* [vocab] column of a target id, -1 when the head has none (probability
                         zero); NULL: the column is the id itself */
    int rows;         /* most positions per score() call */
    int (*score)(void *ctx, decoder *d, const int *tokens, int m, float *scores);
    void *ctx;
} ppl_head;

/* Score every record of pp through d (reset before each record) and the head h. max_len is the
 * decoder's capacity: a record of more than max_len + 1 tokens, or one holding a token id
 * outside the vocabulary, is an error naming the file and line. Returns 0, or -1 with err. */
int ppl_score_head(decoder *d, const ppl_head *h, int max_len, const ppl_set *pp, ppl_total *out,
                   char *err, size_t errlen);

/* ppl_score_head over the full lm_head. Logits are computed in chunks of `rows` positions
 * (0 = as many as fit PPL_LOGITS_BYTES) so memory stays bounded whatever the record length. */
int ppl_score(decoder *d, int vocab, int max_len, const ppl_set *pp, int rows, ppl_total *out,
              char *err, size_t errlen);

/* Every record fits max_len positions? Returns 0, or -1 with err naming the file and line of the
 * first that does not (ppl_score checks this too; callers check early, before timed work). */
int ppl_check_lengths(const ppl_set *pp, int max_len, char *err, size_t errlen);

/* Longest sequence a record needs in the cache: context + target - 1 (the last target is
 * scored, never fed). */
int ppl_record_len(const ppl_record *r);
/* The largest ppl_record_len over the set (0 when it is empty). */
int ppl_set_longest(const ppl_set *pp);

/* exp(nll / tokens), or +inf when any target was non-finite or the total overflows. */
double ppl_value(const ppl_total *t);

#endif
