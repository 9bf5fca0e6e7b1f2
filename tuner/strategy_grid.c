/* strategy_grid.c: exhaustive grid search.
 *
 * The full product of the parameters' levels in odometer order (the last parameter varies
 * fastest, as in nested for-loops written in parameter order). Each proposal is the first
 * point in that order that is neither observed nor pending, so the order survives resumes
 * and any mix of finished and running trials. Returns 0 once the lattice is exhausted. */
#include "strategy.h"
#include "util.h"
#include "visited.h"

#include <stdlib.h>

struct strategy {
    const space *sp;
};

static strategy *grid_create(const space *sp, uint64_t seed) {
    (void)seed; /* the grid order does not depend on the seed */
    strategy *s = xcalloc(1, sizeof *s);
    s->sp = sp;
    return s;
}

static int grid_propose(strategy *s, const observation *obs, int n_obs,
                        const resolved_constraint *rc, int n_rc, const int *const *pending,
                        int n_pending, int *levels) {
    (void)rc;
    (void)n_rc;
    visited_set v;
    visited_build(&v, s->sp, obs, n_obs, pending, n_pending);
    int found = visited_first_free(&v, s->sp, levels);
    visited_free(&v);
    return found;
}

static void grid_destroy(strategy *s) {
    free(s);
}

const strategy_ops strategy_grid_ops = {
    .name = "grid",
    .create = grid_create,
    .propose = grid_propose,
    .rank = NULL,
    .destroy = grid_destroy,
};
