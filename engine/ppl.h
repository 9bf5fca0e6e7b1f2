/* ppl.h: teacher-forced perplexity through a configured decoder.
 *
 * A record {context, target} is scored as the challenge's harness scores it: the targets follow
 * the context in one sequence, and each target token's negative log-likelihood is taken from the
 * logits of the position before it, given everything before it. ppl = exp(total NLL / total
 * target tokens) over the whole record set (not a mean of per-record perplexities).
 *
 * The same decoder (same window, same weights, later the same keepset) serves decoding, so the
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

/* Score every record of pp through d (reset before each record). max_len is the decoder's
 * capacity: a record of more than max_len + 1 tokens is an error naming the file and line.
 * Logits are computed in chunks of `rows` positions (0 = as many as fit PPL_LOGITS_BYTES) so
 * memory stays bounded whatever the record length. Returns 0, or -1 with err. */
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
