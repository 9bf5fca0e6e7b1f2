/* tokenizer_internal.h: the tokenizer's data, shared by its source files:
 * tokenizer.c (loading tokenizer.json into this struct, the small getters),
 * tokenizer_encode.c (text -> ids), tokenizer_decode.c (ids -> text) and tokenizer_maps.c
 * (the hash maps).
 * Nothing outside engine/tokenizer*.c includes it. */
#ifndef TOKENIZER_INTERNAL_H
#define TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* Open-addressing hash map from a 64-bit key to a 64-bit value (keys != UINT64_MAX). Used
 * for BPE merges ((left << 32) | right -> (rank << 32) | merged id) and for the added-token
 * trie's edges ((node << 8) | byte -> child node). */
typedef struct {
    uint64_t key; /* UINT64_MAX = empty */
    uint64_t val;
} u64map_slot;
typedef struct {
    u64map_slot *slots; /* [cap]: key and value side by side, one cache line per probe */
    size_t cap;         /* power of two */
    size_t n;
} u64map;

void u64map_init(u64map *m, size_t expected);
void u64map_free(u64map *m);
void u64map_put(u64map *m, uint64_t key, uint64_t val);
/* 1 and *val when the key is present, else 0. */
int u64map_get(const u64map *m, uint64_t key, uint64_t *val);

/* Open-addressing hash map from a byte string to an id (the model vocabulary). The strings
 * are not owned: they live in the tokenizer's arena. */
typedef struct {
    const char *s;
    int len;
    int id; /* -1 = empty slot */
} strmap_slot;
typedef struct {
    strmap_slot *slots; /* [cap] */
    size_t cap;         /* power of two */
    size_t n;
} strmap;

void strmap_init(strmap *m, size_t expected);
void strmap_free(strmap *m);
/* Inserts and returns -1; when the string is already present, changes nothing and returns
 * its id. */
int strmap_put(strmap *m, const char *s, int len, int id);
int strmap_get(const strmap *m, const char *s, size_t len); /* -1 when absent */

/* A byte trie over the contents of added tokens, for leftmost-longest matching. */
typedef struct {
    u64map edges;  /* (node << 8) | byte -> child node; node 0 is the root */
    int *terminal; /* [n_nodes] index into tokenizer.added of the token ending here, or -1 */
    int n_nodes;
    int cap_nodes;
    int root[256]; /* the root's children without a hash look-up; 0 = none */
    int n_tokens;  /* tokens inserted (0: nothing to match) */
} added_trie;

typedef struct {
    const char *content; /* the text matched in the input (arena) */
    int len;
    int id;
    int special, lstrip, rstrip, single_word, normalized;
} added_token;

/* Components, each flattened from the file's Sequence into a list of steps. */
typedef enum { NORM_REPLACE, NORM_PREPEND, NORM_STRIP } norm_kind;
typedef struct {
    norm_kind kind;
    const char *a; /* REPLACE: pattern; PREPEND: the prefix */
    int alen;
    const char *b; /* REPLACE: replacement */
    int blen;
    int left, right; /* STRIP: which sides */
} norm_step;

typedef enum {
    SPLIT_REMOVED,
    SPLIT_ISOLATED,
    SPLIT_MERGED_WITH_PREVIOUS,
    SPLIT_MERGED_WITH_NEXT,
    SPLIT_CONTIGUOUS
} split_behavior;
typedef enum { PRETOK_SPLIT, PRETOK_METASPACE } pretok_kind;
typedef enum { PREPEND_ALWAYS, PREPEND_FIRST, PREPEND_NEVER } prepend_scheme;
typedef struct {
    pretok_kind kind;
    const char *pattern; /* SPLIT: the string split on; METASPACE: the replacement char */
    int plen;
    split_behavior behavior; /* SPLIT */
    int invert;              /* SPLIT */
    prepend_scheme scheme;   /* METASPACE */
    int split;               /* METASPACE: split on the replacement too */
} pretok_step;

typedef enum { DEC_REPLACE, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP, DEC_METASPACE } dec_kind;
typedef struct {
    dec_kind kind;
    const char *a; /* REPLACE: pattern; STRIP: the char; METASPACE: the replacement */
    int alen;
    const char *b; /* REPLACE: replacement */
    int blen;
    int start, stop;       /* STRIP: how many to strip at each end */
    prepend_scheme scheme; /* METASPACE */
} dec_step;

struct tokenizer {
    char *path; /* for messages */

    /* Every id's piece: model vocabulary plus added tokens (an added token wins). */
    int n_ids;
    const char **piece;     /* [n_ids], NULL for ids that have none */
    int *piece_len;         /* [n_ids] */
    unsigned char *special; /* [n_ids] 1 for added tokens marked special */

    /* BPE model */
    strmap vocab;  /* model vocabulary only */
    u64map merges; /* (a << 32) | b -> (rank << 32) | merged id */
    int unk_id;    /* -1 when the model has no unk_token */
    int byte_fallback, fuse_unk, ignore_merges;
    int byte_id[256];  /* id of "<0xNN>", -1 when absent */
    int ascii_id[128]; /* id of each one-byte piece, -1 when absent (a fast path) */

    /* Added tokens, matched before everything else. */
    added_token *added; /* [n_added] */
    int n_added;
    added_trie raw_trie;  /* tokens with normalized = false: matched on the raw text */
    added_trie norm_trie; /* tokens with normalized = true: matched on normalized text */

    norm_step *norm; /* [n_norm] */
    int n_norm;
    pretok_step *pretok; /* [n_pretok] */
    int n_pretok;
    dec_step *dec; /* [n_dec] */
    int n_dec;
    int has_decoder; /* 0: pieces are joined with a space, as `tokenizers` does */

    /* Post-processor template for a single sequence: ids before and after it. */
    int has_template;
    int *tmpl_pre; /* [n_tmpl_pre] */
    int n_tmpl_pre;
    int *tmpl_post; /* [n_tmpl_post] */
    int n_tmpl_post;

    int bos_id, eos_id, pad_id;

    /* Arena holding every string above. */
    char **chunks; /* [n_chunks] */
    int n_chunks;
    size_t chunk_used, chunk_cap;
};

/* Run the normalizer over s[0..n): a malloc'd NUL-terminated result, its length in *out_n. */
char *tokenizer_normalize(const tokenizer *t, const char *s, size_t n, size_t *out_n);

/* Decode one UTF-8 code point at s[0..n): its byte length, or 0 when the bytes are not
 * valid UTF-8 (overlong forms, surrogates and values past U+10FFFF included). */
int utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* Unicode White_Space (Rust's char::is_whitespace). */
int unicode_is_space(uint32_t cp);

#endif
