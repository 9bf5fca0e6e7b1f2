/* visited.h: a set of lattice points (level vectors), and the walk over the lattice in grid
 * order that grid search and Sobol's fallback share.
 *
 * Strategies rebuild their sets from the journal on every proposal (they keep no state of
 * their own): grid and Sobol the points they must not propose again (observed or pending);
 * Bayes the same, and its candidate points. It is a plain open-addressing hash set whose
 * points are also kept in the order they were first added (visited_point), so that a
 * strategy walking them is deterministic; building it is linear in the number of points. */
#ifndef VISITED_H
#define VISITED_H

#include "observation.h"
#include "space.h"

#include <stdbool.h>

typedef struct {
    int n_params;
    size_t cap;        /* slots, a power of two, at least twice count */
    size_t count;      /* distinct points stored */
    long *slot;        /* [cap] index of the point held in each slot, -1 when empty */
    int *levels;       /* [levels_cap * n_params] the points in the order they were added */
    size_t levels_cap; /* points levels has room for */
} visited_set;

/* An empty set of points of n_params levels, sized for about `expected` of them. */
void visited_init(visited_set *v, int n_params, size_t expected);
/* The distinct points among obs[].levels and pending[], each checked to lie on the lattice. */
void visited_build(visited_set *v, const space *sp, const observation *obs, int n_obs,
                   const int *const *pending, int n_pending);
/* Add a point; returns true when it was not in the set yet. */
bool visited_add(visited_set *v, const int *levels);
bool visited_has(const visited_set *v, const int *levels);
/* The k-th distinct point added, k < count ([n_params] levels). */
static inline const int *visited_point(const visited_set *v, size_t k) {
    return v->levels + k * (size_t)v->n_params;
}
void visited_free(visited_set *v);

/* Has every lattice point been visited? */
bool visited_covers_lattice(const visited_set *v, const space *sp);

/* The first lattice point in grid order (the last parameter varies fastest) that is not in
 * v, into levels[n_params]. Returns 1, or 0 when every point is visited. Visits at most
 * v->count + 1 points, so it is cheap whatever the size of the lattice. */
int visited_first_free(const visited_set *v, const space *sp, int *levels);

#endif
