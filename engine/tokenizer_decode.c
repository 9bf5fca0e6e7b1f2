/* tokenizer_decode.c: ids -> text. The pieces of the ids form a list of strings that each
 * step of the file's decoder rewrites in turn, exactly as the `tokenizers` library's
 * decode_chain does (Gemma: Replace "▁" -> " ", ByteFallback, Fuse); the list is then
 * concatenated. Without a decoder the pieces are joined with single spaces, as the library
 * does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "util.h"

typedef struct {
    char **s;    /* [n] owned strings */
    size_t *len; /* [n] */
    size_t n, cap;
} strlist;

static void list_push(strlist *l, char *s, size_t len) {
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->s = xrealloc(l->s, l->cap * sizeof *l->s);
        l->len = xrealloc(l->len, l->cap * sizeof *l->len);
    }
    l->s[l->n] = s;
    l->len[l->n++] = len;
}

static char *dup_bytes(const char *s, size_t n) {
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

static void list_free(strlist *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->s[i]);
    free(l->s);
    free(l->len);
    memset(l, 0, sizeof *l);
}

/* Replace every occurrence of pat in s (non-overlapping, left to right). */
static char *replace(const char *s, size_t n, const char *pat, size_t plen, const char *rep,
                     size_t rlen, size_t *out_n) {
    size_t count = 0;
    for (const char *p = s; (p = memmem(p, n - (size_t)(p - s), pat, plen)); p += plen)
        count++;
    size_t m = n + count * rlen - count * plen;
    char *out = xmalloc(m + 1), *o = out;
    const char *p = s, *hit;
    while ((hit = memmem(p, n - (size_t)(p - s), pat, plen))) {
        memcpy(o, p, (size_t)(hit - p));
        o += hit - p;
        memcpy(o, rep, rlen);
        o += rlen;
        p = hit + plen;
    }
    memcpy(o, p, n - (size_t)(p - s));
    out[m] = '\0';
    *out_n = m;
    return out;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int valid_utf8(const char *s, size_t n) {
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        int k = utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (!k) return 0;
        i += (size_t)k;
    }
    return 1;
}

/* ByteFallback: runs of <0xNN> pieces become their bytes when those form valid UTF-8, and
 * one U+FFFD per byte when they do not (the library's rule). */
static void flush_bytes(strlist *out, char *bytes, size_t *nb) {
    if (*nb == 0) return;
    if (valid_utf8(bytes, *nb)) {
        list_push(out, dup_bytes(bytes, *nb), *nb);
    } else {
        for (size_t i = 0; i < *nb; i++)
            list_push(out, dup_bytes("\xef\xbf\xbd", 3), 3);
    }
    *nb = 0;
}

static void byte_fallback(strlist *l) {
    strlist out = {0};
    char *bytes = xmalloc(l->n + 1);
    size_t nb = 0;
    for (size_t i = 0; i < l->n; i++) {
        const char *s = l->s[i];
        if (l->len[i] == 6 && !memcmp(s, "<0x", 3) && s[5] == '>' && hexval(s[3]) >= 0 &&
            hexval(s[4]) >= 0) {
            bytes[nb++] = (char)(hexval(s[3]) * 16 + hexval(s[4]));
            free(l->s[i]);
            continue;
        }
        flush_bytes(&out, bytes, &nb);
        list_push(&out, l->s[i], l->len[i]);
    }
    flush_bytes(&out, bytes, &nb);
    free(bytes);
    free(l->s);
    free(l->len);
    *l = out;
}

static void fuse(strlist *l, const char *sep, size_t seplen) {
    size_t total = 0;
    for (size_t i = 0; i < l->n; i++)
        total += l->len[i] + seplen;
    char *all = xmalloc(total + 1), *o = all;
    for (size_t i = 0; i < l->n; i++) {
        if (i) memcpy(o, sep, seplen), o += seplen;
        memcpy(o, l->s[i], l->len[i]);
        o += l->len[i];
    }
    *o = '\0';
    size_t n = (size_t)(o - all);
    list_free(l);
    list_push(l, all, n);
}

/* Strip: up to `start` copies of the character c at the front, `stop` at the back. */
static void strip(strlist *l, const char *c, size_t clen, int start, int stop) {
    for (size_t i = 0; i < l->n; i++) {
        char *s = l->s[i];
        size_t a = 0, e = l->len[i];
        for (int k = 0; k < start && e - a >= clen && !memcmp(s + a, c, clen); k++)
            a += clen;
        for (int k = 0; k < stop && e - a >= clen && !memcmp(s + e - clen, c, clen); k++)
            e -= clen;
        memmove(s, s + a, e - a);
        s[e - a] = '\0';
        l->len[i] = e - a;
    }
}

char *tokenizer_decode(const tokenizer *t, const int *ids, int n) {
    strlist l = {0};
    for (int i = 0; i < n; i++) {
        const char *p = tokenizer_piece(t, ids[i]);
        if (p)
            list_push(&l, dup_bytes(p, (size_t)t->piece_len[ids[i]]), (size_t)t->piece_len[ids[i]]);
    }
    if (!t->has_decoder) fuse(&l, " ", 1);
    for (int k = 0; t->has_decoder && k < t->n_dec; k++) {
        const dec_step *st = &t->dec[k];
        switch (st->kind) {
        case DEC_REPLACE:
        case DEC_METASPACE:
            for (size_t i = 0; i < l.n; i++) {
                /* Metaspace: the replacement becomes a space, except in the first token
                 * (unless the scheme is "never"), where the library drops every one. */
                const char *to = st->kind == DEC_REPLACE ? st->b : " ";
                size_t to_len = st->kind == DEC_REPLACE ? (size_t)st->blen : 1;
                if (st->kind == DEC_METASPACE && i == 0 && st->scheme != PREPEND_NEVER) to_len = 0;
                size_t m;
                char *r = replace(l.s[i], l.len[i], st->a, (size_t)st->alen, to, to_len, &m);
                free(l.s[i]);
                l.s[i] = r;
                l.len[i] = m;
            }
            break;
        case DEC_BYTE_FALLBACK:
            byte_fallback(&l);
            break;
        case DEC_FUSE:
            fuse(&l, "", 0);
            break;
        case DEC_STRIP:
            strip(&l, st->a, (size_t)st->alen, st->start, st->stop);
            break;
        }
    }
    fuse(&l, "", 0);
    char *text = l.n ? l.s[0] : dup_bytes("", 0);
    free(l.s);
    free(l.len);
    return text;
}
