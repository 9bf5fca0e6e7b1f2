/* workers.h: the runs in flight of a sweep with --workers N (DESIGN.md 6).
 *
 * A pool of N slots; each slot runs at most one engine (one trial) at a time, pinned to
 * its own GPU when a list was given (slot i gets gpus[i], via CUDA_VISIBLE_DEVICES). The
 * pool only starts, watches and reaps runs: which point a free slot runs next, and what
 * happens to a finished run (journal, tables), is the sweep's business (sweep.c,
 * sweep_run.c). All runs are watched from the one tuner process with one poll() over all
 * their pipes, so the journal has a single writer however many trials are in flight.
 */
#ifndef WORKERS_H
#define WORKERS_H

#include "runner.h"
#include "space.h"

typedef struct {
    run_handle *h;          /* NULL: the slot is free */
    int over;               /* the run has ended; waiting to be collected */
    int *levels;            /* [n_params] the point it runs */
    const char *phase;      /* "baseline", "warm", "search" or "verify" */
    const char *prompt_set; /* TUNER_PROMPT_SET of the run */
    long id;                /* trial id, allocated when the run started */
    int repeat;             /* 0-based repeat of the point within its phase's table */
    const char *gpu;        /* CUDA_VISIBLE_DEVICES of this slot, NULL to inherit */
    char started[32];       /* UTC ISO time of the start */
} worker_slot;

typedef struct {
    worker_slot *slots; /* [n] */
    int n;
    int n_params;
    int n_running; /* slots with a run (over or not) */
} worker_pool;

/* gpus: NULL or [n] device ids, one per slot (not copied: must outlive the pool). */
void workers_init(worker_pool *w, int n, int n_params, char *const *gpus);
void workers_free(worker_pool *w);

/* Index of a free slot, or -1. */
int workers_free_slot(const worker_pool *w);

/* Start a run in free slot i; the slot copies levels. */
void workers_start(worker_pool *w, int i, const space *sp, const int *levels, const char *phase,
                   const run_request *req, int repeat, const char *started);

/* Runs in flight of this point: of the verification phase (verify = 1) or of the tuning
 * phases (verify = 0). */
int workers_inflight(const worker_pool *w, const int *levels, int verify);

/* Wait until some run has ended or timeout_ms have passed (the runs' output is pumped
 * meanwhile). Returns the index of an ended slot (the lowest), or -1. */
int workers_wait(worker_pool *w, int timeout_ms);

/* The lowest slot whose run has ended and is not collected yet, or -1 (no waiting). */
int workers_ended(const worker_pool *w);

/* Collect the ended run of slot i (its result into *out) and free the slot. */
run_outcome workers_collect(worker_pool *w, int i, run_result *out);

/* Stop every run in flight (SIGTERM to all groups at once, then each is finished, with
 * SIGKILL after the grace period); their results are discarded. */
void workers_stop_all(worker_pool *w);

#endif
