/* head.c: keepset files and the greedy / perplexity head over them (see head.h). */
#include "head.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoder.h"
#include "util.h"

/* ---------------------------------------------------------------------------------------- */
/* The file                                                                                 */

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int keepset_load(const char *path, int n, int vocab, keepset *ks, char *err, size_t errlen) {
    memset(ks, 0, sizeof *ks);
    size_t len;
    char *text = file_read_all(path, &len, err, errlen);
    if (!text) return -1;
    int *order = xmalloc((size_t)vocab * sizeof(int));
    char *seen = xcalloc((size_t)vocab, 1);
    int count = 0, line = 0, rc = -1;
    for (char *p = text; p < text + len;) {
        char *end = memchr(p, '\n', (size_t)(text + len - p));
        if (!end) end = text + len;
        *end = '\0';
        line++;
        char *s = p;
        p = end + 1;
        size_t l = strlen(s);
        if (l && s[l - 1] == '\r') s[--l] = '\0';
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == '#' || *s == '\0') continue;
        char *stop;
        errno = 0;
        long v = strtol(s, &stop, 10);
        while (*stop == ' ' || *stop == '\t')
            stop++;
        if (stop == s || *stop || errno || (*s != '-' && (*s < '0' || *s > '9'))) {
            snprintf(err, errlen, "%s:%d: not a token id: \"%.40s\"", path, line, s);
            goto done;
        }
        if (v < 0 || v >= vocab) {
            snprintf(err, errlen, "%s:%d: token id %ld is outside the vocabulary (0..%d)", path,
                     line, v, vocab - 1);
            goto done;
        }
        if (seen[v]) {
            snprintf(err, errlen, "%s:%d: token id %ld is listed twice", path, line, v);
            goto done;
        }
        seen[v] = 1;
        order[count++] = (int)v;
    }
    if (n < 1 || n > count) {
        snprintf(err, errlen, "%s: LM_HEAD_KEEPSET=%d: the file lists %d token ids (1..%d allowed)",
                 path, n, count, count);
        goto done;
    }
    ks->n = n;
    ks->vocab = vocab;
    ks->file_count = count;
    ks->ids = xmalloc((size_t)n * sizeof(int));
    memcpy(ks->ids, order, (size_t)n * sizeof(int));
    qsort(ks->ids, (size_t)n, sizeof(int), cmp_int);
    ks->index = xmalloc((size_t)vocab * sizeof(int));
    for (int i = 0; i < vocab; i++)
        ks->index[i] = -1;
    for (int i = 0; i < n; i++)
        ks->index[ks->ids[i]] = i;
    rc = 0;
done:
    free(order);
    free(seen);
    free(text);
    return rc;
}

void keepset_free(keepset *ks) {
    free(ks->ids);
    free(ks->index);
    memset(ks, 0, sizeof *ks);
}

double keepset_coverage(const keepset *ks, const ppl_set *pp, long *outside) {
    long total = 0, out = 0;
    for (int i = 0; i < pp->n; i++)
        for (int j = 0; j < pp->items[i].n_target; j++) {
            total++;
            out += ks->index[pp->items[i].target[j]] < 0;
        }
    if (outside) *outside = out;
    return total ? (double)(total - out) / (double)total : 1.0;
}

/* ---------------------------------------------------------------------------------------- */
/* The head                                                                                 */

struct head {
    decoder *d;
    const keepset *ks;
    tensor rows;     /* the head's rows: lm_head, or the kept rows (compact copy) */
    void *copy;      /* the compact copy's storage */
    float *scores;   /* [DECODER_CHUNK][rows.rows] on the backend (d->logits without keepset) */
    quant_matrix qm; /* HEAD_DTYPE int8 / int4: the rows quantized (rows then points here) */
};

head *head_new(decoder *d, const keepset *ks) {
    head *h = xcalloc(1, sizeof *h);
    const model_config *c = &d->m->config;
    h->d = d;
    h->ks = ks;
    h->rows = d->m->weights.lm_head;
    if (ks) {
        CHECK(ks->vocab == c->vocab);
        const size_t row = (size_t)c->hidden * dtype_size(h->rows.dtype);
        char *copy = xmalloc((size_t)ks->n * row);
        for (int i = 0; i < ks->n; i++)
            memcpy(copy + (size_t)i * row, (const char *)h->rows.data + (size_t)ks->ids[i] * row,
                   row);
        h->copy = copy;
        h->rows.data = copy;
        h->rows.rows = ks->n;
        h->rows.dev = NULL;
        h->scores = d->b->alloc(d->b, (size_t)DECODER_CHUNK * ks->n);
    } else {
        h->scores = d->logits; /* the decoder's own [chunk][vocab] scratch */
    }
    return h;
}

/* HEAD_DTYPE: the head's rows - after the keepset pruning, so only kept rows are quantized -
 * become a quant.h matrix with WEIGHT_GROUP columns per scale. Each row is quantized on its own,
 * so these are exactly the kept rows of the whole head quantized. The full head is the tied
 * embedding in Gemma: it is quantized as a copy, and the embedding gather keeps the table. */
head *head_new_prec(decoder *d, const keepset *ks, quant_dtype dtype, int group, char *err,
                    size_t errlen) {
    head *h = head_new(d, ks);
    if (dtype == QUANT_BF16) return h;
    const tensor *src = &h->rows;
    if (src->cols % group) {
        snprintf(err, errlen,
                 "lm_head [%d, %d]: WEIGHT_GROUP=%d does not divide its %d input columns, so "
                 "HEAD_DTYPE=%s cannot hold it (choose a WEIGHT_GROUP of 32, 64 or 128 that "
                 "divides it, or HEAD_DTYPE=bf16)",
                 src->rows, src->cols, group, src->cols, quant_dtype_name(dtype));
        head_free(h);
        return NULL;
    }
    int rc;
    if (src->dtype == DT_BF16) {
        rc = quant_from_bf16(&h->qm, "lm_head", src->data, src->rows, src->cols, dtype, group, err,
                             errlen);
    } else {
        const size_t n = (size_t)src->rows * (size_t)src->cols;
        float *f = xmalloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            f[i] = tensor_get(src, i);
        rc = quant_from_f32(&h->qm, "lm_head", f, src->rows, src->cols, dtype, group, err, errlen);
        free(f);
    }
    if (rc) {
        head_free(h);
        return NULL;
    }
    free(h->copy); /* the bf16 rows are no longer read */
    h->copy = NULL;
    h->rows = tensor_of_quant(&h->qm);
    return h;
}

int head_quantized(const head *h) {
    return h->rows.q != NULL;
}

quant_dtype head_dtype(const head *h) {
    return h->rows.q ? h->rows.q->dtype : QUANT_BF16;
}

size_t head_bytes(const head *h) {
    return tensor_bytes(&h->rows);
}

void head_free(head *h) {
    if (!h) return;
    if (h->ks) h->d->b->release(h->d->b, h->scores);
    quant_free(&h->qm);
    free(h->copy);
    free(h);
}

/* Softcapped scores of rows [from, from + n) of the last chunk into h->scores. */
static void head_scores(head *h, int from, int n) {
    decoder *d = h->d;
    backend *b = d->b;
    const model_config *c = &d->m->config;
    CHECK(from >= 0 && n >= 1 && from + n <= d->hidden_rows);
    b->matmul(b, h->scores, &h->rows, d->hidden + (size_t)from * c->hidden, n);
    if (c->final_softcap > 0) b->softcap(b, h->scores, (size_t)n * h->rows.rows, c->final_softcap);
}

void head_argmax(head *h, int from, int n, int *out) {
    decoder *d = h->d;
    backend *b = d->b;
    const int cols = h->rows.rows;
    if (b->matmul_argmax) { /* fused: no scores stored at all */
        const model_config *c = &d->m->config;
        CHECK(from >= 0 && n >= 1 && from + n <= d->hidden_rows);
        b->matmul_argmax(b, out, &h->rows, d->hidden + (size_t)from * c->hidden, n,
                         c->final_softcap);
        for (int r = 0; r < n && h->ks; r++)
            out[r] = h->ks->ids[out[r]];
        return;
    }
    head_scores(h, from, n);
    for (int r = 0; r < n; r++) {
        int i = b->argmax(b, h->scores + (size_t)r * cols, cols);
        out[r] = h->ks ? h->ks->ids[i] : i;
    }
}

int head_forward_argmax(head *h, const int *tokens, int n, int rows, int *out) {
    decoder *d = h->d;
    CHECK(rows >= 1 && rows <= n);
    if (!h->ks && !h->rows.q && rows == 1) /* the decoder's own step: lm_head and argmax in it */
        return decoder_forward_argmax(d, tokens, n, out);
    const int rc = decoder_forward(d, tokens, n, NULL, 0);
    if (rc) return rc;
    head_argmax(h, d->hidden_rows - rows, rows, out);
    return 0;
}

/* ppl_head.score over this head: run the decoder without logits, compute the head's scores of
 * the m rows on the backend and download them. m <= DECODER_CHUNK, so the m rows are the last
 * chunk's and all still in d->hidden. */
static int head_ppl_rows(void *ctx, decoder *d, const int *tokens, int m, float *scores) {
    head *h = ctx;
    int rc = decoder_forward(d, tokens, m, NULL, 0);
    if (rc) return rc;
    head_scores(h, 0, m);
    d->b->download(d->b, scores, h->scores, (size_t)m * h->rows.rows);
    return 0;
}

int head_ppl_score(head *h, int max_len, const ppl_set *pp, ppl_total *out, char *err,
                   size_t errlen) {
    ppl_head ph = {.vocab = h->d->m->config.vocab,
                   .cols = h->rows.rows,
                   .index = h->ks ? h->ks->index : NULL,
                   .rows = DECODER_CHUNK,
                   .score = head_ppl_rows,
                   .ctx = h};
    return ppl_score_head(h->d, &ph, max_len, pp, out, err, errlen);
}
