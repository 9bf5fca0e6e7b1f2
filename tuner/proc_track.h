/* proc_track.h: every process of the runs in flight, followed and stopped (proc_track.c).
 *
 * For runner.c: the run handle embeds one tracked_run; track_begin puts it on the list of
 * runs in flight once the engine is forked, track_end takes it off once the engine is
 * reaped. In between, track_scan gives each process that left the engine's group to its
 * run, and track_stop ends them all. For the sweep: track_stop_recorded and
 * track_cleanup.
 */
#ifndef PROC_TRACK_H
#define PROC_TRACK_H

#include <sys/types.h>

/* A process, named by (pid, start time) so that a reused pid is never taken for it. */
typedef struct {
    pid_t pid;
    unsigned long long start;
} proc_ref;

/* The processes of one run. */
typedef struct {
    long trial_id;            /* its TUNER_TRIAL */
    pid_t pid;                /* the engine (leader of its own process group) */
    unsigned long long start; /* the engine's start time (proctree.h) */
    int exited;               /* the leader has been reaped */
    int wstatus;              /* its wait status */
    proc_ref *esc;            /* [n_esc] processes of the run outside its group */
    int n_esc, cap_esc;
    char *record; /* its record in running_dir (NULL: none) */
} tracked_run;

/* The engine pid of trial_id was forked (and put in its own group): follow the run, and
 * with running_dir record it there (runner.h). */
void track_begin(tracked_run *t, pid_t pid, long trial_id, const char *running_dir);

/* The engine is reaped: stop following the run, release the strays only it could own,
 * remove its record and free what t holds. */
void track_end(tracked_run *t);

/* SIGTERM -> SIGKILL for strays (processes no single run could be told to own). */
void track_grace(double grace_s);

/* Look at the process table (at most every 0.25 s unless forced): give adopted processes
 * to their runs, reap adopted zombies, stop strays that no run in flight may own. */
void track_scan(int force);

/* Reap whatever of the run's group has exited, without blocking. */
void track_reap(tracked_run *t);

/* Any process of the run alive, in its group or outside it? (Reaps what it can first.) */
int track_alive(tracked_run *t);

/* Send sig to every process of the run. */
void track_signal(tracked_run *t, int sig);

/* Stop every process of the run: SIGTERM, then SIGKILL after grace_s; reap what is ours.
 * Returns the signal that finally ended it (SIGTERM or SIGKILL), 0 if all was gone. */
int track_stop(tracked_run *t, double grace_s);

/* Stop the processes that runs recorded in running_dir left alive (a tuner killed while
 * they ran): SIGTERM, then SIGKILL after grace_s; each is reported on stderr. The records
 * are removed. Returns how many runs had processes left. */
int track_stop_recorded(const char *running_dir, double grace_s);

/* Stop every process adopted from runs that are over and not stopped yet (call when no
 * run is in flight any more, e.g. at the end of a sweep). */
void track_cleanup(double grace_s);

#endif
