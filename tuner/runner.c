/* runner.c: one trial of the engine in a child process; see runner.h.
 *
 * Shape of a run: the parent forks; the child puts itself in a new process group, moves
 * to the working directory, points stderr at the log file and stdout at a pipe, exports
 * the protocol's variables and execs the engine. The parent pumps the pipe into the log
 * (keeping a tail in memory to find the last JSON line), polls for the child's exit, the
 * timeout and the tuner's own interruption every few milliseconds, and in every case ends
 * by stopping every process of the run and reaping what is ours.
 *
 * The loop is cut into steps (runner_start / runner_step / runner_finish) so that the
 * sweep can keep several runs in flight with one poll over all their pipes; runner_run is
 * the one-run loop over those steps. What a finished run reported is read by
 * runner_result.c.
 *
 * Every process of a run is followed, not only its process group: the tuner is a child
 * subreaper, so a process that leaves the group and loses its parent (setsid, double fork)
 * is re-parented to the tuner. A scan of /proc (track_scan, at most every SCAN_S) gives
 * each such adopted process to its run, by the TUNER_TRIAL of its environment (to the only
 * run in flight when the environment was cleared; else it is a stray, stopped once every
 * run that may own it has ended), and follows descendants through their parents. Adopted
 * zombies are reaped by pid, never with a wait on any child, so the exit status of another
 * run's engine is never taken. Processes are named by (pid, start time) so that a reused
 * pid is never signalled.
 */
#include "runner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "input.h"
#include "node.h"
#include "proctree.h"
#include "runner_result.h"
#include "slurm.h"
#include "util.h"

/* TAIL_MAX: bytes of stdout kept to find the result line; POLL_MS: the loop's tick;
 * DRAIN_S: how long output is still read after the engine exited. */
enum { TAIL_MAX = 1 << 20, POLL_MS = 20 };
static const double DRAIN_S = 2.0;

/* ---------------------------------------------------------------------------------------- */
/* signals */

static volatile sig_atomic_t interrupted_by = 0;

static void on_signal(int sig) {
    interrupted_by = sig;
}

void runner_install_signals(void) {
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: poll() returns EINTR and the loop sees the flag */
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    /* Past a file-size limit, writes fail with EFBIG (reported like a full disk) instead of
     * killing the tuner. The engine gets the default back before exec. */
    signal(SIGXFSZ, SIG_IGN);
}

int runner_interrupted(void) {
    return (int)interrupted_by;
}

/* ---------------------------------------------------------------------------------------- */
/* the process group */

typedef struct {
    pid_t pid;   /* the engine (leader of its own process group) */
    int exited;  /* the leader has been reaped */
    int wstatus; /* its wait status */
} child_state;

/* Reap whatever of the group has exited, without blocking. */
static void group_reap(child_state *c) {
    for (;;) {
        int st;
        pid_t r = waitpid(-c->pid, &st, WNOHANG);
        if (r <= 0) return;
        if (r == c->pid) {
            c->exited = 1;
            c->wstatus = st;
        }
    }
}

/* Does any process of the group still exist (zombies of ours are reaped first)? */
static int group_alive(child_state *c) {
    group_reap(c);
    return kill(-c->pid, 0) == 0;
}

/* ---------------------------------------------------------------------------------------- */
/* the child */

/* p resolved against dir when relative. Caller frees. */
static char *path_join(const char *dir, const char *p) {
    if (p[0] == '/' || !dir || !dir[0]) return xstrdup(p);
    return xasprintf("%s/%s", dir, p);
}

char *shell_single_quote(const char *s) {
    size_t n = 3;
    for (const char *q = s; *q; q++)
        n += *q == '\'' ? 4 : 1;
    char *out = xmalloc(n), *o = out;
    *o++ = '\'';
    for (const char *q = s; *q; q++) {
        if (*q == '\'') {
            memcpy(o, "'\\''", 4); /* close, escaped quote, reopen */
            o += 4;
        } else {
            *o++ = *q;
        }
    }
    *o++ = '\'';
    *o = '\0';
    return out;
}

/* The launcher template with {cmd} replaced by the quoted engine command. Caller frees. */
static char *launcher_command(const char *tmpl, char *const *argv) {
    size_t cap = 64, len = 0;
    char *cmd = xmalloc(cap);
    cmd[0] = '\0';
    for (int i = 0; argv[i]; i++) {
        char *q = shell_single_quote(argv[i]);
        size_t need = len + strlen(q) + 2;
        if (need > cap) cmd = xrealloc(cmd, cap = need * 2);
        len += (size_t)sprintf(cmd + len, "%s%s", i ? " " : "", q);
        free(q);
    }
    const char *at = strstr(tmpl, "{cmd}");
    char *full = at ? xasprintf("%.*s%s%s", (int)(at - tmpl), tmpl, cmd, at + 5)
                    : xasprintf("%s %s", tmpl, cmd);
    free(cmd);
    return full;
}

char *runner_command_path(const space *sp) {
    if (!strchr(sp->argv[0], '/') || sp->argv[0][0] == '/') return xstrdup(sp->argv[0]);
    char *joined = path_join(sp->dir, sp->argv[0]), cwd[4096];
    char *abs = joined[0] != '/' && getcwd(cwd, sizeof cwd) ? xasprintf("%s/%s", cwd, joined)
                                                            : xstrdup(joined);
    free(joined);
    return abs;
}

/* In the child, after fork: never returns. Errors go to the log (our stderr). */
static void child_exec(const space *sp, const int *levels, const run_request *req, pid_t parent,
                       const char *workdir, char **argv, int out_fd, int err_fd) {
    setpgid(0, 0);
    /* Die with the tuner; and if it died already (before the line above), go at once. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 || getppid() != parent) _exit(125);
    signal(SIGXFSZ, SIG_DFL);
    if (dup2(err_fd, STDERR_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0) _exit(126);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    if (chdir(workdir) != 0) {
        dprintf(STDERR_FILENO, "tuner: cannot enter workdir %s: %s\n", workdir, strerror(errno));
        _exit(127);
    }
    for (int i = 0; i < sp->n_env; i++)
        setenv(sp->env[i].key, sp->env[i].value, 1);
    char buf[256];
    for (int i = 0; i < sp->n_params; i++) {
        space_param_value(&sp->params[i], levels[i], buf, sizeof buf);
        setenv(sp->params[i].name, buf, 1);
    }
    snprintf(buf, sizeof buf, "%ld", req->trial_id);
    setenv("TUNER_TRIAL", buf, 1);
    if (req->gpu) setenv("CUDA_VISIBLE_DEVICES", req->gpu, 1);
    setenv("TUNER_PROMPT_SET", req->prompt_set, 1);
    setenv("TUNER_RESULT", req->result_path, 1);
    if (sp->launcher) {
        char *cmd = launcher_command(sp->launcher, argv);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        dprintf(STDERR_FILENO, "tuner: cannot execute /bin/sh: %s\n", strerror(errno));
    } else {
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "tuner: cannot execute %s: %s\n", argv[0], strerror(errno));
    }
    _exit(127);
}

/* ---------------------------------------------------------------------------------------- */
/* the log */

/* Copies the engine's output into the log, keeping the last TAIL_MAX bytes of stdout.
 * Past `limit` bytes the log keeps its first head_max bytes and its last tail_max bytes:
 * output goes on being appended after the head, and whenever the part after the head has
 * grown to twice tail_max it is cut back to its last tail_max bytes (so the file never
 * exceeds head + 2 tails); log_close puts the line that says what was cut in between. */
typedef struct {
    int log_fd;
    const char *log_path;
    int log_broken; /* a write to the log failed (reported once) */
    char *tail;     /* [TAIL_MAX + 1] the end of stdout */
    size_t tail_len;
    unsigned long long total;   /* bytes of output received */
    unsigned long long written; /* bytes in the log file now */
    size_t head_max, tail_max;
    /* stdout lines that start with '{': the longest one over RUNNER_RESULT_LINE_MAX */
    unsigned long long line_len, long_line;
    int line_started, line_brace;
} log_pump;

static void log_warn(log_pump *p) {
    if (p->log_broken) return;
    p->log_broken = 1;
    fprintf(stderr, "%s: warning: cannot write log %s: %s\n", util_progname, p->log_path,
            strerror(errno));
}

/* Keep the last `keep` bytes after the head, then `marker` (may be NULL) between them. */
static void log_cut(log_pump *p, size_t keep, const char *marker) {
    if (p->log_broken || p->written <= p->head_max + keep) return;
    char *buf = xmalloc(keep + 1);
    size_t mlen = marker ? strlen(marker) : 0;
    ssize_t got = pread(p->log_fd, buf, keep, (off_t)(p->written - keep));
    if (got != (ssize_t)keep ||
        (mlen && pwrite(p->log_fd, marker, mlen, (off_t)p->head_max) != (ssize_t)mlen) ||
        pwrite(p->log_fd, buf, keep, (off_t)(p->head_max + mlen)) != (ssize_t)keep ||
        ftruncate(p->log_fd, (off_t)(p->head_max + mlen + keep)) != 0) {
        log_warn(p);
    } else {
        p->written = p->head_max + mlen + keep;
    }
    free(buf);
}

static void log_write(log_pump *p, const char *buf, size_t n) {
    p->total += n;
    if (p->log_broken) return;
    if (pwrite(p->log_fd, buf, n, (off_t)p->written) != (ssize_t)n) {
        log_warn(p);
        return;
    }
    p->written += n;
    if (p->written > p->head_max + 2 * p->tail_max) log_cut(p, p->tail_max, NULL);
}

/* At the end of the run: the line that says what was cut, if anything was. */
static void log_close(log_pump *p) {
    if (p->total > p->head_max + p->tail_max) {
        char marker[256];
        snprintf(marker, sizeof marker,
                 "\n[tuner: %llu bytes of output cut here; the log keeps the first %zu and the "
                 "last %zu bytes]\n",
                 p->total - p->head_max - p->tail_max, p->head_max, p->tail_max);
        log_cut(p, p->tail_max, marker);
    }
}

/* Follow the lines of stdout that start with '{' (result lines), for their length. */
static void lines_follow(log_pump *p, const char *buf, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char ch = buf[i];
        if (ch == '\n') {
            if (p->line_brace && p->line_len > RUNNER_RESULT_LINE_MAX && p->line_len > p->long_line)
                p->long_line = p->line_len;
            p->line_len = 0;
            p->line_started = p->line_brace = 0;
            continue;
        }
        if (!p->line_started && ch != ' ' && ch != '\t' && ch != '\r') {
            p->line_started = 1;
            p->line_brace = ch == '{';
        }
        if (p->line_started) p->line_len++;
    }
}

/* Read what fd has; returns 0 at end of file (or on a read error). */
static int pump_read(log_pump *p, int fd, int is_stdout) {
    char buf[65536]; /* smaller than TAIL_MAX */
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
    if (n <= 0) {
        if (is_stdout) lines_follow(p, "\n", 1); /* the last line ends with the output */
        return 0;
    }
    log_write(p, buf, (size_t)n);
    if (is_stdout) {
        lines_follow(p, buf, (size_t)n);
        if (p->tail_len + (size_t)n > TAIL_MAX) {
            size_t drop = p->tail_len + (size_t)n - TAIL_MAX;
            memmove(p->tail, p->tail + drop, p->tail_len - drop);
            p->tail_len -= drop;
        }
        memcpy(p->tail + p->tail_len, buf, (size_t)n);
        p->tail_len += (size_t)n;
    }
    return 1;
}

static void run_fail(run_result *out, char *reason) {
    out->status = TRIAL_FAILED;
    out->reason = reason;
}

/* ---------------------------------------------------------------------------------------- */
/* following every process of a run */

typedef struct {
    pid_t pid;
    unsigned long long start;
} proc_ref;

/* One run in flight: the child, its output pump and where the run stands. */
struct run_handle {
    const space *sp;
    run_request req;
    char *log_path, *result_path; /* copies: req points at these */
    child_state c;
    unsigned long long start; /* the engine's start time (proctree.h) */
    proc_ref *esc;            /* [n_esc] processes of the run outside its group */
    int n_esc, cap_esc;
    char *running_path; /* its record (NULL: none) */
    log_pump pump;
    int fds[2]; /* the engine's stdout and stderr pipes; -1 once at end of file */
    int log_fd;
    int timed_out, stop_sig, over;
    double t0, deadline, exited_at; /* exited_at: when the engine was reaped (0 before) */
    run_result early;               /* a run that could not start (over from the outset) */
    int failed_to_start;
    char *study;     /* copy of req->study */
    char *job_name;  /* the Slurm job's name (slurm launcher), else NULL */
    char *cancelled; /* the id of the Slurm job cancelled for this run, if any */
    int cancel_done; /* its cancellation was asked for (once) */
};

/* The runs in flight (started engines), so that reaping adopted orphans never takes the
 * exit status of another worker's engine and every adopted process finds its run. */
enum { ACTIVE_MAX = 1024 };
static run_handle *live[ACTIVE_MAX];
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

static void live_add(run_handle *h) {
    if (n_live == ACTIVE_MAX) die("more than %d engines at once", ACTIVE_MAX);
    live[n_live++] = h;
}

static void live_remove(run_handle *h) {
    for (int i = 0; i < n_live; i++)
        if (live[i] == h) {
            live[i] = live[--n_live];
            return;
        }
}

static int is_live_leader(pid_t pid) {
    for (int i = 0; i < n_live; i++)
        if (live[i]->c.pid == pid) return 1;
    return 0;
}

static int esc_has(const run_handle *h, pid_t pid, unsigned long long start) {
    for (int i = 0; i < h->n_esc; i++)
        if (h->esc[i].pid == pid && h->esc[i].start == start) return 1;
    return 0;
}

/* Note a process of run h outside its group (and in its record). Returns 1 when new. */
static int esc_add(run_handle *h, const proc_info *q) {
    if (esc_has(h, q->pid, q->start)) return 0;
    if (h->n_esc == h->cap_esc)
        h->esc = xrealloc(h->esc,
                          (size_t)(h->cap_esc = h->cap_esc ? 2 * h->cap_esc : 8) * sizeof *h->esc);
    h->esc[h->n_esc++] = (proc_ref){q->pid, q->start};
    if (h->running_path) {
        FILE *f = fopen(h->running_path, "a");
        if (f) {
            fprintf(f, "proc %d %llu\n", (int)q->pid, q->start);
            fclose(f);
        }
    }
    return 1;
}

/* Is q a process of run h: its engine, in its group, or a known one outside it? */
static int run_owns(const run_handle *h, const proc_info *q) {
    return q->pid == h->c.pid || q->pgrp == h->c.pid || esc_has(h, q->pid, q->start);
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
        s->cands[s->n_cands++] = live[k]->req.trial_id;
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
static void track_scan(int force) {
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
        run_handle *h = NULL;
        for (int k = 0; k < n_live && trial >= 0; k++)
            if (live[k]->req.trial_id == trial) h = live[k];
        if (!h && trial < 0 && n_live == 1) h = live[0];
        if (h)
            esc_add(h, q);
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

/* Any process of run h alive, in its group or outside it? (Reaps what it can first.) */
static int run_alive(run_handle *h) {
    return group_alive(&h->c) || refs_signal(h->esc, h->n_esc, 0) > 0;
}

/* Send sig to every process of run h. */
static void run_signal(run_handle *h, int sig) {
    kill(-h->c.pid, sig);
    refs_signal(h->esc, h->n_esc, sig);
}

/* Stop every process of run h: SIGTERM, then SIGKILL after the grace period; reap what is
 * ours. Returns the signal that finally ended it (SIGTERM or SIGKILL), 0 if all was gone. */
static int run_stop(run_handle *h, double grace_s) {
    track_scan(1);
    if (!run_alive(h)) return 0;
    int sigs[2] = {SIGTERM, SIGKILL};
    for (int s = 0; s < 2; s++) {
        run_signal(h, sigs[s]);
        double until = now_seconds() + (s == 0 ? grace_s : 10.0);
        while (run_alive(h)) {
            if (now_seconds() >= until) break;
            int before = h->n_esc;
            track_scan(0);
            if (h->n_esc > before) refs_signal(h->esc + before, h->n_esc - before, sigs[s]);
            usleep(5000);
        }
        if (!run_alive(h)) return sigs[s];
    }
    fprintf(stderr, "%s: warning: processes of trial %ld survived SIGKILL for 10 s\n",
            util_progname, h->req.trial_id);
    return SIGKILL;
}

void runner_cleanup(double grace_s) {
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

int runner_stop_recorded(const char *running_dir, double grace_s) {
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

/* ---------------------------------------------------------------------------------------- */
/* the run */

/* Cancel the run's Slurm job (slurm launcher only; once): before its srun is signalled, so
 * that the job ends on the cluster however srun takes the signal. */
static void run_cancel_job(run_handle *h, const char *what) {
    if (!h->job_name || h->cancel_done) return;
    h->cancel_done = 1;
    char *why = xasprintf("trial %ld %s", h->req.trial_id, what);
    slurm_cancel(h->study, h->req.trial_id, why, 0, &h->cancelled);
    free(why);
}

run_handle *runner_start(const space *sp, const int *levels, const run_request *req) {
    run_handle *h = xcalloc(1, sizeof *h);
    h->sp = sp;
    h->req = *req;
    h->log_path = xstrdup(req->log_path);
    h->result_path = xstrdup(req->result_path);
    h->req.log_path = h->log_path;
    h->req.result_path = h->result_path;
    h->req.running_dir = NULL; /* not kept: the record's path is */
    h->fds[0] = h->fds[1] = -1;
    h->early.exit_code = -1;
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    h->t0 = now_seconds();
    stray_grace_s = req->grace_s;

    unlink(req->result_path);
    h->log_fd = open(req->log_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (h->log_fd < 0) {
        run_fail(&h->early,
                 xasprintf("cannot open log file %s: %s", req->log_path, strerror(errno)));
        h->failed_to_start = h->over = 1;
        return h;
    }
    int out_pipe[2], err_pipe[2]; /* the engine's stdout and stderr, pumped into the log */
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
        die("pipe: %s", strerror(errno));

    char *workdir =
        sp->workdir ? path_join(sp->dir, sp->workdir) : xstrdup(sp->dir ? sp->dir : ".");
    char **argv = xcalloc((size_t)sp->argc + 1, sizeof *argv);
    for (int i = 0; i < sp->argc; i++)
        argv[i] = sp->argv[i];
    char *argv0 = runner_command_path(sp);
    argv[0] = argv0;
    char **srun = NULL;
    if (sp->slurm) {
        h->study = xstrdup(req->study ? req->study : "study");
        h->job_name = slurm_job_name(h->study, req->trial_id);
        srun = slurm_srun_argv(sp->slurm, h->job_name, sp->timeout_s, argv);
    }

    fflush(NULL);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0)
        child_exec(sp, levels, &h->req, parent, workdir, srun ? srun : argv, out_pipe[1],
                   err_pipe[1]);
    slurm_argv_free(srun);
    setpgid(pid, pid); /* also in the parent: no window where a kill(-pid) could miss */
    h->c.pid = pid;
    proc_info pi;
    if (proc_read(pid, &pi)) h->start = pi.start;
    live_add(h);
    if (req->running_dir)
        h->running_path = record_write(req->running_dir, req->trial_id, pid, h->start);
    close(out_pipe[1]);
    close(err_pipe[1]);
    free(argv0);
    free(argv);
    free(workdir);

    long long limit = req->log_limit > 0 ? req->log_limit : RUNNER_LOG_LIMIT_DEFAULT;
    h->pump = (log_pump){.log_fd = h->log_fd,
                         .log_path = h->log_path,
                         .tail = xmalloc(TAIL_MAX + 1),
                         .head_max = (size_t)(limit / 2),
                         .tail_max = (size_t)(limit - limit / 2)};
    h->fds[0] = out_pipe[0];
    h->fds[1] = err_pipe[0];
    h->deadline = sp->timeout_s > 0 ? h->t0 + sp->timeout_s : 0;
    return h;
}

int runner_fds(const run_handle *h, struct pollfd *pfd) {
    int n = 0;
    for (int k = 0; k < 2; k++)
        if (!h->over && h->fds[k] >= 0)
            pfd[n++] = (struct pollfd){.fd = h->fds[k], .events = POLLIN};
    return n;
}

int runner_step(run_handle *h) {
    if (h->over) return 1;
    child_state *c = &h->c;
    /* Read what is there now (a bounded number of chunks, so one chatty engine cannot
     * starve the others). */
    for (int round = 0; round < 16 && (h->fds[0] >= 0 || h->fds[1] >= 0); round++) {
        struct pollfd pfd[2] = {{.fd = h->fds[0], .events = POLLIN},
                                {.fd = h->fds[1], .events = POLLIN}};
        if (poll(pfd, 2, 0) <= 0) break;
        for (int k = 0; k < 2; k++) /* stdout first: it was usually written first */
            if (pfd[k].revents && !pump_read(&h->pump, h->fds[k], k == 0)) {
                close(h->fds[k]);
                h->fds[k] = -1;
            }
    }
    track_scan(0);
    if (!c->exited) group_reap(c);
    if (runner_interrupted()) { /* runner_finish stops the group */
        h->over = 1;
        return 1;
    }
    if (!c->exited && h->deadline > 0 && now_seconds() >= h->deadline) {
        h->timed_out = 1;
        run_cancel_job(h, "timed out");
        h->stop_sig = run_stop(h, h->req.grace_s);
        h->over = 1;
        return 1;
    }
    /* The engine is gone but a leftover of the run may keep a pipe open: stop the run's
     * processes, then the next steps drain the pipes to their end. */
    if (c->exited && (h->fds[0] >= 0 || h->fds[1] >= 0) && run_alive(h))
        run_stop(h, h->req.grace_s);
    /* A process nobody could attribute may still hold a pipe: stop waiting for the end of
     * its output a while after the engine is gone. */
    if (c->exited && h->exited_at == 0) h->exited_at = now_seconds();
    if (c->exited && (now_seconds() - h->exited_at > DRAIN_S || (h->fds[0] < 0 && h->fds[1] < 0)))
        h->over = 1;
    return h->over;
}

void runner_signal(run_handle *h, int sig) {
    if (h->failed_to_start) return;
    if (sig == SIGTERM || sig == SIGKILL) run_cancel_job(h, "is stopped");
    run_signal(h, sig);
}

/* Where the run ran: the node its Slurm job reported (and the job's ids), else this
 * machine; nothing for a template launcher, which may have sent it anywhere. */
static void run_where(const run_handle *h, run_result *out) {
    if (h->job_name) {
        slurm_job_info info;
        slurm_job_info_read(h->req.log_path, &info);
        out->slurm_name = xstrdup(h->job_name);
        out->slurm_job = info.job ? info.job : (h->cancelled ? xstrdup(h->cancelled) : NULL);
        out->slurm_step = info.step;
        out->node_host = info.host;
        out->node_model = info.model;
        return;
    }
    if (h->sp->launcher) return;
    const char *host, *model;
    node_local(h->req.gpu, &host, &model);
    out->node_host = xstrdup(host);
    out->node_model = xstrdup(model);
}

run_outcome runner_finish(run_handle *h, run_result *out) {
    memset(out, 0, sizeof *out);
    if (h->failed_to_start) {
        *out = h->early;
        out->wall_s = now_seconds() - h->t0;
        free(h->log_path);
        free(h->result_path);
        free(h);
        return RUN_DONE;
    }
    out->exit_code = -1;
    child_state *c = &h->c;
    for (int k = 0; k < 2; k++)
        if (h->fds[k] >= 0) close(h->fds[k]);
    char *tail = h->pump.tail;
    size_t tail_len = h->pump.tail_len;
    if (runner_interrupted()) run_cancel_job(h, "is stopped");
    run_stop(h, h->req.grace_s); /* leftovers of a finished engine go too */
    if (!c->exited) {
        waitpid(c->pid, &c->wstatus, 0);
        c->exited = 1;
    }
    live_remove(h);
    for (int i = 0; i < n_strays; i++) /* this run can own no stray any more */
        for (int k = 0; k < strays[i].n_cands; k++)
            if (strays[i].cands[k] == h->req.trial_id)
                strays[i].cands[k--] = strays[i].cands[--strays[i].n_cands];
    track_scan(1);
    if (h->running_path && unlink(h->running_path) != 0 && errno != ENOENT)
        fprintf(stderr, "%s: warning: cannot remove %s: %s\n", util_progname, h->running_path,
                strerror(errno));
    log_close(&h->pump);
    close(h->log_fd);
    tail[tail_len] = '\0';
    run_where(h, out);
    out->wall_s = now_seconds() - h->t0;
    const space *sp = h->sp;
    const run_request *req = &h->req;
    run_outcome oc = RUN_DONE;

    if (runner_interrupted()) {
        oc = RUN_INTERRUPTED;
    } else {
        if (WIFEXITED(c->wstatus)) out->exit_code = WEXITSTATUS(c->wstatus);
        if (WIFSIGNALED(c->wstatus)) out->term_signal = WTERMSIG(c->wstatus);
        if (h->timed_out) {
            char *job =
                h->cancelled ? xasprintf("Slurm job %s cancelled, ", h->cancelled) : xstrdup("");
            run_fail(out,
                     xasprintf("timed out after %g s (%sprocess group stopped with %s)",
                               sp->timeout_s, job, h->stop_sig == SIGKILL ? "SIGKILL" : "SIGTERM"));
            free(job);
        } else if (out->term_signal) {
            char *last = runner_log_last_line(req->log_path);
            run_fail(out, xasprintf("killed by signal %d (%s)%s%s%s", out->term_signal,
                                    strsignal(out->term_signal), last ? "; last output: \"" : "",
                                    last ? last : "", last ? "\"" : ""));
            free(last);
        } else if (out->exit_code != 0) {
            char *last = runner_log_last_line(req->log_path);
            run_fail(out, xasprintf("exit status %d%s%s%s", out->exit_code,
                                    last ? "; last output: \"" : "", last ? last : "",
                                    last ? "\"" : ""));
            free(last);
        } else {
            runner_result_read(sp, req, tail, h->pump.long_line, out);
        }
    }
    free(tail);
    free(h->esc);
    free(h->study);
    free(h->job_name);
    free(h->cancelled);
    free(h->running_path);
    free(h->log_path);
    free(h->result_path);
    free(h);
    return oc;
}

run_outcome runner_run(const space *sp, const int *levels, const run_request *req,
                       run_result *out) {
    run_handle *h = runner_start(sp, levels, req);
    for (;;) {
        struct pollfd pfd[2];
        int n = runner_fds(h, pfd);
        if (n > 0)
            poll(pfd, (nfds_t)n, POLL_MS);
        else
            usleep(2000); /* output closed: only the exit is left to see */
        if (runner_step(h)) break;
    }
    return runner_finish(h, out);
}

void run_result_free(run_result *r) {
    cJSON_Delete(r->metrics);
    free(r->reason);
    free(r->node_host);
    free(r->node_model);
    free(r->slurm_name);
    free(r->slurm_job);
    free(r->slurm_step);
    memset(r, 0, sizeof *r);
}

void run_result_where_json(const run_result *r, cJSON *rec) {
    if (r->node_host) {
        cJSON *node = cJSON_AddObjectToObject(rec, "node");
        cJSON_AddStringToObject(node, "host", r->node_host);
        cJSON_AddStringToObject(node, "model", r->node_model ? r->node_model : "unknown");
    }
    if (r->slurm_name) {
        cJSON *job = cJSON_AddObjectToObject(rec, "slurm");
        cJSON_AddStringToObject(job, "name", r->slurm_name);
        const char *ids[2] = {r->slurm_job, r->slurm_step}, *keys[2] = {"job", "step"};
        for (int k = 0; k < 2; k++)
            if (ids[k])
                cJSON_AddStringToObject(job, keys[k], ids[k]);
            else
                cJSON_AddNullToObject(job, keys[k]);
    }
}
