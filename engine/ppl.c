/* ppl.c: teacher-forced perplexity (see ppl.h).
 *
 * One record is one sequence: context then targets. The context minus its last token is
 * prefilled without logits; from the last context token on, the sequence runs in chunks of
 * `rows` positions whose logits land in one [rows][vocab] buffer (at most PPL_LOGITS_BYTES), and
 * each row is turned into the NLL of the token that follows it. The rows of a chunk are
 * independent, so their log-softmaxes run in parallel. */
#include "ppl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

double logits_nll(const float *logits, int vocab, int target) {
    float x = logits[target];
    if (isnan(x)) return NAN;
    if (x == -INFINITY) return INFINITY;
    float mx = -INFINITY;
    for (int i = 0; i < vocab; i++)
        if (logits[i] > mx) mx = logits[i];
    if (isinf(mx)) return NAN; /* a +inf logit: the softmax is undefined */
    double sum = 0;
    for (int i = 0; i < vocab; i++)
        sum += expf(logits[i] - mx);
    return (double)mx + log(sum) - (double)x; /* NaN when any logit was NaN */
}

int ppl_record_len(const ppl_record *r) {
    return r->n_context + r->n_target - 1;
}

int ppl_set_longest(const ppl_set *pp) {
    int longest = 0;
    for (int i = 0; i < pp->n; i++)
        if (ppl_record_len(&pp->items[i]) > longest) longest = ppl_record_len(&pp->items[i]);
    return longest;
}

double ppl_value(const ppl_total *t) {
    if (t->nonfinite > 0 || t->tokens == 0) return INFINITY;
    return exp(t->nll / (double)t->tokens);
}

/* Score one record, adding to *out. Returns 0 or -1 with err. */
static int record_score(decoder *d, int vocab, const ppl_set *pp, const ppl_record *r, int *seq,
                        float *logits, int rows, ppl_total *out, char *err, size_t errlen) {
    int n_ctx = r->n_context, len = ppl_record_len(r);
    for (int i = 0; i < n_ctx; i++)
        seq[i] = r->context[i];
    for (int i = 0; i + 1 < r->n_target; i++)
        seq[n_ctx + i] = r->target[i];

    decoder_reset(d);
    if (n_ctx > 1 && decoder_forward(d, seq, n_ctx - 1, NULL, 0)) goto full;
    for (int start = n_ctx - 1; start < len; start += rows) {
        int m = len - start < rows ? len - start : rows;
        if (decoder_forward(d, seq + start, m, logits, 0)) goto full;
        /* Row i holds the logits of position start + i, which predict target
         * start + i + 1 - n_ctx. */
        double nll = 0;
        long bad = 0;
#pragma omp parallel for reduction(+ : nll, bad) schedule(static)
        for (int i = 0; i < m; i++) {
            double v =
                logits_nll(logits + (size_t)i * vocab, vocab, r->target[start + i + 1 - n_ctx]);
            if (isfinite(v))
                nll += v;
            else
                bad++;
        }
        out->nll += nll;
        out->nonfinite += bad;
        out->tokens += m;
    }
    out->records++;
    return 0;
full:
    snprintf(err, errlen, "%s:%d: record of %d tokens does not fit the decoder's cache", pp->path,
             r->line, len);
    return -1;
}

int ppl_check_lengths(const ppl_set *pp, int max_len, char *err, size_t errlen) {
    for (int i = 0; i < pp->n; i++) {
        const ppl_record *r = &pp->items[i];
        int len = ppl_record_len(r);
        if (len > max_len) {
            snprintf(err, errlen,
                     "%s:%d: record needs %d positions (context %d + targets %d - 1), more than "
                     "MAX_MODEL_LEN = %d",
                     pp->path, r->line, len, r->n_context, r->n_target, max_len);
            return -1;
        }
    }
    return 0;
}

int ppl_score(decoder *d, int vocab, int max_len, const ppl_set *pp, int rows, ppl_total *out,
              char *err, size_t errlen) {
    *out = (ppl_total){0};
    if (ppl_check_lengths(pp, max_len, err, errlen)) return -1;
    int longest = ppl_set_longest(pp);
    size_t row_bytes = (size_t)vocab * sizeof(float);
    if (rows <= 0) {
        rows = (int)(PPL_LOGITS_BYTES / row_bytes);
        if (rows > PPL_MAX_ROWS) rows = PPL_MAX_ROWS;
        if (rows < 1) rows = 1;
    }
    int *seq = xmalloc((size_t)longest * sizeof *seq);
    float *logits = xmalloc((size_t)rows * row_bytes);
    int rc = 0;
    for (int i = 0; i < pp->n && rc == 0; i++)
        rc = record_score(d, vocab, pp, &pp->items[i], seq, logits, rows, out, err, errlen);
    free(seq);
    free(logits);
    return rc;
}
