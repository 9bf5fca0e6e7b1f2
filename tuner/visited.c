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
    while (v->used[i] && memcmp(&v->levels[i * (size_t)v->n_params], levels, width) != 0)
        i = (i + 1) & mask;
    return i;
}

static void init(visited_set *v, int n_params, size_t expected) {
    v->n_params = n_params;
    v->cap = 16;
    while (v->cap < 2 * expected + 2)
        v->cap *= 2;
    v->count = 0;
    v->levels = xcalloc(v->cap * (size_t)n_params, sizeof(int));
    v->used = xcalloc(v->cap, sizeof(bool));
}

void visited_add(visited_set *v, const int *levels) {
    if (2 * (v->count + 1) > v->cap) { /* keep the load factor at most one half */
        visited_set bigger;
        init(&bigger, v->n_params, v->cap);
        for (size_t i = 0; i < v->cap; i++)
            if (v->used[i]) visited_add(&bigger, &v->levels[i * (size_t)v->n_params]);
        visited_free(v);
        *v = bigger;
    }
    size_t i = find_slot(v, levels);
    if (v->used[i]) return;
    memcpy(&v->levels[i * (size_t)v->n_params], levels, (size_t)v->n_params * sizeof(int));
    v->used[i] = true;
    v->count++;
}

bool visited_has(const visited_set *v, const int *levels) {
    return v->used[find_slot(v, levels)];
}

void visited_free(visited_set *v) {
    free(v->levels);
    free(v->used);
    v->levels = NULL;
    v->used = NULL;
    v->cap = v->count = 0;
}

static void check_on_lattice(const space *sp, const int *levels) {
    for (int i = 0; i < sp->n_params; i++)
        if (levels[i] < 0 || levels[i] >= sp->params[i].n_levels)
            die("point has level %d for parameter %s, which has %d levels", levels[i],
                sp->params[i].name, sp->params[i].n_levels);
}

void visited_build(visited_set *v, const space *sp, const observation *obs, int n_obs,
                   const int *const *pending, int n_pending) {
    init(v, sp->n_params, (size_t)n_obs + (size_t)n_pending);
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
