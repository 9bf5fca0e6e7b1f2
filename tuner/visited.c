/* visited.c: see visited.h. */
#include "visited.h"
#include "util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_levels(const int *levels, int n) {
    uint64_t h = 14695981039346656037ULL; /* FNV-1a over the level values */
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(unsigned)levels[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The slot holding levels, or the empty slot where it would go. */
static size_t find_slot(const visited_set *v, const int *levels) {
    size_t mask = v->cap - 1, i = (size_t)hash_levels(levels, v->n_params) & mask;
    size_t width = (size_t)v->n_params * sizeof(int);
    while (v->slot[i] >= 0 && memcmp(visited_point(v, (size_t)v->slot[i]), levels, width) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Room for cap slots (a power of two), all empty. */
static void slots_reset(visited_set *v, size_t cap) {
    free(v->slot);
    v->cap = cap;
    v->slot = xmalloc(cap * sizeof(long));
    for (size_t i = 0; i < cap; i++)
        v->slot[i] = -1;
}

void visited_init(visited_set *v, int n_params, size_t expected) {
    size_t cap = 16;
    while (cap < 2 * expected + 2)
        cap *= 2;
    v->n_params = n_params;
    v->count = 0;
    v->slot = NULL;
    slots_reset(v, cap);
    v->levels_cap = expected > 16 ? expected : 16;
    v->levels = xmalloc(v->levels_cap * (size_t)n_params * sizeof(int));
}

bool visited_add(visited_set *v, const int *levels) {
    size_t i = find_slot(v, levels);
    if (v->slot[i] >= 0) return false;
    if (v->count == v->levels_cap) {
        v->levels_cap *= 2;
        v->levels = xrealloc(v->levels, v->levels_cap * (size_t)v->n_params * sizeof(int));
    }
    memcpy(v->levels + v->count * (size_t)v->n_params, levels, (size_t)v->n_params * sizeof(int));
    v->slot[i] = (long)v->count++;
    if (2 * v->count > v->cap) { /* keep the load factor at most one half: grow and rehash */
        slots_reset(v, 2 * v->cap);
        for (size_t k = 0; k < v->count; k++)
            v->slot[find_slot(v, visited_point(v, k))] = (long)k;
    }
    return true;
}

bool visited_has(const visited_set *v, const int *levels) {
    return v->slot[find_slot(v, levels)] >= 0;
}

void visited_free(visited_set *v) {
    free(v->levels);
    free(v->slot);
    v->levels = NULL;
    v->slot = NULL;
    v->cap = v->count = v->levels_cap = 0;
}

static void check_on_lattice(const space *sp, const int *levels) {
    for (int i = 0; i < sp->n_params; i++)
        if (levels[i] < 0 || levels[i] >= sp->params[i].n_levels)
            die("point has level %d for parameter %s, which has %d levels", levels[i],
                sp->params[i].name, sp->params[i].n_levels);
}

void visited_build(visited_set *v, const space *sp, const observation *obs, int n_obs,
                   const int *const *pending, int n_pending) {
    visited_init(v, sp->n_params, (size_t)n_obs + (size_t)n_pending);
    for (int i = 0; i < n_obs; i++) {
        check_on_lattice(sp, obs[i].levels);
        visited_add(v, obs[i].levels);
    }
    for (int i = 0; i < n_pending; i++) {
        check_on_lattice(sp, pending[i]);
        visited_add(v, pending[i]);
    }
}

bool visited_covers_lattice(const visited_set *v, const space *sp) {
    long n = space_n_points(sp);
    return n != LONG_MAX && (long)v->count >= n;
}

int visited_first_free(const visited_set *v, const space *sp, int *levels) {
    if (visited_covers_lattice(v, sp)) return 0;
    memset(levels, 0, (size_t)sp->n_params * sizeof *levels);
    for (;;) {
        if (!visited_has(v, levels)) return 1;
        int i = sp->n_params - 1; /* odometer step: the last parameter varies fastest */
        while (i >= 0 && ++levels[i] == sp->params[i].n_levels)
            levels[i--] = 0;
        if (i < 0) return 0; /* wrapped around: every point is visited */
    }
}
