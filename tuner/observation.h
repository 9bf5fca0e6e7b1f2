/* observation.h: what the search knows of one finished point, and the feasibility rule.
 *
 * The sweep aggregates a point's runs into an observation; strategies, verification, the
 * table and the report all judge feasibility with the one rule here, against the constraint
 * bounds once the baseline is applied. */
#ifndef OBSERVATION_H
#define OBSERVATION_H

#include "space.h"

typedef enum {
    TRIAL_OK,         /* every metric measured and finite */
    TRIAL_INFEASIBLE, /* the engine reported, but a metric is null/infinite (with a reason) */
    TRIAL_FAILED      /* no result: crash, signal, timeout, garbage, missing metric */
} trial_status;

/* One finished point, aggregated over its repeats (median of each metric). */
typedef struct {
    const int *levels;   /* [n_params] */
    trial_status status; /* OK if the median run was OK; FAILED if every run failed */
    double objective;    /* median objective; NAN unless status == TRIAL_OK */
    const double *cons;  /* [n_constraints] median of each constraint's metric; NAN when
                            failed, INFINITY when reported infinite (e.g. ppl null) */
    double objective_sd; /* spread over repeats (0 for one run) */
    int n_runs;
} observation;

/* Constraint bounds after the baseline is applied: feasible iff value op bound. */
typedef struct {
    const constraint_def *def;
    double bound;
} resolved_constraint;

/* Is this observation feasible under the resolved constraints? */
int observation_feasible(const observation *o, const resolved_constraint *rc, int n_rc);

#endif
