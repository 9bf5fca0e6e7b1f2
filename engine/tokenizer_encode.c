/* tokenizer_encode.c: text -> ids, in the order the `tokenizers` library runs its pipeline.
 *
 *   1. Added tokens with normalized = false are cut out of the raw text first (leftmost,
 *      then longest match, honouring lstrip / rstrip / single_word). Gemma's <start_of_turn>,
 *      "\n", "\n\n", the tab runs and the literal "▁▁" runs are all of this kind.
 *   2. Each remaining section is normalized; added tokens with normalized = true are then
 *      cut out of the normalized text the same way.
 *   3. The pre-tokenizer splits sections into words (Gemma's Split on " " never fires,
 *      because its normalizer has already turned every space into "▁": a whole line is
 *      one word, so the BPE below must be fast on long words).
 *   4. BPE on each word: characters (or their <0xNN> byte tokens, or <unk>) become symbols
 *      in a linked list; a binary heap ordered by (merge rank, position) picks the next
 *      merge, stale heap entries are detected by re-checking the pair. O(n log n) per word.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "util.h"

int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int k;
    uint32_t v, min;
    if ((c & 0xe0) == 0xc0)
        k = 2, v = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        k = 3, v = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        k = 4, v = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < (size_t)k) return 0;
    for (int i = 1; i < k; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return k;
}

int unicode_is_space(uint32_t c) {
    return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f ||
           c == 0x205f || c == 0x3000;
}

/* Length of the code point ending at s[end) (at least 1), and its value. */
static int utf8_prev(const unsigned char *s, size_t end, uint32_t *cp) {
    int k = 1;
    while (k < 4 && (size_t)k < end && (s[end - (size_t)k] & 0xc0) == 0x80)
        k++;
    if (utf8_decode(s + end - k, (size_t)k, cp) != k) *cp = s[end - 1], k = 1;
    return k;
}

/* ---------------------------------------------------------------------------------------- */
/* Growable buffers                                                                          */

typedef struct {
    char *p;
    size_t n, cap;
} sbuf;

static void sbuf_add(sbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

typedef struct {
    int *p;
    size_t n, cap;
} ibuf;

static void ibuf_push(ibuf *b, int v) {
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 64;
        b->p = xrealloc(b->p, b->cap * sizeof *b->p);
    }
    b->p[b->n++] = v;
}

/* ---------------------------------------------------------------------------------------- */
/* Normalizer                                                                                */

static char *replace_all(const char *s, size_t n, const char *pat, size_t plen, const char *rep,
                         size_t rlen, size_t *out_n) {
    sbuf b = {0};
    sbuf_add(&b, "", 0);
    size_t i = 0;
    for (;;) {
        const char *hit = plen <= n - i ? memmem(s + i, n - i, pat, plen) : NULL;
        if (!hit) break;
        sbuf_add(&b, s + i, (size_t)(hit - (s + i)));
        sbuf_add(&b, rep, rlen);
        i = (size_t)(hit - s) + plen;
    }
    sbuf_add(&b, s + i, n - i);
    *out_n = b.n;
    return b.p;
}

char *tokenizer_normalize(const tokenizer *t, const char *s, size_t n, size_t *out_n) {
    char *cur = xmalloc(n + 1);
    memcpy(cur, s, n);
    cur[n] = '\0';
    for (int k = 0; k < t->n_norm; k++) {
        const norm_step *st = &t->norm[k];
        char *next = NULL;
        size_t m = n;
        if (st->kind == NORM_REPLACE) {
            next = replace_all(cur, n, st->a, (size_t)st->alen, st->b, (size_t)st->blen, &m);
        } else if (st->kind == NORM_PREPEND) {
            if (n == 0) continue; /* the library prepends to non-empty strings only */
            m = (size_t)st->alen + n;
            next = xmalloc(m + 1);
            memcpy(next, st->a, (size_t)st->alen);
            memcpy(next + st->alen, cur, n + 1);
        } else { /* NORM_STRIP: Unicode whitespace at either end */
            const unsigned char *u = (const unsigned char *)cur;
            size_t a = 0, e = n;
            uint32_t cp;
            int len;
            while (st->left && a < e && (len = utf8_decode(u + a, e - a, &cp)) &&
                   unicode_is_space(cp))
                a += (size_t)len;
            while (st->right && e > a && (len = utf8_prev(u, e, &cp)) && unicode_is_space(cp))
                e -= (size_t)len;
            m = e - a;
            next = xmalloc(m + 1);
            memcpy(next, cur + a, m);
            next[m] = '\0';
        }
        free(cur);
        cur = next;
        n = m;
    }
    *out_n = n;
    return cur;
}

/* ---------------------------------------------------------------------------------------- */
/* Added tokens                                                                              */

typedef struct {
    size_t start, end; /* byte range of the input */
    int added;         /* index into tokenizer.added, or -1 for ordinary text */
} segment;

typedef struct {
    segment *p;
    size_t n, cap;
} seglist;

static void seg_push(seglist *l, size_t start, size_t end, int added) {
    if (start == end && added < 0) return;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->p = xrealloc(l->p, l->cap * sizeof *l->p);
    }
    l->p[l->n++] = (segment){start, end, added};
}

/* A word character (regex \w: letters, marks, digits, connector punctuation) for
 * single_word tokens. Exact for ASCII; beyond it, whitespace and the common punctuation and
 * symbol blocks below are non-word and everything else counts as a word character. That is
 * an approximation of the Unicode classes (we carry no Unicode tables) which matters only
 * for tokenizers with single_word tokens; Gemma's and ours have none. */
static int is_word_char(uint32_t c) {
    if (c < 0x80)
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               c == '_';
    static const uint32_t non_word[][2] = {
        {0x80, 0xa9},     {0xab, 0xb4},       {0xb6, 0xb9},     {0xbb, 0xbf},     /* Latin-1 */
        {0xd7, 0xd7},     {0xf7, 0xf7},       {0x2000, 0x200b}, {0x200e, 0x203e}, /* punctuation */
        {0x2041, 0x2053}, {0x2055, 0x206f},   {0x20a0, 0x20cf}, {0x2190, 0x2bff}, /* symbols */
        {0x3000, 0x3004}, {0x3008, 0x3020},   {0x3030, 0x3030}, {0xfe30, 0xfe4f}, /* CJK */
        {0xff01, 0xff0f}, {0xff1a, 0xff20},   {0xff3b, 0xff3e}, {0xff40, 0xff40}, /* fullwidth */
        {0xff5b, 0xff65}, {0x1f000, 0x1faff},                                     /* emoji */
    };
    if (unicode_is_space(c)) return 0;
    for (size_t i = 0; i < sizeof non_word / sizeof *non_word; i++)
        if (c >= non_word[i][0] && c <= non_word[i][1]) return 0;
    return 1;
}

/* Cut s[0..n) into text and added-token segments (leftmost, then longest match). */
static void split_added(const tokenizer *t, const added_trie *tr, const char *s, size_t n,
                        seglist *out) {
    const unsigned char *u = (const unsigned char *)s;
    size_t text_start = 0, i = 0;
    while (i < n) {
        if (!tr->root[u[i]]) {
            i++;
            continue;
        }
        int node = tr->root[u[i]], best = tr->terminal[node];
        size_t best_end = i + 1;
        for (size_t j = i + 1; j < n; j++) {
            uint64_t child;
            if (!u64map_get(&tr->edges, ((uint64_t)node << 8) | u[j], &child)) break;
            node = (int)child;
            if (tr->terminal[node] >= 0) best = tr->terminal[node], best_end = j + 1;
        }
        if (best < 0) {
            i++;
            continue;
        }
        const added_token *a = &t->added[best];
        size_t ms = i, me = best_end;
        uint32_t cp;
        if (a->single_word) {
            int before = ms > 0 && (utf8_prev(u, ms, &cp), is_word_char(cp));
            int after = me < n && utf8_decode(u + me, n - me, &cp) && is_word_char(cp);
            if (before || after) { /* not a token here; the library resumes after it */
                i = me;
                continue;
            }
        }
        int len;
        while (a->lstrip && ms > text_start && (len = utf8_prev(u, ms, &cp)) &&
               unicode_is_space(cp))
            ms -= (size_t)len;
        while (a->rstrip && me < n && (len = utf8_decode(u + me, n - me, &cp)) &&
               unicode_is_space(cp))
            me += (size_t)len;
        seg_push(out, text_start, ms, -1);
        seg_push(out, ms, me, best);
        text_start = i = me;
    }
    seg_push(out, text_start, n, -1);
}

/* ---------------------------------------------------------------------------------------- */
/* BPE                                                                                       */

typedef struct {
    uint64_t key;    /* (merge rank << 32) | left symbol's index: the heap's order */
    int left, right; /* the pair's ids when queued */
    int id;          /* the merged id */
} merge_entry;

/* Scratch reused across the words of one encode call. */
typedef struct {
    int *sym, *prev, *next; /* [cap] symbol ids and the linked list (-1 = none); sym -1 = gone */
    size_t cap;
    merge_entry *heap; /* [heap_cap] binary min-heap on (rank, pos) */
    size_t heap_n, heap_cap;
} bpe_work;

static int entry_less(const merge_entry *a, const merge_entry *b) {
    return a->key < b->key;
}

static void heap_push(bpe_work *w, merge_entry e) {
    if (w->heap_n == w->heap_cap) {
        w->heap_cap = w->heap_cap ? w->heap_cap * 2 : 256;
        w->heap = xrealloc(w->heap, w->heap_cap * sizeof *w->heap);
    }
    size_t i = w->heap_n++;
    while (i > 0 && entry_less(&e, &w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = e;
}

static merge_entry heap_pop(bpe_work *w) {
    merge_entry top = w->heap[0], last = w->heap[--w->heap_n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->heap_n) break;
        if (c + 1 < w->heap_n && entry_less(&w->heap[c + 1], &w->heap[c])) c++;
        if (!entry_less(&w->heap[c], &last)) break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (w->heap_n) w->heap[i] = last;
    return top;
}

/* Queue the merge of symbol pos with its right neighbour, if the pair has one. */
static void queue_pair(const tokenizer *t, bpe_work *w, int pos) {
    int right = w->next[pos];
    uint64_t v;
    if (right < 0) return;
    if (u64map_get(&t->merges, ((uint64_t)(uint32_t)w->sym[pos] << 32) | (uint32_t)w->sym[right],
                   &v))
        heap_push(w, (merge_entry){(v & 0xffffffff00000000ULL) | (uint32_t)pos, w->sym[pos],
                                   w->sym[right], (int)(uint32_t)v});
}

static void bpe_word(const tokenizer *t, bpe_work *w, const char *s, size_t n, ibuf *out) {
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0) return;
    if (t->ignore_merges) {
        int id = strmap_get(&t->vocab, s, n);
        if (id >= 0) {
            ibuf_push(out, id);
            return;
        }
    }
    if (w->cap < n) {
        w->cap = n * 2;
        w->sym = xrealloc(w->sym, w->cap * sizeof *w->sym);
        w->prev = xrealloc(w->prev, w->cap * sizeof *w->prev);
        w->next = xrealloc(w->next, w->cap * sizeof *w->next);
    }
    /* Characters -> symbols. An unknown character becomes a pending <unk>, emitted before
     * the next character found in the vocabulary (or at the end), fused with the unknown
     * characters that follow when fuse_unk is set. Byte-fallback characters do not emit a
     * pending <unk>: the library pushes their bytes first, so "f" without a token or byte
     * tokens followed by "é" with byte tokens gives <0xC3> <0xA9> <unk>. We keep that order. */
    int ns = 0, pending_unk = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = utf8_decode(u + i, n - i, &cp);
        if (k == 0) k = 1; /* cannot happen: the input was validated */
        int id = k == 1 && u[i] < 128 ? t->ascii_id[u[i]] : strmap_get(&t->vocab, s + i, (size_t)k);
        int bytes_ok = t->byte_fallback;
        for (int b = 0; id < 0 && bytes_ok && b < k; b++)
            bytes_ok = t->byte_id[u[i + (size_t)b]] >= 0;
        if (id >= 0) {
            if (pending_unk) w->sym[ns++] = t->unk_id, pending_unk = 0;
            w->sym[ns++] = id;
        } else if (bytes_ok) {
            for (int b = 0; b < k; b++)
                w->sym[ns++] = t->byte_id[u[i + (size_t)b]];
        } else if (t->unk_id >= 0) { /* without an unk token the library drops the char */
            if (pending_unk && !t->fuse_unk) w->sym[ns++] = t->unk_id;
            pending_unk = 1;
        }
        i += (size_t)k;
    }
    if (pending_unk) w->sym[ns++] = t->unk_id;
    for (int i = 0; i < ns; i++)
        w->prev[i] = i - 1, w->next[i] = i + 1 < ns ? i + 1 : -1;

    /* Merge, best rank first, leftmost first among equal ranks. */
    w->heap_n = 0;
    for (int i = 0; i + 1 < ns; i++)
        queue_pair(t, w, i);
    while (w->heap_n) {
        merge_entry e = heap_pop(w);
        int pos = (int)(uint32_t)e.key;
        int right = w->sym[pos] >= 0 ? w->next[pos] : -1;
        /* Stale when either side changed since the entry was queued. Symbols only grow, so
         * the same two ids mean the same pair, hence the same rank and merged id: this is
         * the library's check (re-look-up the pair, compare the merged id) without a
         * hash look-up. */
        if (right < 0 || w->sym[pos] != e.left || w->sym[right] != e.right) continue;
        w->sym[pos] = e.id;
        w->sym[right] = -1;
        w->next[pos] = w->next[right];
        if (w->next[pos] >= 0) w->prev[w->next[pos]] = pos;
        if (w->prev[pos] >= 0) queue_pair(t, w, w->prev[pos]);
        queue_pair(t, w, pos);
    }
    for (int i = 0; i >= 0 && i < ns; i = w->next[i])
        ibuf_push(out, w->sym[i]);
}

/* ---------------------------------------------------------------------------------------- */
/* Pre-tokenizer                                                                             */

typedef struct {
    const char *s;
    size_t n;
    int at_start; /* begins at offset 0 of the original text (Metaspace "first") */
} word;

typedef struct {
    word *p;
    size_t n, cap;
} wordlist;

static void word_push(wordlist *l, const char *s, size_t n, int at_start) {
    if (n == 0) return; /* the library drops empty splits */
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->p = xrealloc(l->p, l->cap * sizeof *l->p);
    }
    l->p[l->n++] = (word){s, n, at_start};
}

/* Split one word on a literal pattern with one of the library's five behaviours. */
static void split_word(const word *wd, const char *pat, size_t plen, split_behavior beh, int invert,
                       wordlist *out) {
    /* Pieces alternate between matches and the text between them. */
    typedef struct {
        size_t a, b;
        int match;
    } part;
    part *parts = NULL;
    size_t np = 0, cap = 0, i = 0;
    for (;;) {
        const char *hit = plen <= wd->n - i ? memmem(wd->s + i, wd->n - i, pat, plen) : NULL;
        size_t h = hit ? (size_t)(hit - wd->s) : wd->n;
        for (int k = 0; k < 2; k++) {
            size_t a = k == 0 ? i : h, b = k == 0 ? h : h + plen;
            if (a == b || (k == 1 && !hit)) continue;
            if (np == cap) cap = cap ? cap * 2 : 16, parts = xrealloc(parts, cap * sizeof *parts);
            parts[np++] = (part){a, b, (k == 1) != (invert != 0)};
        }
        if (!hit) break;
        i = h + plen;
    }
    /* Fold the pieces as the behaviour says (the library's fold, offsets only). */
    part *res = xmalloc((np + 1) * sizeof *res);
    size_t nr = 0;
    int prev_match = 0;
    if (beh == SPLIT_MERGED_WITH_NEXT) {
        for (size_t k = np; k-- > 0;) {
            if (parts[k].match && !prev_match && nr)
                res[nr - 1].a = parts[k].a;
            else
                res[nr++] = parts[k];
            prev_match = parts[k].match;
        }
        for (size_t k = 0; k < nr / 2; k++) {
            part tmp = res[k];
            res[k] = res[nr - 1 - k], res[nr - 1 - k] = tmp;
        }
    } else {
        for (size_t k = 0; k < np; k++) {
            const part *p = &parts[k];
            if (beh == SPLIT_REMOVED) {
                if (!p->match) res[nr++] = *p;
            } else if (beh == SPLIT_MERGED_WITH_PREVIOUS && p->match && !prev_match && nr) {
                res[nr - 1].b = p->b;
            } else if (beh == SPLIT_CONTIGUOUS && p->match == prev_match && nr) {
                res[nr - 1].b = p->b;
            } else {
                res[nr++] = *p;
            }
            prev_match = p->match;
        }
    }
    for (size_t k = 0; k < nr; k++)
        word_push(out, wd->s + res[k].a, res[k].b - res[k].a, wd->at_start && res[k].a == 0);
    free(parts);
    free(res);
}

/* Pre-tokenize s[0..n) into words; strings made along the way are kept in *pool. */
static void pretokenize(const tokenizer *t, const char *s, size_t n, int at_start, wordlist *words,
                        char ***pool, size_t *npool) {
    words->n = 0;
    word_push(words, s, n, at_start);
    for (int k = 0; k < t->n_pretok; k++) {
        const pretok_step *st = &t->pretok[k];
        wordlist next = {0};
        for (size_t i = 0; i < words->n; i++) {
            const word *wd = &words->p[i];
            if (st->kind == PRETOK_SPLIT) {
                split_word(wd, st->pattern, (size_t)st->plen, st->behavior, st->invert, &next);
                continue;
            }
            /* Metaspace: spaces -> replacement, maybe a leading one, maybe split before each. */
            size_t m;
            char *r = replace_all(wd->s, wd->n, " ", 1, st->pattern, (size_t)st->plen, &m);
            int starts = m >= (size_t)st->plen && !memcmp(r, st->pattern, (size_t)st->plen);
            if (!starts &&
                (st->scheme == PREPEND_ALWAYS || (st->scheme == PREPEND_FIRST && wd->at_start))) {
                char *p = xmalloc(m + (size_t)st->plen + 1);
                memcpy(p, st->pattern, (size_t)st->plen);
                memcpy(p + st->plen, r, m + 1);
                free(r);
                r = p;
                m += (size_t)st->plen;
            }
            *pool = xrealloc(*pool, (*npool + 1) * sizeof **pool);
            (*pool)[(*npool)++] = r;
            word w2 = {r, m, wd->at_start};
            if (st->split)
                split_word(&w2, st->pattern, (size_t)st->plen, SPLIT_MERGED_WITH_NEXT, 0, &next);
            else
                word_push(&next, r, m, wd->at_start);
        }
        free(words->p);
        *words = next;
    }
}

/* ---------------------------------------------------------------------------------------- */
/* The pipeline                                                                              */

static void encode_text(const tokenizer *t, bpe_work *w, const char *s, size_t n, int at_start,
                        ibuf *out) {
    wordlist words = {0};
    char **pool = NULL;
    size_t npool = 0;
    pretokenize(t, s, n, at_start, &words, &pool, &npool);
    for (size_t i = 0; i < words.n; i++)
        bpe_word(t, w, words.p[i].s, words.p[i].n, out);
    for (size_t i = 0; i < npool; i++)
        free(pool[i]);
    free(pool);
    free(words.p);
}

static void encode_section(const tokenizer *t, bpe_work *w, const char *s, size_t n, int at_start,
                           ibuf *out) {
    size_t m;
    char *norm = tokenizer_normalize(t, s, n, &m);
    if (t->norm_trie.n_tokens == 0) {
        encode_text(t, w, norm, m, at_start, out);
    } else {
        seglist segs = {0};
        split_added(t, &t->norm_trie, norm, m, &segs);
        for (size_t i = 0; i < segs.n; i++) {
            const segment *g = &segs.p[i];
            if (g->added >= 0)
                ibuf_push(out, t->added[g->added].id);
            else
                encode_text(t, w, norm + g->start, g->end - g->start, at_start && g->start == 0,
                            out);
        }
        free(segs.p);
    }
    free(norm);
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, int add_bos, int **ids_out) {
    *ids_out = NULL;
    if (!text && len) return -1;
    if (!text) text = "";
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        int k = utf8_decode((const unsigned char *)text + i, len - i, &cp);
        if (!k) return -1;
        i += (size_t)k;
    }
    if (add_bos && !t->has_template && t->bos_id < 0) return -1;

    ibuf out = {0};
    bpe_work w = {0};
    if (add_bos && t->has_template)
        for (int i = 0; i < t->n_tmpl_pre; i++)
            ibuf_push(&out, t->tmpl_pre[i]);
    else if (add_bos)
        ibuf_push(&out, t->bos_id);
    seglist segs = {0};
    if (t->raw_trie.n_tokens)
        split_added(t, &t->raw_trie, text, len, &segs);
    else
        seg_push(&segs, 0, len, -1);
    for (size_t i = 0; i < segs.n; i++) {
        const segment *g = &segs.p[i];
        if (g->added >= 0)
            ibuf_push(&out, t->added[g->added].id);
        else
            encode_section(t, &w, text + g->start, g->end - g->start, g->start == 0, &out);
    }
    if (add_bos && t->has_template)
        for (int i = 0; i < t->n_tmpl_post; i++)
            ibuf_push(&out, t->tmpl_post[i]);
    free(segs.p);
    free(w.sym);
    free(w.prev);
    free(w.next);
    free(w.heap);
    CHECK(out.n <= (size_t)INT32_MAX);
    if (out.n == 0) {
        free(out.p);
        return 0;
    }
    *ids_out = out.p;
    return (int)out.n;
}
