/* sweep.h: the `tuner sweep` loop: space in, journal and manifest out.
 *
 * One session of a study: load the space, open (or resume) the study folder, measure the
 * baseline point first when a constraint is relative to it, then ask the strategy for
 * points until the lattice, the evaluation budget or the wall-time budget is used up,
 * running each point `repeats` times and journaling every run as it ends. With --workers N,
 * N runs are in flight at once and the strategy proposes given the points still running
 * (workers.h); every finished run is appended whole and fsync'd by this one process. After
 * the search the best candidates are re-run on held-out prompts (verify.h) and the
 * fastest one that still meets the budget there becomes the manifest. The budgets count points
 * (evaluations, the baseline included) and the study's wall time over all its sessions; a
 * point that has started is always finished (all its repeats) before a budget can stop
 * the sweep, so its median never rests on fewer runs than asked for. A session holds the
 * study's lock (journal.h: study_lock) from before it creates or reads the study folder to
 * its end, and first stops what a killed earlier session left running (runner.h). A
 * finished study resumed writes nothing, so it may live in a folder that cannot be written.
 */
#ifndef SWEEP_H
#define SWEEP_H

typedef struct {
    const char *space_path;
    const char *study;      /* NULL: the space's `study`, else the space file's name */
    const char *out_dir;    /* folder of the study folders ("out") */
    int new_study;          /* --new: never resume; take NAME-2, NAME-3... if NAME exists */
    int dry_run;            /* print the plan and the first proposals; run nothing */
    double grace_s;         /* SIGTERM -> SIGKILL grace when stopping an engine */
    int workers;            /* trials in flight at once (0 or 1: one at a time) */
    char *const *gpus;      /* NULL or [workers] CUDA_VISIBLE_DEVICES of each worker */
    const char *warm_start; /* NULL or an earlier study folder / manifest (warmstart.h) */
    long long log_limit;    /* bytes a trial's log keeps (0: the runner's default) */
} sweep_options;

/* Exit codes of the tuner (also used by main.c). */
enum {
    EXIT_OK = 0,
    EXIT_ERROR = 1,       /* bad input, I/O failure, baseline failed */
    EXIT_USAGE = 2,       /* bad command line */
    EXIT_NO_FEASIBLE = 3, /* the sweep ended without a feasible point: no manifest */
};

/* Run (or resume) a sweep. Returns the process exit status: 0 with a manifest, non-zero
 * otherwise (128 + signal when interrupted by SIGINT/SIGTERM). */
int sweep_main(const sweep_options *opt);

#endif
