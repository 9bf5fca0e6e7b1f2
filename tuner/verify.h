/* verify.h: the held-out verification of a study's best candidates (DESIGN.md 4.2).
 *
 * The ranking. Every feasible point of the search but the baseline, in the strategy's rank
 * order when it has a rank hook, filled up from the measured order; then made diverse: each
 * next candidate is the best-ranked point that differs from every candidate before it in at
 * least two knobs (one in a one-knob space), or, when none does, the best-ranked one left.
 * Candidates that differ only in the window all share whatever the other knobs risk (a
 * keepset that misses held-out targets drops them all); diverse ones do not. At most
 * `verify.max_candidates` candidates are kept.
 *
 * Paired runs (a space with a baseline). Verification runs one engine at a time, on the
 * prompt set `verify.prompt_set`, as pairs: the baseline, then a candidate, the baseline,
 * the next candidate, ..., and a closing baseline run; each round takes the candidates in an
 * order rotated by one, so no candidate always follows the same one. A candidate's pair is
 * its run and the baseline runs just before and just after it (their geometric mean; the one
 * before while the one after has not run); trial ids give the order, so a resumed study
 * rebuilds the pairs from its journal. Its speed-up is exp(mean of log(candidate /
 * baseline)) over its pairs (for a minimised objective, baseline / candidate), with a t
 * interval (gsl_cdf_tdist_Pinv): log-ratios make the noise of a rate symmetric, the
 * baseline on both sides cancels a drift of the machine that is linear over the three runs,
 * and with 3 to 10 pairs the t interval keeps its coverage where a bootstrap has too few
 * distinct resamples and comes out too narrow. Each interval is at 1 - (1 - confidence) /
 * verify.top (Bonferroni): the answer is the best of several candidates, and the chance
 * that any of them looks faster by luck must stay under 1 - confidence.
 *
 * Adaptive repeats. A candidate gets at least max(2, verify.repeats) pairs, then more until
 * the interval's half-width on the speed-up is under `verify.precision`, its upper end is
 * under 1 (it cannot win), or it has `verify.max_repeats` runs. The `verify.top` best
 * candidates not dropped are verified side by side; one whose held-out run reports an
 * infinite metric, whose runs all fail, or whose held-out medians break a constraint is
 * dropped, and the next of the ranking takes its place, until `verify.top` survive or
 * `verify.max_candidates` have been tried.
 *
 * The answer. The winner is, among the surviving candidates whose held-out medians meet
 * every constraint (relative bounds use the baseline's held-out median) and whose speed-up
 * interval lies wholly above 1, the one with the largest speed-up. When none qualifies the
 * answer is the baseline itself ("no setting was measurably faster"), provided it meets the
 * constraints on the held-out prompts. So the answer is never a point measured slower than
 * the baseline.
 *
 * Without a baseline in the space there is nothing to pair with: each candidate is re-run
 * `verify.repeats` times, dropped candidates are still replaced down the ranking, and the
 * winner is the best verified median that meets every constraint.
 */
#ifndef VERIFY_H
#define VERIFY_H

#include <cjson/cJSON.h>

#include "space.h"
#include "strategy.h"
#include "trials.h"

typedef struct {
    int **points;     /* [n] the candidates, in the order they are tried (never the baseline) */
    int n;            /* candidates in the plan */
    int n_candidates; /* == n */
    int paired;       /* 1: the space has a baseline, runs are paired with it */
} verify_plan;

/* The plan from the finished tuning table t (rc: its resolved bounds). Deterministic: a
 * resumed study makes the same plan. Returns the number of candidates (0: no feasible
 * point other than the baseline). */
int verify_plan_make(const space *sp, const trial_table *t, const strategy_ops *ops, strategy *st,
                     const resolved_constraint *rc, verify_plan *vp);
void verify_plan_free(verify_plan *vp);
/* One line saying what the verification will do (a static buffer). */
const char *verify_plan_text(const space *sp, const verify_plan *vp);

/* The next verification run given the finished runs of vt (nothing may be in flight: the
 * runs are serial). Writes the point into levels and returns 1, or returns 0 when the
 * verification is over. */
int verify_next(const space *sp, const trial_table *vt, const verify_plan *vp, int *levels);

/* The speed-up of a candidate over the baseline from its pairs. */
typedef struct {
    int pairs;                  /* pairs with a figure on both sides */
    double estimate, low, high; /* exp(mean), interval at the confidence (NAN below 2 pairs) */
} verify_speedup;

/* The t interval at `confidence` of exp(mean of the log-ratios r[0..n-1]). */
verify_speedup verify_speedup_of(const double *log_ratios, int n, double confidence);
/* The confidence of each candidate's interval: 1 - (1 - verify.confidence) / verify.top. */
double verify_confidence_each(const space *sp);

typedef struct {
    int winner;               /* index of the winning candidate in the plan, -1: none */
    int t_index, vt_index;    /* the answer (winner, or baseline) in the tuning and
                                 verification tables (-1 when it has no runs there) */
    int baseline_answer;      /* 1: no candidate won and the baseline is the answer */
    resolved_constraint *vrc; /* [n_constraints] bounds applied to the verified figures */
    int bounds_ok;            /* every verified bound resolved */
    double gap;               /* answer: verified / measured - 1 of the objective */
    verify_speedup speedup;   /* the winner's (pairs 0 for the baseline answer) */
    char *summary;            /* one line: "1.31x [1.27, 1.35] over the baseline on ..." */
    cJSON *candidates;        /* array: one object per candidate tried (see verify.c) */
    char **warnings;          /* [n_warnings] */
    int n_warnings;
    int n_tried, n_dropped; /* candidates that had runs; of those, dropped */
} verify_outcome;

/* Judge the verification runs of vt against the plan. Fills *out (verify_outcome_free). */
void verify_judge(const space *sp, const trial_table *t, const trial_table *vt,
                  const verify_plan *vp, verify_outcome *out);
void verify_outcome_free(verify_outcome *out);

#endif
