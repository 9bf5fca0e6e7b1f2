/* sweep_state.h: one sweep session's state, shared by the files of the sweep (internal).
 *
 * sweep.c drives the session (the study claimed, the loop, the end); sweep_run.c starts a run
 * in a worker slot and journals it when it ends; sweep_plan.c prints the plan and does
 * --dry-run. All three work on this one struct, which only sweep_main creates.
 */
#ifndef SWEEP_STATE_H
#define SWEEP_STATE_H

#include <stdio.h>

#include "conditions.h"
#include "journal.h"
#include "progress.h"
#include "space.h"
#include "strategy.h"
#include "sweep.h"
#include "trials.h"
#include "verify.h"
#include "warmstart.h"
#include "workers.h"

enum { ERR_LEN = 2048 };

/* Everything one session works with. */
typedef struct {
    const sweep_options *opt;
    space *sp;
    const strategy_ops *ops;
    strategy *strat;
    char *study;       /* the study's name */
    char *dir;         /* out/<study> */
    char *running_dir; /* out/<study>/running: the runs in flight (runner.h) */
    int lock_fd;       /* the study's lock (journal.h: study_lock), -1 when none */
    int runs_started;  /* runs this session started */
    journal *j;
    trial_table *t;          /* tuning phases (baseline, warm, search) */
    trial_table *vt;         /* verification runs (phase verify) */
    resolved_constraint *rc; /* [n_constraints + 1] */
    progress prog;
    double session_t0;
    double elapsed_base; /* study wall time of earlier sessions */
    worker_pool pool;    /* the runs in flight */
    long next_id;        /* the id the next run gets (ids are allocated at start) */
    warm_queue warm;     /* --warm-start points, measured first (n == 0: none) */
    const char *stop;    /* why the search ended (NULL while it goes on) */
    int search_over;     /* the search is over and nothing of it is in flight */
    verify_plan plan;    /* made when the search is over */
    int plan_made;
    double noise;           /* relative sd of the baseline's objective (noise.h), NAN: none */
    int noise_given;        /* measured and handed to the strategy */
    conditions *cond_start; /* [pool.n] each slot's conditions at the start of its run */
    conditions cond_ref;    /* at the start of this session's first run */
    int cond_ref_set, drift_warned;
} sweep_state;

/* sweep_run.c: start the next run of the point `levels` in free slot `slot` (its id is
 * allocated now; its repeat number is the lowest no finished run and no run in flight of the
 * point has). */
void sweep_start_run(sweep_state *s, int slot, const int *levels, const char *phase);
/* sweep_run.c: journal the ended run of slot `slot`, add it to the tables and log it. Returns
 * 0 to go on, else an exit status (interrupted, or the journal cannot be written). */
int sweep_collect_run(sweep_state *s, int slot);
/* sweep_run.c: end an interrupted session (during_trial: how many runs were stopped) with
 * the line that says how to resume. Returns 128 + sig. */
int sweep_interrupted_exit(sweep_state *s, int sig, int during_trial);

/* sweep_plan.c: runs planned for the whole study (the search, then the verification). */
long sweep_planned_runs(const space *sp);
/* sweep_plan.c: --dry-run: the plan and the first proposals on an empty study. */
int sweep_dry_run(sweep_state *s);

#endif
