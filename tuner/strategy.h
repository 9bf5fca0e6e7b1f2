/* strategy.h: the one small interface every search strategy implements.
 *
 * The sweep driver owns the journal, the runner and the budget; a strategy only answers
 * "which point next?" from what has been observed so far and what is still running. It
 * keeps no state that the journal cannot rebuild: given the same seed, observations and
 * pending points it must propose the same point, so a resumed study proposes exactly what
 * the uninterrupted one would have. Strategies never propose a point that is already
 * observed or pending (repeats are the driver's business, not the strategy's).
 */
#ifndef STRATEGY_H
#define STRATEGY_H

#include "observation.h"
#include "space.h"

typedef struct strategy strategy; /* each implementation defines its own struct */

typedef struct {
    const char *name;
    strategy *(*create)(const space *sp, uint64_t seed);
    /* Fill levels[n_params] with the next point. Returns 1 when it proposed one, 0 when the
     * strategy has nothing left to propose (the lattice is exhausted). */
    int (*propose)(strategy *s, const observation *obs, int n_obs, const resolved_constraint *rc,
                   int n_rc, const int *const *pending, int n_pending, int *levels);
    /* Optional (NULL: the driver ranks feasible points by measured median). Write into
     * order[] the indices of obs in the order the strategy recommends them (best first),
     * only points it believes feasible; return how many were written. */
    int (*rank)(strategy *s, const observation *obs, int n_obs, const resolved_constraint *rc,
                int n_rc, int *order);
    void (*destroy)(strategy *s);
    /* Optional (NULL: the strategy ignores it). The relative standard deviation of tokens/s
     * (stddev / mean, e.g. 0.08) that the sweep driver measured from repeats of the baseline at
     * the start; called after create and before the first propose, and again on resume with the
     * value rebuilt from the journal, so proposals stay a function of seed, observations, pending
     * points and this number. Values <= 0 or non-finite mean "not measured". */
    void (*set_noise)(strategy *s, double rel_noise);
} strategy_ops;

/* The registry: one entry for each name of space_strategy_names (space.h). NULL for an unknown
 * name. */
const strategy_ops *strategy_find(const char *name);

#endif
