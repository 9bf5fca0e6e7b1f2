/* tokenizer.c: loading a Hugging Face tokenizer.json (parsed with cJSON) into the
 * tokenizer struct of tokenizer_internal.h, and the small public getters. Encoding is in
 * tokenizer_encode.c, decoding in tokenizer_decode.c, the hash maps in tokenizer_maps.c.
 *
 * The loader accepts exactly the components the encoder implements and refuses anything
 * else with "<file>: <key>: <what>", so a file we would tokenize differently from the
 * `tokenizers` library never loads silently. Strings are copied into one arena so the
 * cJSON tree (about ten times the file's size for Gemma's 33 MB file) is freed at the end.
 */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "util.h"

/* ---------------------------------------------------------------------------------------- */
/* Loading                                                                                   */

/* Ids index per-id tables, so an absurd id would ask for absurd memory: refuse it. Gemma's
 * vocabulary has 262,145 ids. */
enum { MAX_IDS = 1 << 24 };

typedef struct {
    tokenizer *t;
    char *err;
    size_t errlen;
} loader;

PRINTF_LIKE(2, 3) static int load_fail(loader *L, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (L->err && L->errlen) snprintf(L->err, L->errlen, "%s: %s", L->t->path, msg);
    return -1;
}

/* Copy n bytes (plus a NUL) into the tokenizer's arena. */
static const char *arena_dup(tokenizer *t, const char *s, size_t n) {
    if (t->n_chunks == 0 || t->chunk_used + n + 1 > t->chunk_cap) {
        size_t cap = n + 1 > (1u << 20) ? n + 1 : (1u << 20);
        t->chunks = xrealloc(t->chunks, (size_t)(t->n_chunks + 1) * sizeof *t->chunks);
        t->chunks[t->n_chunks++] = xmalloc(cap);
        t->chunk_used = 0;
        t->chunk_cap = cap;
    }
    char *p = t->chunks[t->n_chunks - 1] + t->chunk_used;
    memcpy(p, s, n);
    p[n] = '\0';
    t->chunk_used += n + 1;
    return p;
}

/* Typed field access: each returns -1 (with the message) when the field has the wrong type;
 * absent optional fields keep the default already in *out. */
static int get_bool(loader *L, const cJSON *obj, const char *where, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return load_fail(L, "%s.%s: expected true or false", where, key);
    *out = cJSON_IsTrue(v);
    return 0;
}

static int get_int(loader *L, const cJSON *obj, const char *where, const char *key, int *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v)) return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : -1;
    if (!cJSON_IsNumber(v) || d < 0 || d > INT_MAX || d != (double)(int)d)
        return load_fail(L, "%s.%s: expected a non-negative integer", where, key);
    *out = (int)d;
    return 0;
}

/* A required (or, with required = 0, optional) string; *out NULL when absent. */
static int get_str(loader *L, const cJSON *obj, const char *where, const char *key, int required,
                   const char **out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = NULL;
    if (!v || cJSON_IsNull(v)) {
        if (required) return load_fail(L, "%s: missing \"%s\"", where, key);
        return 0;
    }
    if (!cJSON_IsString(v)) return load_fail(L, "%s.%s: expected a string", where, key);
    *out = v->valuestring;
    return 0;
}

/* A pattern {"String": "..."}: the only form we implement. Regex patterns would need a
 * Unicode-aware regex engine (POSIX regex has no \p{L} classes); no component of Gemma's
 * file or of ours uses one, so they are refused by name. */
static int get_pattern(loader *L, const cJSON *obj, const char *where, const char **out) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(obj, "pattern");
    if (!cJSON_IsObject(p)) return load_fail(L, "%s: missing \"pattern\" object", where);
    if (cJSON_GetObjectItemCaseSensitive(p, "Regex"))
        return load_fail(L, "%s.pattern: Regex patterns are not supported (only {\"String\": ...})",
                         where);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(p, "String");
    if (!cJSON_IsString(s))
        return load_fail(L, "%s.pattern: expected {\"String\": \"...\"}", where);
    if (!s->valuestring[0]) return load_fail(L, "%s.pattern: the string is empty", where);
    *out = s->valuestring;
    return 0;
}

/* prepend_scheme ("always" / "first" / "never") or the older add_prefix_space boolean. */
static int get_scheme(loader *L, const cJSON *obj, const char *where, prepend_scheme *out) {
    const char *s;
    int add_prefix = 1;
    *out = PREPEND_ALWAYS;
    if (get_str(L, obj, where, "prepend_scheme", 0, &s) < 0) return -1;
    if (!s) {
        if (get_bool(L, obj, where, "add_prefix_space", &add_prefix) < 0) return -1;
        *out = add_prefix ? PREPEND_ALWAYS : PREPEND_NEVER;
        return 0;
    }
    if (!strcmp(s, "always"))
        *out = PREPEND_ALWAYS;
    else if (!strcmp(s, "first"))
        *out = PREPEND_FIRST;
    else if (!strcmp(s, "never"))
        *out = PREPEND_NEVER;
    else
        return load_fail(L, "%s.prepend_scheme: unknown value \"%s\"", where, s);
    return 0;
}

static const char *get_type(loader *L, const cJSON *obj, const char *where) {
    const char *type;
    if (!cJSON_IsObject(obj)) {
        load_fail(L, "%s: expected an object or null", where);
        return NULL;
    }
    if (get_str(L, obj, where, "type", 1, &type) < 0) return NULL;
    return type;
}

/* Visit a Sequence's list (key) or the single component. */
typedef int (*component_fn)(loader *L, const cJSON *obj, const char *where);

static int load_sequence(loader *L, const cJSON *obj, const char *where, const char *key,
                         component_fn fn) {
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsArray(list)) return load_fail(L, "%s: missing \"%s\" array", where, key);
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        char sub[256];
        snprintf(sub, sizeof sub, "%s.%s[%d]", where, key, i++);
        if (fn(L, it, sub) < 0) return -1;
    }
    return 0;
}

static int load_normalizer(loader *L, const cJSON *obj, const char *where) {
    tokenizer *t = L->t;
    const char *type = get_type(L, obj, where);
    if (!type) return -1;
    if (!strcmp(type, "Sequence"))
        return load_sequence(L, obj, where, "normalizers", load_normalizer);
    norm_step st = {0};
    if (!strcmp(type, "Replace")) {
        const char *pat, *content;
        if (get_pattern(L, obj, where, &pat) < 0 ||
            get_str(L, obj, where, "content", 1, &content) < 0)
            return -1;
        st = (norm_step){.kind = NORM_REPLACE,
                         .a = arena_dup(t, pat, strlen(pat)),
                         .alen = (int)strlen(pat),
                         .b = arena_dup(t, content, strlen(content)),
                         .blen = (int)strlen(content)};
    } else if (!strcmp(type, "Prepend")) {
        const char *pre;
        if (get_str(L, obj, where, "prepend", 1, &pre) < 0) return -1;
        st = (norm_step){
            .kind = NORM_PREPEND, .a = arena_dup(t, pre, strlen(pre)), .alen = (int)strlen(pre)};
    } else if (!strcmp(type, "Strip")) {
        st = (norm_step){.kind = NORM_STRIP, .left = 1, .right = 1};
        if (get_bool(L, obj, where, "strip_left", &st.left) < 0 ||
            get_bool(L, obj, where, "strip_right", &st.right) < 0)
            return -1;
    } else {
        return load_fail(L,
                         "%s: normalizer type \"%s\" is not supported (supported: Sequence, "
                         "Replace, Prepend, Strip)",
                         where, type);
    }
    t->norm = xrealloc(t->norm, (size_t)(t->n_norm + 1) * sizeof *t->norm);
    t->norm[t->n_norm++] = st;
    return 0;
}

static int load_pretokenizer(loader *L, const cJSON *obj, const char *where) {
    tokenizer *t = L->t;
    const char *type = get_type(L, obj, where);
    if (!type) return -1;
    if (!strcmp(type, "Sequence"))
        return load_sequence(L, obj, where, "pretokenizers", load_pretokenizer);
    pretok_step st = {0};
    if (!strcmp(type, "Split")) {
        const char *pat, *beh;
        if (get_pattern(L, obj, where, &pat) < 0 ||
            get_str(L, obj, where, "behavior", 1, &beh) < 0 ||
            get_bool(L, obj, where, "invert", &st.invert) < 0)
            return -1;
        static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                      "Contiguous"};
        int b = -1;
        for (int i = 0; i < 5; i++)
            if (!strcmp(beh, names[i])) b = i;
        if (b < 0) return load_fail(L, "%s.behavior: unknown value \"%s\"", where, beh);
        st.kind = PRETOK_SPLIT;
        st.behavior = (split_behavior)b;
        st.pattern = arena_dup(t, pat, strlen(pat));
        st.plen = (int)strlen(pat);
    } else if (!strcmp(type, "Metaspace")) {
        const char *rep;
        st.kind = PRETOK_METASPACE;
        st.split = 1;
        if (get_str(L, obj, where, "replacement", 1, &rep) < 0 ||
            get_scheme(L, obj, where, &st.scheme) < 0 ||
            get_bool(L, obj, where, "split", &st.split) < 0)
            return -1;
        uint32_t cp;
        size_t n = strlen(rep);
        if (n == 0 || utf8_decode((const unsigned char *)rep, n, &cp) != (int)n)
            return load_fail(L, "%s.replacement: expected one character", where);
        st.pattern = arena_dup(t, rep, n);
        st.plen = (int)n;
    } else {
        return load_fail(L,
                         "%s: pre-tokenizer type \"%s\" is not supported (supported: Sequence, "
                         "Split on a string, Metaspace)",
                         where, type);
    }
    t->pretok = xrealloc(t->pretok, (size_t)(t->n_pretok + 1) * sizeof *t->pretok);
    t->pretok[t->n_pretok++] = st;
    return 0;
}

static int load_decoder(loader *L, const cJSON *obj, const char *where) {
    tokenizer *t = L->t;
    const char *type = get_type(L, obj, where);
    if (!type) return -1;
    if (!strcmp(type, "Sequence")) return load_sequence(L, obj, where, "decoders", load_decoder);
    dec_step st = {0};
    if (!strcmp(type, "Replace")) {
        const char *pat, *content;
        if (get_pattern(L, obj, where, &pat) < 0 ||
            get_str(L, obj, where, "content", 1, &content) < 0)
            return -1;
        st = (dec_step){.kind = DEC_REPLACE,
                        .a = arena_dup(t, pat, strlen(pat)),
                        .alen = (int)strlen(pat),
                        .b = arena_dup(t, content, strlen(content)),
                        .blen = (int)strlen(content)};
    } else if (!strcmp(type, "ByteFallback")) {
        st.kind = DEC_BYTE_FALLBACK;
    } else if (!strcmp(type, "Fuse")) {
        st.kind = DEC_FUSE;
    } else if (!strcmp(type, "Strip") || !strcmp(type, "Metaspace")) {
        const char *c;
        int strip = !strcmp(type, "Strip");
        st.kind = strip ? DEC_STRIP : DEC_METASPACE;
        if (get_str(L, obj, where, strip ? "content" : "replacement", 1, &c) < 0) return -1;
        uint32_t cp;
        size_t n = strlen(c);
        if (n == 0 || utf8_decode((const unsigned char *)c, n, &cp) != (int)n)
            return load_fail(L, "%s.%s: expected one character", where,
                             strip ? "content" : "replacement");
        st.a = arena_dup(t, c, n);
        st.alen = (int)n;
        if (strip ? get_int(L, obj, where, "start", &st.start) < 0 ||
                        get_int(L, obj, where, "stop", &st.stop) < 0
                  : get_scheme(L, obj, where, &st.scheme) < 0)
            return -1;
    } else {
        return load_fail(L,
                         "%s: decoder type \"%s\" is not supported (supported: Sequence, Replace, "
                         "ByteFallback, Fuse, Strip, Metaspace)",
                         where, type);
    }
    t->dec = xrealloc(t->dec, (size_t)(t->n_dec + 1) * sizeof *t->dec);
    t->dec[t->n_dec++] = st;
    return 0;
}

/* The BPE model's vocabulary: fills vocab (strings in the arena) and returns the largest id. */
static int load_vocab(loader *L, const cJSON *model, int *max_id) {
    tokenizer *t = L->t;
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsObject(vocab)) return load_fail(L, "model.vocab: missing or not an object");
    int n = cJSON_GetArraySize(vocab);
    strmap_init(&t->vocab, (size_t)n);
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) {
        double d = it->valuedouble;
        if (!cJSON_IsNumber(it) || d < 0 || d >= INT_MAX || d != (double)(int)d)
            return load_fail(L, "model.vocab[\"%s\"]: expected a non-negative integer id",
                             it->string);
        if (d >= MAX_IDS)
            return load_fail(L, "model.vocab[\"%s\"]: id %.0f is past the limit of %d ids",
                             it->string, d, MAX_IDS);
        size_t len = strlen(it->string);
        if (len == 0 || len > INT_MAX / 2)
            return load_fail(L, "model.vocab: an empty or huge token");
        const char *s = arena_dup(t, it->string, len);
        if (strmap_put(&t->vocab, s, (int)len, (int)d) >= 0)
            return load_fail(L, "model.vocab: token \"%s\" appears twice", it->string);
        if ((int)d > *max_id) *max_id = (int)d;
    }
    return 0;
}

/* Merges, in either serialisation: "a b" strings (tokenizers < 0.20) or ["a", "b"] pairs. */
static int load_merges(loader *L, const cJSON *model) {
    tokenizer *t = L->t;
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsArray(merges)) return load_fail(L, "model.merges: missing or not an array");
    u64map_init(&t->merges, (size_t)cJSON_GetArraySize(merges));
    int rank = 0;
    const cJSON *it;
    char *joined = NULL;
    size_t joined_cap = 0;
    cJSON_ArrayForEach(it, merges) {
        const char *a, *b;
        size_t alen, blen;
        if (cJSON_IsString(it)) {
            const char *sp = strchr(it->valuestring, ' ');
            if (!sp || strchr(sp + 1, ' ') || sp == it->valuestring || !sp[1]) goto bad;
            a = it->valuestring, alen = (size_t)(sp - a), b = sp + 1, blen = strlen(b);
        } else if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2 &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 0)) &&
                   cJSON_IsString(cJSON_GetArrayItem(it, 1))) {
            a = cJSON_GetArrayItem(it, 0)->valuestring, alen = strlen(a);
            b = cJSON_GetArrayItem(it, 1)->valuestring, blen = strlen(b);
        } else {
            goto bad;
        }
        int ia = strmap_get(&t->vocab, a, alen), ib = strmap_get(&t->vocab, b, blen);
        if (joined_cap < alen + blen + 1) {
            joined_cap = (alen + blen + 1) * 2;
            joined = xrealloc(joined, joined_cap);
        }
        memcpy(joined, a, alen);
        memcpy(joined + alen, b, blen);
        int iab = strmap_get(&t->vocab, joined, alen + blen);
        if (ia < 0 || ib < 0 || iab < 0) {
            free(joined);
            return load_fail(L, "model.merges[%d]: \"%.*s\" is not in model.vocab", rank,
                             ia < 0   ? (int)alen
                             : ib < 0 ? (int)blen
                                      : (int)(alen + blen),
                             ia < 0   ? a
                             : ib < 0 ? b
                                      : "(the merged pair)");
        }
        u64map_put(&t->merges, ((uint64_t)ia << 32) | (uint32_t)ib,
                   ((uint64_t)rank << 32) | (uint32_t)iab);
        rank++;
    }
    free(joined);
    return 0;
bad:
    free(joined);
    return load_fail(L, "model.merges[%d]: expected \"left right\" or [\"left\", \"right\"]", rank);
}

static int load_model(loader *L, const cJSON *root, int *max_id) {
    tokenizer *t = L->t;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    const char *type = get_type(L, model, "model");
    if (!type) return -1;
    if (strcmp(type, "BPE"))
        return load_fail(L, "model.type: \"%s\" is not supported (only BPE)", type);
    const cJSON *dropout = cJSON_GetObjectItemCaseSensitive(model, "dropout");
    if (dropout && !cJSON_IsNull(dropout) &&
        !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
        return load_fail(L, "model.dropout: BPE dropout is random; only null is supported");
    const char *s;
    if (get_str(L, model, "model", "continuing_subword_prefix", 0, &s) < 0) return -1;
    if (s && s[0])
        return load_fail(L, "model.continuing_subword_prefix: not supported (must be null)");
    if (get_str(L, model, "model", "end_of_word_suffix", 0, &s) < 0) return -1;
    if (s && s[0]) return load_fail(L, "model.end_of_word_suffix: not supported (must be null)");
    if (get_bool(L, model, "model", "byte_fallback", &t->byte_fallback) < 0 ||
        get_bool(L, model, "model", "fuse_unk", &t->fuse_unk) < 0 ||
        get_bool(L, model, "model", "ignore_merges", &t->ignore_merges) < 0)
        return -1;
    if (load_vocab(L, model, max_id) < 0 || load_merges(L, model) < 0) return -1;
    const char *unk;
    t->unk_id = -1;
    if (get_str(L, model, "model", "unk_token", 0, &unk) < 0) return -1;
    if (unk && (t->unk_id = strmap_get(&t->vocab, unk, strlen(unk))) < 0)
        return load_fail(L, "model.unk_token: \"%s\" is not in model.vocab", unk);
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_id[b] = strmap_get(&t->vocab, name, 6);
    }
    for (int c = 0; c < 128; c++) {
        char ch = (char)c;
        t->ascii_id[c] = strmap_get(&t->vocab, &ch, 1);
    }
    return 0;
}

static void trie_insert(added_trie *tr, const char *s, size_t n, int index) {
    if (!tr->terminal) {
        u64map_init(&tr->edges, 64);
        tr->cap_nodes = 64;
        tr->terminal = xmalloc((size_t)tr->cap_nodes * sizeof *tr->terminal);
        tr->terminal[0] = -1;
        tr->n_nodes = 1;
    }
    int node = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t key = ((uint64_t)node << 8) | (unsigned char)s[i], child;
        int *root = node == 0 ? &tr->root[(unsigned char)s[i]] : NULL;
        if (root && *root) {
            child = (uint64_t)*root;
        } else if (root || !u64map_get(&tr->edges, key, &child)) {
            if (tr->n_nodes == tr->cap_nodes) {
                tr->cap_nodes *= 2;
                tr->terminal = xrealloc(tr->terminal, (size_t)tr->cap_nodes * sizeof *tr->terminal);
            }
            child = (uint64_t)tr->n_nodes;
            tr->terminal[tr->n_nodes++] = -1;
            if (root)
                *root = (int)child;
            else
                u64map_put(&tr->edges, key, child);
        }
        node = (int)child;
    }
    tr->terminal[node] = index;
    tr->n_tokens++;
}

static int load_added(loader *L, const cJSON *root, int *max_id) {
    tokenizer *t = L->t;
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!list || cJSON_IsNull(list)) return 0;
    if (!cJSON_IsArray(list)) return load_fail(L, "added_tokens: expected an array");
    t->added = xcalloc((size_t)cJSON_GetArraySize(list) + 1, sizeof *t->added);
    int i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, list) {
        char where[64];
        snprintf(where, sizeof where, "added_tokens[%d]", i++);
        added_token a = {0};
        const char *content;
        a.id = -1;
        if (!cJSON_IsObject(it)) return load_fail(L, "%s: expected an object", where);
        if (get_int(L, it, where, "id", &a.id) < 0 ||
            get_str(L, it, where, "content", 1, &content) < 0 ||
            get_bool(L, it, where, "special", &a.special) < 0)
            return -1;
        a.normalized = !a.special; /* the library's default */
        if (get_bool(L, it, where, "lstrip", &a.lstrip) < 0 ||
            get_bool(L, it, where, "rstrip", &a.rstrip) < 0 ||
            get_bool(L, it, where, "single_word", &a.single_word) < 0 ||
            get_bool(L, it, where, "normalized", &a.normalized) < 0)
            return -1;
        if (a.id < 0) return load_fail(L, "%s: missing \"id\"", where);
        if (a.id >= MAX_IDS)
            return load_fail(L, "%s.id: %d is past the limit of %d ids", where, a.id, MAX_IDS);
        if (!content[0]) return load_fail(L, "%s.content: empty", where);
        a.len = (int)strlen(content);
        a.content = arena_dup(t, content, (size_t)a.len);
        if (a.id > *max_id) *max_id = a.id;
        t->added[t->n_added++] = a;
    }
    return 0;
}

/* After the normalizer is loaded and the per-id tables are filled: the tries. Tokens with
 * normalized = true are matched by their normalized form, and that form is also their piece
 * for decoding (the library's id_to_token gives "▁xx" for such a token "xx" under Gemma's
 * normalizer). */
static void index_added(tokenizer *t) {
    for (int i = 0; i < t->n_added; i++) {
        added_token *a = &t->added[i];
        if (!a->normalized) {
            trie_insert(&t->raw_trie, a->content, (size_t)a->len, i);
            continue;
        }
        size_t n;
        char *norm = tokenizer_normalize(t, a->content, (size_t)a->len, &n);
        if (n) {
            trie_insert(&t->norm_trie, norm, n, i);
            t->piece[a->id] = arena_dup(t, norm, n);
            t->piece_len[a->id] = (int)n;
        }
        free(norm);
    }
}

static int load_post_processor(loader *L, const cJSON *root) {
    tokenizer *t = L->t;
    const cJSON *pp = cJSON_GetObjectItemCaseSensitive(root, "post_processor");
    if (!pp || cJSON_IsNull(pp)) return 0;
    const char *type = get_type(L, pp, "post_processor");
    if (!type) return -1;
    if (strcmp(type, "TemplateProcessing"))
        return load_fail(
            L, "post_processor: type \"%s\" is not supported (only TemplateProcessing)", type);
    const cJSON *single = cJSON_GetObjectItemCaseSensitive(pp, "single");
    const cJSON *specials = cJSON_GetObjectItemCaseSensitive(pp, "special_tokens");
    if (!cJSON_IsArray(single)) return load_fail(L, "post_processor.single: expected an array");
    t->has_template = 1;
    int seen_a = 0, i = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, single) {
        const cJSON *sp = cJSON_GetObjectItemCaseSensitive(it, "SpecialToken");
        const cJSON *seq = cJSON_GetObjectItemCaseSensitive(it, "Sequence");
        if (seq) {
            seen_a = 1;
        } else if (sp) {
            const char *name;
            char where[64];
            snprintf(where, sizeof where, "post_processor.single[%d].SpecialToken", i);
            if (get_str(L, sp, where, "id", 1, &name) < 0) return -1;
            const cJSON *entry = cJSON_GetObjectItemCaseSensitive(specials, name);
            const cJSON *ids = cJSON_GetObjectItemCaseSensitive(entry, "ids");
            if (!cJSON_IsArray(ids))
                return load_fail(L, "post_processor.special_tokens: \"%s\" missing or has no ids",
                                 name);
            const cJSON *idv;
            cJSON_ArrayForEach(idv, ids) {
                if (!cJSON_IsNumber(idv) || idv->valuedouble < 0 || idv->valuedouble >= INT_MAX)
                    return load_fail(L, "post_processor.special_tokens.%s.ids: expected ids", name);
                int **arr = seen_a ? &t->tmpl_post : &t->tmpl_pre;
                int *cnt = seen_a ? &t->n_tmpl_post : &t->n_tmpl_pre;
                *arr = xrealloc(*arr, (size_t)(*cnt + 1) * sizeof **arr);
                (*arr)[(*cnt)++] = (int)idv->valuedouble;
            }
        } else {
            return load_fail(L, "post_processor.single[%d]: expected SpecialToken or Sequence", i);
        }
        i++;
    }
    if (!seen_a) return load_fail(L, "post_processor.single: no Sequence entry");
    return 0;
}

static int find_first(const tokenizer *t, const char *const *names, int n) {
    for (int i = 0; i < n; i++) {
        int id = tokenizer_find(t, names[i]);
        if (id >= 0) return id;
    }
    return -1;
}

tokenizer *tokenizer_load(const char *path, char *err, size_t errlen) {
    size_t len;
    char *text = file_read_all(path, &len, err, errlen);
    if (!text) return NULL;
    tokenizer *t = xcalloc(1, sizeof *t);
    t->path = xstrdup(path);
    loader L = {t, err, errlen};
    cJSON *root = cJSON_ParseWithLength(text, len);
    int max_id = -1, rc = -1;
    if (!root) {
        const char *at = cJSON_GetErrorPtr();
        int line = 1;
        for (const char *p = text; at && p < at && p < text + len; p++)
            line += *p == '\n';
        load_fail(&L, "not valid JSON (near line %d)", line);
        goto done;
    }
    if (!cJSON_IsObject(root)) {
        load_fail(&L, "expected a JSON object at the top");
        goto done;
    }
    if (load_model(&L, root, &max_id) < 0 || load_added(&L, root, &max_id) < 0) goto done;
    const cJSON *c;
    if ((c = cJSON_GetObjectItemCaseSensitive(root, "normalizer")) && !cJSON_IsNull(c) &&
        load_normalizer(&L, c, "normalizer") < 0)
        goto done;
    if ((c = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer")) && !cJSON_IsNull(c) &&
        load_pretokenizer(&L, c, "pre_tokenizer") < 0)
        goto done;
    if ((c = cJSON_GetObjectItemCaseSensitive(root, "decoder")) && !cJSON_IsNull(c)) {
        t->has_decoder = 1;
        if (load_decoder(&L, c, "decoder") < 0) goto done;
    }
    if (load_post_processor(&L, root) < 0) goto done;
    if (max_id < 0) {
        load_fail(&L, "model.vocab: empty");
        goto done;
    }

    t->n_ids = max_id + 1;
    t->piece = xcalloc((size_t)t->n_ids, sizeof *t->piece);
    t->piece_len = xcalloc((size_t)t->n_ids, sizeof *t->piece_len);
    t->special = xcalloc((size_t)t->n_ids, 1);
    for (size_t i = 0; i < t->vocab.cap; i++) {
        const strmap_slot *s = &t->vocab.slots[i];
        if (s->id < 0) continue;
        if (t->piece[s->id]) {
            load_fail(&L, "model.vocab: id %d is given to both \"%s\" and \"%s\"", s->id,
                      t->piece[s->id], s->s);
            goto done;
        }
        t->piece[s->id] = s->s;
        t->piece_len[s->id] = s->len;
    }
    for (int i = 0; i < t->n_added; i++) {
        const added_token *a = &t->added[i];
        t->piece[a->id] = a->content;
        t->piece_len[a->id] = a->len;
        t->special[a->id] = (unsigned char)a->special;
    }
    for (int i = 0; i < t->n_tmpl_pre + t->n_tmpl_post; i++) {
        int id = i < t->n_tmpl_pre ? t->tmpl_pre[i] : t->tmpl_post[i - t->n_tmpl_pre];
        if (id >= t->n_ids) {
            load_fail(&L, "post_processor: id %d is outside the vocabulary (%d ids)", id, t->n_ids);
            goto done;
        }
    }
    index_added(t);

    static const char *bos[] = {"<bos>", "<s>"}, *eos[] = {"<eos>", "</s>", "<|endoftext|>"},
                      *pad[] = {"<pad>"};
    t->bos_id = t->n_tmpl_pre > 0 ? t->tmpl_pre[0] : find_first(t, bos, 2);
    t->eos_id = find_first(t, eos, 3);
    t->pad_id = find_first(t, pad, 1);
    rc = 0;
done:
    cJSON_Delete(root);
    free(text);
    if (rc < 0) {
        tokenizer_free(t);
        return NULL;
    }
    return t;
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    free(t->path);
    free(t->piece);
    free(t->piece_len);
    free(t->special);
    strmap_free(&t->vocab);
    u64map_free(&t->merges);
    free(t->added);
    u64map_free(&t->raw_trie.edges);
    free(t->raw_trie.terminal);
    u64map_free(&t->norm_trie.edges);
    free(t->norm_trie.terminal);
    free(t->norm);
    free(t->pretok);
    free(t->dec);
    free(t->tmpl_pre);
    free(t->tmpl_post);
    for (int i = 0; i < t->n_chunks; i++)
        free(t->chunks[i]);
    free(t->chunks);
    free(t);
}

/* ---------------------------------------------------------------------------------------- */
/* Getters                                                                                   */

const char *tokenizer_piece(const tokenizer *t, int id) {
    return id >= 0 && id < t->n_ids ? t->piece[id] : NULL;
}

int tokenizer_find(const tokenizer *t, const char *piece) {
    for (int i = t->n_added - 1; i >= 0; i--)
        if (!strcmp(t->added[i].content, piece)) return t->added[i].id;
    return strmap_get(&t->vocab, piece, strlen(piece));
}

int tokenizer_vocab_size(const tokenizer *t) {
    return t->n_ids;
}
int tokenizer_is_special(const tokenizer *t, int id) {
    return id >= 0 && id < t->n_ids && t->special[id];
}
int tokenizer_bos_id(const tokenizer *t) {
    return t->bos_id;
}
int tokenizer_eos_id(const tokenizer *t) {
    return t->eos_id;
}
int tokenizer_pad_id(const tokenizer *t) {
    return t->pad_id;
}
int tokenizer_unk_id(const tokenizer *t) {
    return t->unk_id;
}
