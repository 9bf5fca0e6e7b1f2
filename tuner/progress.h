/* progress.h: what a sweep tells the person watching it, on stderr.
 *
 * On a terminal: every finished trial gets one permanent line, and below it one live line
 * (trial i of N, runs in flight with several workers, best so far, elapsed, ETA) is redrawn in
 * place with \r. Elsewhere (a log file, CI): only the plain per-trial lines, so the output stays
 * readable when captured.
 */
#ifndef PROGRESS_H
#define PROGRESS_H

#include <stdio.h>

#include "util.h"

typedef struct {
    FILE *f;
    int tty;             /* f is a terminal: draw the live line */
    int live_shown;      /* a live line is on screen (to be cleared before the next print) */
    long total_runs;     /* planned runs (N), 0 when unknown */
    double t0;           /* start of this session, monotonic seconds */
    long runs_at_start;  /* runs already in the journal when this session began */
    double elapsed_base; /* study wall time before this session */
    int workers;         /* > 1: the live line also says how many runs are in flight */
} progress;

void progress_init(progress *p, FILE *f, long total_runs, long runs_done, double elapsed_base,
                   int workers);

/* A permanent line (printf-like); clears the live line first on a terminal. */
void progress_log(progress *p, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* Redraw the live line: `runs_done` finished so far, `running` in flight, `best` a short
 * description of the best point so far (or NULL). Does nothing when f is not a terminal. */
void progress_update(progress *p, long runs_done, int running, const char *best);

/* Clear the live line (before the final report). */
void progress_end(progress *p);

/* "1:02:03" or "2:03" into buf. */
void progress_format_duration(double seconds, char *buf, size_t n);

#endif
