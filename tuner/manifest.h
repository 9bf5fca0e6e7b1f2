/* manifest.h: the sweep's answer, out/<study>/manifest.json (DESIGN.md 4.2), and the
 * `tuner env` command that turns it back into a shell environment.
 *
 * The manifest holds, for the best feasible point: "env" (the space's fixed env plus the
 * chosen knobs, every value a string: run the engine command under it to reproduce),
 * "measured" (median and spread of every numeric metric over the point's runs on the tuning
 * prompts), "verified" (the same over its re-runs on the held-out prompts, with the
 * constraints re-checked on them), "gap" (verified / measured - 1 per metric of the space),
 * "verification" (the rules: confidence, precision, repeats; the outcome: "winner" or
 * "baseline", the summary line, the winner's speed-up over the baseline with its interval
 * and pairs; every candidate with its measured and verified figures, speed-up and verdict,
 * and why the dropped ones were dropped), "noise" (the relative sd of the baseline's
 * objective at the start), "warnings" (a gap over the tolerance, dropped candidates), the
 * objective, the constraints with their resolved bounds, the budget and how much of it was
 * used, the engine command and working directory, the device the engine reported, the
 * study and the time, and "allow_env" when the space has it (the risky names `tuner env`
 * may export). It is written atomically (tmp, fsync, rename).
 */
#ifndef MANIFEST_H
#define MANIFEST_H

#include <stdio.h>

#include "space.h"
#include "strategy.h"
#include "trials.h"

/* What the verification found for the answer (verify.h): a winner, or the baseline. */
typedef struct {
    const point_stats *point;      /* its runs on the held-out prompts (NULL: none) */
    const resolved_constraint *rc; /* [n_constraints] bounds applied to the verified figures */
    double gap;                    /* objective: verified / measured - 1 */
    const cJSON *candidates;       /* every candidate's verdict (copied into the manifest) */
    const char *const *warnings;   /* [n_warnings] */
    int n_warnings;
    const char *summary; /* "1.31x [1.27, 1.35] over the baseline on ..., 6 pairs" */
    int baseline_answer; /* 1: no setting was measurably faster; this is the baseline */
    int pairs;           /* the winner's pairs with the baseline (0: none) */
    double speedup[3];   /* estimate, low, high of its speed-up (NAN: none) */
    double noise;        /* relative sd of the baseline's objective (NAN: not measured) */
} manifest_verified;

typedef struct {
    const char *study;                 /* study name */
    const char *study_dir;             /* out/<study> */
    double wall_used_s;                /* study wall time so far (all sessions) */
    const manifest_verified *verified; /* the verification of the winner (required) */
} manifest_info;

/* Build the manifest of point `best` of t (a feasible point that passed verification).
 * Caller frees (cJSON_Delete). */
cJSON *manifest_build(const space *sp, const trial_table *t, int best,
                      const resolved_constraint *rc, const manifest_info *info);

/* Write it to study_dir/manifest.json atomically. Returns 1, or 0 with err naming the file. */
int manifest_write(const cJSON *manifest, const char *study_dir, char *err, size_t errlen);

/* The manifest already in study_dir when it says what m says (its creation time and the
 * study's wall time aside), else NULL. Caller frees. */
cJSON *manifest_unchanged(const cJSON *m, const char *study_dir);

/* Print `export K='V'` lines for the "env" of the manifest file at path. Returns 1, or 0
 * with err naming the file (and key) when it is not a manifest a shell can use. */
int manifest_print_env(const char *path, FILE *out, char *err, size_t errlen);

#endif
