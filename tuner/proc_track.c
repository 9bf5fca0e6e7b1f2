/* proc_track.c: every process of the runs in flight, followed and stopped; see proc_track.h.
 *
 * A run is more than its process group: the tuner is a child subreaper, so a process that
 * leaves the group and loses its parent (setsid, double fork) is re-parented to the tuner.
 * A scan of /proc (track_scan, at most every SCAN_S) gives each such adopted process to its
 * run, by the TUNER_TRIAL of its environment (to the only run in flight when the
 * environment was cleared; else it is a stray, stopped once every run that may own it has
 * ended), and follows descendants through their parents. Adopted zombies are reaped by pid,
 * never with a wait on any child, so the exit status of another run's engine is never
 * taken. Processes are named by (pid, start time) so that a reused pid is never signalled.
 *
 * This is kept apart from runner.c because it is state of the whole tuner, not of one run:
 * the list of runs in flight, the strays, and the records in running_dir that let a later
 * sweep stop what a killed tuner left behind (track_stop_recorded).
 */
#include "proc_track.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "input.h"
#include "proctree.h"
#include "util.h"

/* The runs in flight (started engines), so that reaping adopted orphans never takes the
 * exit status of another worker's engine and every adopted process finds its run. */
enum { ACTIVE_MAX = 1024 };
static tracked_run *live[ACTIVE_MAX];
static int n_live;

/* Adopted processes that could not be told apart: not in the environment of any run's
 * TUNER_TRIAL (it was cleared) while several runs were in flight. Each is stopped once
 * every run it may belong to (cands: their trial ids) has ended. */
typedef struct {
    proc_ref p;
    long *cands;
    int n_cands;
} stray;
static stray *strays;
static int n_strays;
static double last_scan; /* now_seconds() of the last scan of the process table */
static const double SCAN_S = 0.25;
static double stray_grace_s = 5.0; /* SIGTERM -> SIGKILL for strays: the last run's grace */

static void live_add(tracked_run *t) {
    if (n_live == ACTIVE_MAX) die("more than %d engines at once", ACTIVE_MAX);
    live[n_live++] = t;
}

static void live_remove(tracked_run *t) {
    for (int i = 0; i < n_live; i++)
        if (live[i] == t) {
            live[i] = live[--n_live];
            return;
        }
}

static int is_live_leader(pid_t pid) {
    for (int i = 0; i < n_live; i++)
        if (live[i]->pid == pid) return 1;
    return 0;
}

static int esc_has(const tracked_run *t, pid_t pid, unsigned long long start) {
    for (int i = 0; i < t->n_esc; i++)
        if (t->esc[i].pid == pid && t->esc[i].start == start) return 1;
    return 0;
}

/* Note a process of run t outside its group (and in its record). Returns 1 when new. */
static int esc_add(tracked_run *t, const proc_info *q) {
    if (esc_has(t, q->pid, q->start)) return 0;
    if (t->n_esc == t->cap_esc)
        t->esc = xrealloc(t->esc,
                          (size_t)(t->cap_esc = t->cap_esc ? 2 * t->cap_esc : 8) * sizeof *t->esc);
    t->esc[t->n_esc++] = (proc_ref){q->pid, q->start};
    if (t->record) {
        FILE *f = fopen(t->record, "a");
        if (f) {
            fprintf(f, "proc %d %llu\n", (int)q->pid, q->start);
            fclose(f);
        }
    }
    return 1;
}

/* Is q a process of run t: its engine, in its group, or a known one outside it? */
static int run_owns(const tracked_run *t, const proc_info *q) {
    return q->pid == t->pid || q->pgrp == t->pid || esc_has(t, q->pid, q->start);
}

static int stray_find(const proc_info *q) {
    for (int i = 0; i < n_strays; i++)
        if (strays[i].p.pid == q->pid && strays[i].p.start == q->start) return i;
    return -1;
}

static void stray_add(const proc_info *q, int of_live_runs) {
    strays = xrealloc(strays, (size_t)(n_strays + 1) * sizeof *strays);
    stray *s = &strays[n_strays++];
    s->p = (proc_ref){q->pid, q->start};
    s->n_cands = 0;
    s->cands = xcalloc((size_t)n_live + 1, sizeof *s->cands);
    for (int k = 0; of_live_runs && k < n_live; k++)
        s->cands[s->n_cands++] = live[k]->trial_id;
}

static int pid_cmp(const void *a, const void *b) {
    pid_t x = ((const proc_info *)a)->pid, y = ((const proc_info *)b)->pid;
    return (x > y) - (x < y);
}

static const proc_info *proc_find(const proc_info *ps, int n, pid_t pid) {
    proc_info key = {.pid = pid};
    return bsearch(&key, ps, (size_t)n, sizeof *ps, pid_cmp);
}

/* Reap our zombie children that are no engine of a run in flight. */
static void adopted_reap(const proc_info *ps, int n) {
    pid_t self = getpid();
    for (int i = 0; i < n; i++)
        if (ps[i].ppid == self && ps[i].state == 'Z' && !is_live_leader(ps[i].pid))
            waitpid(ps[i].pid, NULL, WNOHANG);
}

static int procs_stop(proc_ref *refs, int n, double grace_s);

/* Look at the process table: give every adopted orphan (our child that is no engine) to
 * its run (by TUNER_TRIAL in its environment; to the only run in flight when that is
 * gone), note every process whose parent belongs to a run, reap adopted zombies, and stop
 * the strays no run in flight may own any more. At most every SCAN_S unless forced. */
void track_scan(int force) {
    static int in_scan; /* stopping strays waits, and the wait scans: no recursion */
    double now = now_seconds();
    if (in_scan || (!force && now - last_scan < SCAN_S)) return;
    in_scan = 1;
    last_scan = now;
    proc_info *ps;
    int n = proc_scan(&ps);
    qsort(ps, (size_t)n, sizeof *ps, pid_cmp);
    pid_t self = getpid();
    adopted_reap(ps, n);
    for (int i = 0; i < n; i++) {
        const proc_info *q = &ps[i];
        if (q->ppid != self || q->state == 'Z' || is_live_leader(q->pid)) continue;
        int owned = stray_find(q) >= 0;
        for (int k = 0; k < n_live && !owned; k++)
            owned = run_owns(live[k], q);
        if (owned) continue;
        long trial = proc_env_trial(q->pid);
        tracked_run *t = NULL;
        for (int k = 0; k < n_live && trial >= 0; k++)
            if (live[k]->trial_id == trial) t = live[k];
        if (!t && trial < 0 && n_live == 1) t = live[0];
        if (t)
            esc_add(t, q);
        else /* a run that is over (stop it now), or one of several that may own it */
            stray_add(q, trial < 0);
    }
    for (int changed = 1; changed;) { /* descendants, through their parents */
        changed = 0;
        for (int i = 0; i < n; i++) {
            const proc_info *q = &ps[i], *parent = proc_find(ps, n, q->ppid);
            if (!parent || q->state == 'Z') continue;
            for (int k = 0; k < n_live; k++)
                if (!run_owns(live[k], q) && run_owns(live[k], parent))
                    changed |= esc_add(live[k], q);
        }
    }
    free(ps);
    /* Strays that no run in flight may own any more. */
    int k = 0;
    proc_ref *done = xcalloc((size_t)n_strays + 1, sizeof *done);
    for (int i = 0; i < n_strays; i++) {
        if (strays[i].n_cands == 0) {
            done[k++] = strays[i].p;
            free(strays[i].cands);
            strays[i--] = strays[--n_strays];
        }
    }
    if (k > 0) procs_stop(done, k, stray_grace_s);
    free(done);
    in_scan = 0;
}

/* Add to refs every live descendant of refs (through parents). Returns the new count. */
static int refs_with_descendants(proc_ref **refs, int n) {
    proc_info *ps;
    int np = proc_scan(&ps), cap = n + np + 1;
    qsort(ps, (size_t)np, sizeof *ps, pid_cmp);
    *refs = xrealloc(*refs, (size_t)cap * sizeof **refs);
    for (int changed = 1; changed;) {
        changed = 0;
        for (int i = 0; i < np; i++) {
            const proc_info *q = &ps[i], *parent = proc_find(ps, np, q->ppid);
            if (!parent || q->state == 'Z') continue;
            int have = 0, par = 0;
            for (int r = 0; r < n; r++) {
                have |= (*refs)[r].pid == q->pid && (*refs)[r].start == q->start;
                par |= (*refs)[r].pid == parent->pid && (*refs)[r].start == parent->start;
            }
            if (par && !have && n < cap) {
                (*refs)[n++] = (proc_ref){q->pid, q->start};
                changed = 1;
            }
        }
    }
    free(ps);
    return n;
}

/* Signal each process of refs that is still itself. Returns how many were alive. */
static int refs_signal(const proc_ref *refs, int n, int sig) {
    int alive = 0;
    for (int i = 0; i < n; i++)
        if (proc_alive(refs[i].pid, refs[i].start)) {
            alive++;
            if (sig) kill(refs[i].pid, sig);
        }
    return alive;
}

/* Stop processes that are no group of ours: SIGTERM, then SIGKILL after grace_s; their
 * descendants too. Returns the signal that ended them (0: none was alive). */
static int procs_stop(proc_ref *refs, int n, double grace_s) {
    proc_ref *all = xmalloc(((size_t)n + 1) * sizeof *all);
    memcpy(all, refs, (size_t)n * sizeof *all);
    n = refs_with_descendants(&all, n);
    int sig = 0;
    if (refs_signal(all, n, 0) > 0) {
        sig = SIGTERM;
        refs_signal(all, n, SIGTERM);
        double until = now_seconds() + grace_s;
        while (refs_signal(all, n, 0) > 0 && now_seconds() < until) {
            track_scan(0);
            usleep(5000);
        }
        if (refs_signal(all, n, 0) > 0) {
            sig = SIGKILL;
            n = refs_with_descendants(&all, n);
            refs_signal(all, n, SIGKILL);
            until = now_seconds() + 10.0;
            while (refs_signal(all, n, 0) > 0 && now_seconds() < until)
                usleep(5000);
        }
        last_scan = 0;
    }
    free(all);
    return sig;
}

void track_reap(tracked_run *t) {
    for (;;) {
        int st;
        pid_t r = waitpid(-t->pid, &st, WNOHANG);
        if (r <= 0) return;
        if (r == t->pid) {
            t->exited = 1;
            t->wstatus = st;
        }
    }
}

int track_alive(tracked_run *t) {
    track_reap(t); /* zombies of ours are reaped first */
    return kill(-t->pid, 0) == 0 || refs_signal(t->esc, t->n_esc, 0) > 0;
}

void track_signal(tracked_run *t, int sig) {
    kill(-t->pid, sig);
    refs_signal(t->esc, t->n_esc, sig);
}

int track_stop(tracked_run *t, double grace_s) {
    track_scan(1);
    if (!track_alive(t)) return 0;
    int sigs[2] = {SIGTERM, SIGKILL};
    for (int s = 0; s < 2; s++) {
        track_signal(t, sigs[s]);
        double until = now_seconds() + (s == 0 ? grace_s : 10.0);
        while (track_alive(t)) {
            if (now_seconds() >= until) break;
            int before = t->n_esc;
            track_scan(0);
            if (t->n_esc > before) refs_signal(t->esc + before, t->n_esc - before, sigs[s]);
            usleep(5000);
        }
        if (!track_alive(t)) return sigs[s];
    }
    fprintf(stderr, "%s: warning: processes of trial %ld survived SIGKILL for 10 s\n",
            util_progname, t->trial_id);
    return SIGKILL;
}

void track_cleanup(double grace_s) {
    track_scan(1);
    /* Our children now: whatever is left of runs that are over (no run is in flight). */
    proc_info *ps;
    int n = proc_scan(&ps);
    pid_t self = getpid();
    proc_ref *refs = xcalloc((size_t)(n + n_strays) + 1, sizeof *refs);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (ps[i].ppid == self && ps[i].state != 'Z' && !is_live_leader(ps[i].pid))
            refs[k++] = (proc_ref){ps[i].pid, ps[i].start};
    for (int i = 0; i < n_strays; i++) {
        refs[k++] = strays[i].p;
        free(strays[i].cands);
    }
    n_strays = 0;
    free(ps);
    if (k > 0) procs_stop(refs, k, grace_s);
    free(refs);
    track_scan(1); /* reap them */
}

/* The record of a run in running_dir (see runner.h). */
static char *record_write(const char *dir, long id, pid_t pid, unsigned long long start) {
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "%s: warning: cannot create %s: %s\n", util_progname, dir, strerror(errno));
        return NULL;
    }
    char *path = xasprintf("%s/%ld", dir, id);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "boot %s\ngroup %d %llu\n", proc_boot_id(), (int)pid, start) < 0 ||
        fclose(f) != 0) {
        fprintf(stderr, "%s: warning: cannot write %s: %s\n", util_progname, path, strerror(errno));
        free(path);
        return NULL;
    }
    return path;
}

void track_begin(tracked_run *t, pid_t pid, long trial_id, const char *running_dir) {
    *t = (tracked_run){.trial_id = trial_id, .pid = pid};
    proc_info pi;
    if (proc_read(pid, &pi)) t->start = pi.start;
    live_add(t);
    if (running_dir) t->record = record_write(running_dir, trial_id, pid, t->start);
}

void track_end(tracked_run *t) {
    live_remove(t);
    for (int i = 0; i < n_strays; i++) /* this run can own no stray any more */
        for (int k = 0; k < strays[i].n_cands; k++)
            if (strays[i].cands[k] == t->trial_id)
                strays[i].cands[k--] = strays[i].cands[--strays[i].n_cands];
    track_scan(1);
    if (t->record && unlink(t->record) != 0 && errno != ENOENT)
        fprintf(stderr, "%s: warning: cannot remove %s: %s\n", util_progname, t->record,
                strerror(errno));
    free(t->esc);
    free(t->record);
    t->esc = NULL;
    t->record = NULL;
    t->n_esc = t->cap_esc = 0;
}

void track_grace(double grace_s) {
    stray_grace_s = grace_s;
}

int track_stop_recorded(const char *running_dir, double grace_s) {
    DIR *d = opendir(running_dir);
    if (!d) return 0;
    int n_runs = 0;
    for (struct dirent *e = readdir(d); e; e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        char *path = xasprintf("%s/%s", running_dir, e->d_name), err[512];
        char *text = input_read(path, INPUT_MAX_DOCUMENT, NULL, err, sizeof err);
        proc_ref *refs = NULL, group = {0, 0};
        int n = 0, same_boot = 0;
        for (char *line = text ? strtok(text, "\n") : NULL; line; line = strtok(NULL, "\n")) {
            char boot[128];
            int pid;
            unsigned long long start;
            if (sscanf(line, "boot %127s", boot) == 1) same_boot = !strcmp(boot, proc_boot_id());
            if (sscanf(line, "group %d %llu", &pid, &start) == 2) group = (proc_ref){pid, start};
            if (sscanf(line, "proc %d %llu", &pid, &start) == 2 && pid > 0) {
                refs = xrealloc(refs, (size_t)(n + 1) * sizeof *refs);
                refs[n++] = (proc_ref){pid, start};
            }
        }
        free(text);
        if (same_boot && group.pid > 0) {
            /* The group, unless its id now belongs to another process (a reused pid). */
            proc_info leader, *ps;
            int other = proc_read(group.pid, &leader) && leader.start != group.start;
            int np = other ? 0 : proc_scan(&ps);
            for (int i = 0; i < np; i++)
                if (ps[i].pgrp == group.pid && ps[i].start >= group.start && ps[i].state != 'Z') {
                    refs = xrealloc(refs, (size_t)(n + 1) * sizeof *refs);
                    refs[n++] = (proc_ref){ps[i].pid, ps[i].start};
                }
            if (!other) free(ps);
        }
        int alive = same_boot ? refs_signal(refs, n, 0) : 0;
        if (alive > 0) {
            n_runs++;
            fprintf(stderr,
                    "%s: trial %s of an earlier sweep (process group %d) still has %d process%s "
                    "running: stopping %s\n",
                    util_progname, e->d_name, (int)group.pid, alive, alive == 1 ? "" : "es",
                    alive == 1 ? "it" : "them");
            int sig = procs_stop(refs, n, grace_s);
            fprintf(stderr, "%s: trial %s of an earlier sweep: stopped with %s\n", util_progname,
                    e->d_name, sig == SIGKILL ? "SIGKILL" : "SIGTERM");
        }
        free(refs);
        if (unlink(path) != 0 && errno != ENOENT)
            fprintf(stderr, "%s: warning: cannot remove %s: %s\n", util_progname, path,
                    strerror(errno));
        free(path);
    }
    closedir(d);
    return n_runs;
}
