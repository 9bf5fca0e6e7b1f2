/* ppl.c: teacher-forced perplexity (see ppl.h).
 *
 * One record is one sequence: context then targets. The context minus its last token is
 * prefilled without logits; from the last context token on, the sequence runs in chunks of
 * h->rows positions whose scores the head writes into one [rows][cols] host buffer (the full
 * head: the logits, at most PPL_LOGITS_BYTES; a keepset head: its kept columns), and each row
 * is turned into the NLL of the token that follows it. The rows of a chunk are independent, so
 * their log-softmaxes run in parallel. One loop serves every head. */
#include "ppl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The first token id of the record outside [0, vocab) into *bad; 0 when there is none. The
 * last target is scored but never fed, so the decoder's own check would not see it. */
static int record_bad_token(const ppl_record *r, int vocab, int *bad) {
    for (int i = 0; i < r->n_context + r->n_target; i++) {
        int t = i < r->n_context ? r->context[i] : r->target[i - r->n_context];
        if (t < 0 || t >= vocab) {
            *bad = t;
            return 1;
        }
    }
    return 0;
}

/* Score one record through the head, adding to *out. seq holds room for the record's
 * ppl_record_len tokens, scores for [h->rows][h->cols]. Returns 0 or -1 with err. */
static int record_score(decoder *d, const ppl_head *h, const ppl_set *pp, const ppl_record *r,
                        int *seq, float *scores, ppl_total *out, char *err, size_t errlen) {
    int n_ctx = r->n_context, len = ppl_record_len(r), bad, rc = 0;
    if (record_bad_token(r, h->vocab, &bad)) {
        snprintf(err, errlen, "%s:%d: token id %d is outside the model's vocabulary (0..%d)",
                 pp->path, r->line, bad, h->vocab - 1);
        return -1;
    }
    memcpy(seq, r->context, (size_t)n_ctx * sizeof *seq);
    if (r->n_target > 1) memcpy(seq + n_ctx, r->target, (size_t)(r->n_target - 1) * sizeof *seq);

    decoder_begin(d, len);
    if (n_ctx > 1) rc = decoder_forward(d, seq, n_ctx - 1, NULL, 0);
    for (int start = n_ctx - 1; start < len && rc == 0; start += h->rows) {
        int m = len - start < h->rows ? len - start : h->rows;
        rc = h->score(h->ctx, d, seq + start, m, scores);
        if (rc) break;
        /* Row i holds the scores of position start + i, which predict target
         * start + i + 1 - n_ctx. */
        double nll = 0;
        long nonfinite = 0;
#pragma omp parallel for reduction(+ : nll, nonfinite) schedule(static)
        for (int i = 0; i < m; i++) {
            int target = r->target[start + i + 1 - n_ctx];
            int col = h->index ? h->index[target] : target;
            double v = col < 0 ? INFINITY : logits_nll(scores + (size_t)i * h->cols, h->cols, col);
            if (isfinite(v))
                nll += v;
            else
                nonfinite++;
        }
        out->nll += nll;
        out->nonfinite += nonfinite;
        out->tokens += m;
    }
    if (rc == -2) {
        snprintf(err, errlen, "%s:%d: the record holds a token id the model cannot embed", pp->path,
                 r->line);
        return -1;
    }
    if (rc) {
        snprintf(err, errlen, "%s:%d: record of %d tokens does not fit the decoder's cache",
                 pp->path, r->line, len);
        return -1;
    }
    out->records++;
    return 0;
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

int ppl_score_head(decoder *d, const ppl_head *h, int max_len, const ppl_set *pp, ppl_total *out,
                   char *err, size_t errlen) {
    *out = (ppl_total){0};
    if (ppl_check_lengths(pp, max_len, err, errlen)) return -1;
    int longest = ppl_set_longest(pp);
    int *seq = xmalloc((size_t)(longest > 0 ? longest : 1) * sizeof *seq);
    float *scores = xmalloc((size_t)h->rows * (size_t)h->cols * sizeof *scores);
    int rc = 0;
    for (int i = 0; i < pp->n && rc == 0; i++)
        rc = record_score(d, h, pp, &pp->items[i], seq, scores, out, err, errlen);
    free(seq);
    free(scores);
    return rc;
}

/* The full head: the decoder's own logits, straight into host memory. */
static int full_head_score(void *ctx, decoder *d, const int *tokens, int m, float *scores) {
    (void)ctx;
    return decoder_forward(d, tokens, m, scores, 0);
}

int ppl_score(decoder *d, int vocab, int max_len, const ppl_set *pp, int rows, ppl_total *out,
              char *err, size_t errlen) {
    if (rows <= 0) {
        rows = (int)(PPL_LOGITS_BYTES / ((size_t)vocab * sizeof(float)));
        if (rows > PPL_MAX_ROWS) rows = PPL_MAX_ROWS;
        if (rows < 1) rows = 1;
    }
    ppl_head h = {.vocab = vocab, .cols = vocab, .rows = rows, .score = full_head_score};
    return ppl_score_head(d, &h, max_len, pp, out, err, errlen);
}
