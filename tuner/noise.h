/* noise.h: how noisy the machine is, measured rather than assumed.
 *
 * A sweep with a baseline runs it NOISE_BASELINE_RUNS times (or `repeats` times when that
 * is more) before anything else; the relative standard deviation of the objective over
 * those runs (sd / mean) is the study's noise. The driver prints it, warns when it is over
 * NOISE_HIGH, hands it to the strategy (strategy_ops.set_noise), and uses it for how many
 * runs a promising point gets: on a noisy machine a point whose first runs put it near the
 * best feasible one (within one noise sd of it, or better) gets enough runs for its median's
 * relative standard error to reach NOISE_TARGET_SE, at most NOISE_MAX_EXTRA runs more than
 * `repeats`. Only challengers of the best get them, so a noisy machine costs a few runs,
 * not a multiple of the budget. Everything is a function of the trial table, so a resumed study
 * rebuilds the same noise and makes the same decisions.
 */
#ifndef NOISE_H
#define NOISE_H

#include "space.h"
#include "trials.h"

enum { NOISE_BASELINE_RUNS = 3, NOISE_MAX_EXTRA = 2 };
#define NOISE_HIGH      0.05
#define NOISE_TARGET_SE 0.03

/* Runs the baseline gets at the start: max(repeats, NOISE_BASELINE_RUNS). */
int noise_baseline_runs(const space *sp);

/* The relative standard deviation of the objective over the baseline's runs in the tuning
 * table t (the point with phase "baseline"), with how many runs it rests on in *n_runs; NAN
 * when there is no baseline or fewer than 2 of its runs have a figure. */
double noise_measure(const space *sp, const trial_table *t, int *n_runs);

/* How many runs point i of t should have: `repeats` (the baseline: noise_baseline_runs),
 * or more for a promising point on a noisy machine (see above). rc: the resolved bounds. */
int noise_runs_wanted(const space *sp, const trial_table *t, const resolved_constraint *rc,
                      double rel_noise, int i);

/* "tps of the baseline over 3 runs: relative sd 4.2 %" into buf. */
void noise_text(const space *sp, double rel_noise, int n_runs, char *buf, size_t n);

#endif
