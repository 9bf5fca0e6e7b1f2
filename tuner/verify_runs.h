/* verify_runs.h: where each verification candidate stands, rebuilt from the journaled runs
 * (internal to verify.c; the rules are in verify.h).
 *
 * The verification keeps no state of its own: from the runs of the verification table,
 * taken in trial-id order, it rebuilds each candidate's runs and pairs (a candidate run
 * right after a baseline run), its log-ratios and interval, and whether it is still being
 * measured, done, or dropped; and from that which candidates are in play. The scheduler
 * (verify_next) and the judge (verify_judge) both read this one picture, so a resumed
 * study continues exactly where the journal stops.
 */
#ifndef VERIFY_RUNS_H
#define VERIFY_RUNS_H

#include "verify.h"

typedef enum {
    CAND_UNTRIED,   /* no run yet */
    CAND_MEASURING, /* runs, but not enough to judge */
    CAND_DONE,      /* judged: interval narrow enough, hopeless, or at its cap */
    CAND_DROPPED    /* an infinite metric, every run failed, or a constraint broken */
} cand_phase;

typedef enum {
    DROP_NONE,
    DROP_INFINITE,   /* a held-out run reported an infinite metric */
    DROP_FAILED,     /* every run failed */
    DROP_UNRESOLVED, /* the relative bounds could not be resolved on the held-out prompts */
    DROP_BROKEN      /* the held-out medians break a constraint */
} drop_reason;

typedef struct {
    int vi;          /* the candidate's point in the verification table, -1: none yet */
    int n_runs;      /* its runs, failed ones included */
    int n_pairs;     /* pairs with a figure on both sides */
    double *lr;      /* [n_pairs] log-ratios, > 0: better than the baseline */
    const char *why; /* the reason an infinite run gave (not owned) */
    cand_phase phase;
    drop_reason drop;
    int in_play; /* among the candidates being verified (the window down the ranking) */
    verify_speedup su;
} cand_state;

typedef struct {
    cand_state *c; /* [n] in plan order */
    int n;
    int base_vi;              /* the baseline in the verification table, -1: none */
    int last_is_baseline;     /* the latest run is a baseline run still waiting for its candidate */
    resolved_constraint *vrc; /* [n_constraints + 1] bounds on the held-out figures */
    int bounds_ok;
    const char *why; /* why bounds_ok is 0 */
} verify_state;

void verify_state_build(const space *sp, const trial_table *vt, const verify_plan *vp,
                        verify_state *vs);
void verify_state_free(verify_state *vs);

#endif
