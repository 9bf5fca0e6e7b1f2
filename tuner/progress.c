/* progress.c: the live status line and the per-trial log lines; see progress.h. */
#include "progress.h"

#include <math.h>
#include <stdarg.h>
#include <unistd.h>

#include "util.h"

void progress_init(progress *p, FILE *f, long total_runs, long runs_done, double elapsed_base,
                   int workers) {
    p->workers = workers;
    p->f = f;
    p->tty = isatty(fileno(f));
    p->live_shown = 0;
    p->total_runs = total_runs;
    p->t0 = now_seconds();
    p->runs_at_start = runs_done;
    p->elapsed_base = elapsed_base;
}

void progress_format_duration(double seconds, char *buf, size_t n) {
    if (!isfinite(seconds) || seconds < 0) {
        snprintf(buf, n, "?");
        return;
    }
    long s = lround(seconds);
    if (s >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, n, "%ld:%02ld", s / 60, s % 60);
}

static void live_clear(progress *p) {
    if (p->live_shown) {
        fputs("\r\033[K", p->f);
        p->live_shown = 0;
    }
}

void progress_log(progress *p, const char *fmt, ...) {
    live_clear(p);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->f, fmt, ap);
    va_end(ap);
    fputc('\n', p->f);
    fflush(p->f);
}

void progress_update(progress *p, long runs_done, int running, const char *best) {
    if (!p->tty) return;
    double session = now_seconds() - p->t0;
    long done_here = runs_done - p->runs_at_start;
    char elapsed[32], eta[32];
    progress_format_duration(p->elapsed_base + session, elapsed, sizeof elapsed);
    if (done_here > 0 && p->total_runs > runs_done)
        progress_format_duration(session / (double)done_here * (double)(p->total_runs - runs_done),
                                 eta, sizeof eta);
    else
        snprintf(eta, sizeof eta, "%s",
                 p->total_runs > 0 && runs_done >= p->total_runs ? "0:00" : "?");
    char inflight[48] = "";
    if (p->workers > 1)
        snprintf(inflight, sizeof inflight, " | running %d of %d", running, p->workers);
    live_clear(p);
    if (p->total_runs > 0)
        fprintf(p->f, "trial %ld of %ld%s | best %s | elapsed %s | ETA %s", runs_done + 1,
                p->total_runs, inflight, best ? best : "-", elapsed, eta);
    else
        fprintf(p->f, "trial %ld%s | best %s | elapsed %s", runs_done + 1, inflight,
                best ? best : "-", elapsed);
    p->live_shown = 1;
    fflush(p->f);
}

void progress_end(progress *p) {
    live_clear(p);
    fflush(p->f);
}
