/* trials.h: the journal's trial lines grouped by point and aggregated over repeats.
 *
 * The journal stores runs (one line per run of the engine); strategies, the manifest and
 * `tuner show` think in points. A trial_table groups the runs of each point (in the order
 * points first appeared) and keeps, per point, the median of the objective and of each
 * constraint metric over its runs that produced a result, with the spread. Null metrics
 * (reported infinite) count as +infinity; failed runs are left out of the medians.
 *
 * A trial record (one line of trials.jsonl) has these keys:
 *   id (int), phase ("baseline"|"warm"|"search"|"verify"), prompt_set ("tune"|"holdout"),
 *   point ({KNOB: "value"}), gpu (CUDA_VISIBLE_DEVICES of the run, only when pinned),
 *   levels ([int]), repeat (int, 0-based), status ("ok"|"infeasible"|"failed"),
 *   metrics (the engine's whole report, or null), reason (string|null), exit_code,
 *   signal, wall_s, started, finished (UTC ISO 8601), study_elapsed_s (wall time of the
 *   study at the end of this trial, summed over every session of it), node ({host, model}:
 *   where it ran, node.h), slurm ({name, job, step}: its Slurm job, slurm.h).
 */
#ifndef TRIALS_H
#define TRIALS_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "space.h"
#include "strategy.h"

typedef struct {
    char *key;          /* "K1=V1,K2=V2" as recorded, in parameter order */
    int *levels;        /* [n_params] */
    int baseline;       /* some run of it had phase "baseline" (verify table: it is the
                           space's baseline point) */
    const char *phase;  /* phase of its first run (not owned) */
    const cJSON **runs; /* [n_runs] its trial records, in journal order (not owned) */
    int n_runs;
    /* aggregate over the runs that produced a result (ok or infeasible) */
    int n_measured;      /* such runs */
    trial_status status; /* FAILED when n_measured == 0 */
    double objective;    /* median (NAN when n_measured == 0) */
    double objective_sd; /* sample standard deviation (0 for one run) */
    double objective_min, objective_max;
    double *cons;       /* [n_constraints] medians (NAN when failed, INFINITY when null) */
    const char *reason; /* the reason of the latest run that had one (not owned) */
    observation obs;    /* the strategies' view of this point (points into the above) */
} point_stats;

typedef struct {
    const space *sp;     /* needs objective, maximize, constraints, params[].name, n_params */
    point_stats *points; /* [n_points] in order of first appearance */
    int n_points;
    long max_id;          /* largest trial id seen (0 when none) */
    double study_elapsed; /* largest study_elapsed_s seen */
    int n_runs;           /* trial records in the table */
    int verify;           /* 1: holds the phase "verify" records, 0: the tuning phases */
} trial_table;

trial_table *trials_new(const space *sp);
trial_table *trials_new_verify(const space *sp);
void trials_free(trial_table *t);

/* Add one record (kept by reference: it must outlive the table). `where` names the
 * journal line for messages. Returns the point's index; TRIALS_OTHER_PHASE for a record
 * of a phase the table does not hold (a verification run in the tuning table, a tuning run
 * in the verification table), which counts for ids and study time but not for the medians;
 * or
 * TRIALS_BAD with err set when the record does not fit the space (wrong keys, levels out
 * of range). */
enum { TRIALS_BAD = -1, TRIALS_OTHER_PHASE = -2 };
int trials_add(trial_table *t, const cJSON *record, const char *where, char *err, size_t errlen);

/* Index of the point with these levels, or -1. */
int trials_find(const trial_table *t, const int *levels);

/* Bounds of the constraints: relative ones multiply the baseline point's median. Returns 1
 * when every bound is resolved; 0 when a relative constraint has no usable baseline value
 * (then *why says which). rc must hold n_constraints entries. */
int trials_resolve(const trial_table *t, resolved_constraint *rc, const char **why);

/* Order of the points for reports: feasible by objective (best first), then measured but
 * infeasible (by objective), then failed. Writes n_points indices; returns how many are
 * feasible. */
int trials_order(const trial_table *t, const resolved_constraint *rc, int *order);

/* Is value better than other under the objective's direction (NAN always loses)? */
int trials_better(const trial_table *t, double value, double other);

const char *trial_status_name(trial_status s);

#endif
