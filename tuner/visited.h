/* visited.h: the set of points a strategy must not propose again (observed or pending), and
 * the walk over the lattice in grid order that grid search and Sobol's fallback share.
 *
 * Strategies rebuild this set from the journal on every proposal (they keep no state of
 * their own), so it is a plain open-addressing hash set of level vectors: building it is
 * linear in the number of points seen. */
#ifndef VISITED_H
#define VISITED_H

#include "strategy.h"

#include <stdbool.h>

typedef struct {
    int n_params;
    size_t cap;   /* slots, a power of two */
    size_t count; /* distinct points stored */
    int *levels;  /* [cap * n_params] the stored points */
    bool *used;   /* [cap] whether each slot holds a point */
} visited_set;

/* The distinct points among obs[].levels and pending[], each checked to lie on the lattice. */
void visited_build(visited_set *v, const space *sp, const observation *obs, int n_obs,
                   const int *const *pending, int n_pending);
void visited_add(visited_set *v, const int *levels);
bool visited_has(const visited_set *v, const int *levels);
void visited_free(visited_set *v);

/* Has every lattice point been visited? */
bool visited_covers_lattice(const visited_set *v, const space *sp);

/* The first lattice point in grid order (the last parameter varies fastest) that is not in
 * v, into levels[n_params]. Returns 1, or 0 when every point is visited. Visits at most
 * v->count + 1 points, so it is cheap whatever the size of the lattice. */
int visited_first_free(const visited_set *v, const space *sp, int *levels);

#endif
