/* strategy_bayes.h: the bayes strategy's state and its surrogates, shared by its two files
 * (internal: callers reach the strategy through strategy.h's bayes_ops).
 *
 * strategy_bayes.c proposes and ranks; strategy_bayes_models.c fits the GPs on the
 * observations, memoises them in the strategy, and scores points with them.
 */
#ifndef STRATEGY_BAYES_H
#define STRATEGY_BAYES_H

#include <stdint.h>

#include "gp.h"
#include "strategy.h"

#define BAYES_PICK_PF 0.95 /* rank(): minimum probability of feasibility */

/* The surrogates fitted on one set of observations. */
typedef struct {
    gp *obj;  /* objective (maximised: sign applied), NULL without an OK observation */
    gp **con; /* [n_con] constraint GPs on g <= 0 */
    int n_con;
    double sign; /* +1 maximise, -1 minimise */
    double best; /* incumbent: best posterior mean (signed) among measured-feasible points */
    int feasible_known;
} bayes_models;

struct strategy {
    const space *sp;
    uint64_t seed;
    int d;
    int *categorical; /* [d] */
    long n_points;    /* lattice size (saturated) */
    int lattice;      /* 1: candidates are the whole lattice */
    double *shift;    /* [d] Cranley-Patterson rotation of the Sobol sequences */
    int n_init;       /* initial-design size */
    int *level_off;   /* [d + 1] offset of each parameter's levels in a per-level array */
    double rel_noise; /* measured relative sd of one objective run; 0: not measured */

    uint64_t memo_key; /* hash of the observations the memoised models were fitted on */
    int memo_valid;
    bayes_models memo;
};

/* The inputs of the GPs at a point, into x[d]: int parameters at space_param_unit,
 * categorical ones as their level index. */
void bayes_point_features(const strategy *s, const int *levels, double *x);
/* The memoised surrogates for these observations (fitted now when the memo is stale). */
const bayes_models *bayes_models_get(strategy *s, const observation *obs, int n_obs,
                                     const resolved_constraint *rc, int n_rc);
void bayes_models_free(bayes_models *m);
/* Log probability that every constraint is met, at n points xs[n][d], into lpf[n]: by the
 * true value (latent f), or with noisy = 1 by one new measurement (f plus the learnt noise). */
void bayes_models_log_pf(const bayes_models *m, const double *xs, int n, int noisy, double *lpf);
/* Acquisition scores of n points xs[n][d] into score[n] (strategy_bayes.c, 5). */
void bayes_models_score(const bayes_models *m, const double *xs, long n, double *score);

#endif
