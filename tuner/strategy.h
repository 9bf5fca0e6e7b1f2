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

#include "space.h"

typedef enum {
    TRIAL_OK,         /* every metric measured and finite */
    TRIAL_INFEASIBLE, /* the engine reported, but a metric is null/infinite (with a reason) */
    TRIAL_FAILED      /* no result: crash, signal, timeout, garbage, missing metric */
} trial_status;

/* One finished point, aggregated over its repeats (median of each metric). */
typedef struct {
    const int *levels;     /* [n_params] */
    trial_status status;   /* OK if the median run was OK; FAILED if every run failed */
    double objective;      /* median objective; NAN unless status == TRIAL_OK */
    const double *cons;    /* [n_constraints] median of each constraint's metric; NAN when
                              failed, INFINITY when reported infinite (e.g. ppl null) */
    double objective_sd;   /* spread over repeats (0 for one run) */
    int n_runs;
} observation;

/* Constraint bounds after the baseline is applied: feasible iff value op bound. */
typedef struct {
    const constraint_def *def;
    double bound;
} resolved_constraint;

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
} strategy_ops;

/* The registry: grid, sobol, bayes. NULL for an unknown name. */
const strategy_ops *strategy_find(const char *name);

/* Shared helper: is this observation feasible under the resolved constraints? */
int observation_feasible(const observation *o, const resolved_constraint *rc, int n_rc);

#endif
