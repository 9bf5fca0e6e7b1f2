/* tokenizer_maps.c: the tokenizer's two open-addressing hash maps (declared in
 * tokenizer_internal.h): u64map, from a 64-bit key to a 64-bit value (BPE merges, the
 * added-token trie's edges), and strmap, from a byte string to an id (the vocabulary).
 * Linear probing, power-of-two capacities, grown at half full; nothing is ever removed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer_internal.h"
#include "util.h"

static uint64_t hash_u64(uint64_t x) { /* splitmix64's finalizer */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hash_bytes(const char *s, size_t n) { /* FNV-1a, then mixed */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return hash_u64(h);
}

static size_t pow2_at_least(size_t n) {
    size_t c = 16;
    while (c < n)
        c <<= 1;
    return c;
}

void u64map_init(u64map *m, size_t expected) {
    m->cap = pow2_at_least(expected * 2 + 1);
    m->n = 0;
    m->slots = xmalloc(m->cap * sizeof *m->slots);
    for (size_t i = 0; i < m->cap; i++)
        m->slots[i].key = UINT64_MAX;
}

void u64map_free(u64map *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static void u64map_grow(u64map *m) {
    u64map bigger;
    u64map_init(&bigger, m->cap);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key != UINT64_MAX) u64map_put(&bigger, m->slots[i].key, m->slots[i].val);
    u64map_free(m);
    *m = bigger;
}

void u64map_put(u64map *m, uint64_t key, uint64_t val) {
    CHECK(key != UINT64_MAX);
    if ((m->n + 1) * 2 > m->cap) u64map_grow(m);
    size_t i = hash_u64(key) & (m->cap - 1);
    while (m->slots[i].key != UINT64_MAX && m->slots[i].key != key)
        i = (i + 1) & (m->cap - 1);
    if (m->slots[i].key == UINT64_MAX) m->n++;
    m->slots[i] = (u64map_slot){key, val};
}

int u64map_get(const u64map *m, uint64_t key, uint64_t *val) {
    if (!m->cap) return 0;
    size_t i = hash_u64(key) & (m->cap - 1);
    while (m->slots[i].key != UINT64_MAX) {
        if (m->slots[i].key == key) {
            *val = m->slots[i].val;
            return 1;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

void strmap_init(strmap *m, size_t expected) {
    m->cap = pow2_at_least(expected * 2 + 1);
    m->n = 0;
    m->slots = xmalloc(m->cap * sizeof *m->slots);
    for (size_t i = 0; i < m->cap; i++)
        m->slots[i].id = -1;
}

void strmap_free(strmap *m) {
    free(m->slots);
    memset(m, 0, sizeof *m);
}

int strmap_put(strmap *m, const char *s, int len, int id) {
    if ((m->n + 1) * 2 > m->cap) {
        strmap bigger;
        strmap_init(&bigger, m->cap);
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[i].id >= 0)
                strmap_put(&bigger, m->slots[i].s, m->slots[i].len, m->slots[i].id);
        strmap_free(m);
        *m = bigger;
    }
    size_t i = hash_bytes(s, (size_t)len) & (m->cap - 1);
    while (m->slots[i].id >= 0) {
        if (m->slots[i].len == len && memcmp(m->slots[i].s, s, (size_t)len) == 0)
            return m->slots[i].id;
        i = (i + 1) & (m->cap - 1);
    }
    m->slots[i] = (strmap_slot){s, len, id};
    m->n++;
    return -1;
}

int strmap_get(const strmap *m, const char *s, size_t len) {
    if (!m->cap) return -1;
    size_t i = hash_bytes(s, len) & (m->cap - 1);
    while (m->slots[i].id >= 0) {
        if ((size_t)m->slots[i].len == len && memcmp(m->slots[i].s, s, len) == 0)
            return m->slots[i].id;
        i = (i + 1) & (m->cap - 1);
    }
    return -1;
}
