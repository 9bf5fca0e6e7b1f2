/* verify.h: the held-out verification of a study's best candidates (DESIGN.md 4.2).
 *
 * After the search, the top `verify.top` feasible points (in the strategy's rank order
 * when it has a rank hook, else by measured median; the rank's list is filled up from the
 * measured order when it names fewer) are re-run `verify.repeats` times on the prompt set
 * `verify.prompt_set` (holdout by default), journaled as phase "verify". When a constraint
 * is relative to the baseline, the baseline point is re-run on that prompt set too, and the
 * relative bounds of the verified figures use its verified median: a held-out set may shift
 * every point's ppl, and the budget is relative to what the baseline scores on the same
 * prompts.
 *
 * The winner is the candidate with the best verified median among those whose verified
 * figures meet every constraint; only such a point may become the manifest. For each
 * candidate the outcome records measured against verified medians and the relative gap
 * (verified / measured - 1); a winner whose objective gap exceeds `verify.tolerance` in
 * magnitude gets a warning, and so does every candidate dropped because its verified
 * figures break the budget.
 */
#ifndef VERIFY_H
#define VERIFY_H

#include <cjson/cJSON.h>

#include "space.h"
#include "strategy.h"
#include "trials.h"

typedef struct {
    int **points;     /* [n] levels to re-run: candidates (best first), then maybe the baseline */
    int n;            /* points in the plan */
    int n_candidates; /* the first n_candidates points are the candidates */
} verify_plan;

/* The plan from the finished tuning table t (rc: its resolved bounds). Deterministic: a
 * resumed study makes the same plan. Returns the number of candidates (0: no feasible
 * point, nothing to verify). */
int verify_plan_make(const space *sp, const trial_table *t, const strategy_ops *ops, strategy *st,
                     const resolved_constraint *rc, verify_plan *vp);
void verify_plan_free(verify_plan *vp);

typedef struct {
    int winner;               /* index of the winning candidate in the plan, -1: none */
    int t_index, vt_index;    /* the winner in the tuning and verification tables */
    resolved_constraint *vrc; /* [n_constraints] bounds applied to the verified figures */
    int bounds_ok;            /* every verified bound resolved */
    double gap;               /* winner: verified / measured - 1 of the objective */
    cJSON *candidates;        /* array: one object per candidate (see verify.c) */
    char **warnings;          /* [n_warnings] */
    int n_warnings;
} verify_outcome;

/* Judge the verification runs of vt against the plan. Fills *out (verify_outcome_free). */
void verify_judge(const space *sp, const trial_table *t, const trial_table *vt,
                  const verify_plan *vp, verify_outcome *out);
void verify_outcome_free(verify_outcome *out);

#endif
