/* runner.c: one trial of the engine in a child process; see runner.h.
 *
 * Shape of a run: the parent forks; the child puts itself in a new process group, moves
 * to the working directory, points stderr at the log file and stdout at a pipe, exports
 * the protocol's variables and execs the engine. The parent pumps the pipe into the log
 * (keeping a tail in memory to find the last JSON line), polls for the child's exit, the
 * timeout and the tuner's own interruption every few milliseconds, and in every case ends
 * by stopping the whole group and reaping it. As a child subreaper the tuner also adopts
 * and reaps grandchildren that outlive the engine, so no process of a trial survives it.
 *
 * The loop is cut into steps (runner_start / runner_step / runner_finish) so that the
 * sweep can keep several runs in flight with one poll over all their pipes; runner_run is
 * the one-run loop over those steps. With several engines running, adopted orphans are
 * reaped without ever taking the exit status of another run's engine (orphans_reap).
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Wait up to `seconds` for the group to disappear. Returns 1 when it is gone. */
static int group_wait_gone(child_state *c, double seconds) {
    double until = now_seconds() + seconds;
    while (group_alive(c)) {
        if (now_seconds() >= until) return 0;
        usleep(5000);
    }
    return 1;
}

/* Stop the whole group: SIGTERM, then SIGKILL after the grace period; reap everything.
 * Returns the signal that finally ended it (SIGTERM or SIGKILL), 0 if it was already gone. */
static int group_stop(child_state *c, double grace_s) {
    if (!group_alive(c)) return 0;
    kill(-c->pid, SIGTERM);
    if (group_wait_gone(c, grace_s)) return SIGTERM;
    kill(-c->pid, SIGKILL);
    if (!group_wait_gone(c, 10.0))
        fprintf(stderr, "%s: warning: process group %d survived SIGKILL for 10 s\n", util_progname,
                (int)c->pid);
    return SIGKILL;
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
static void child_exec(const space *sp, const int *levels, const run_request *req,
                       const char *workdir, char **argv, int out_fd, int err_fd) {
    setpgid(0, 0);
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
/* reading the result */

cJSON *runner_last_json_line(const char *text) {
    const char *end = text + strlen(text);
    while (end > text) {
        const char *start = end;
        while (start > text && start[-1] != '\n')
            start--;
        const char *a = start, *b = end;
        while (a < b && (*a == ' ' || *a == '\t' || *a == '\r'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r' || b[-1] == '\n'))
            b--;
        if (b > a && *a == '{') {
            cJSON *j = cJSON_ParseWithLength(a, (size_t)(b - a));
            if (j && cJSON_IsObject(j)) return j;
            cJSON_Delete(j);
        }
        end = start > text ? start - 1 : text;
    }
    return NULL;
}

/* Apply the space's regexes to the log text: last match of each, first capture group. */
static cJSON *metrics_from_regex(const space *sp, const char *text, char **reason) {
    cJSON *m = cJSON_CreateObject();
    for (int i = 0; i < sp->n_regex; i++) {
        const regex_t *re = &sp->regex[i].re; /* compiled by the space loader */
        regmatch_t g[2];
        const char *p = text, *last = NULL;
        size_t last_len = 0;
        while (*p && regexec(re, p, 2, g, p == text ? 0 : REG_NOTBOL) == 0) {
            if (g[1].rm_so >= 0) {
                last = p + g[1].rm_so;
                last_len = (size_t)(g[1].rm_eo - g[1].rm_so);
            }
            p += g[0].rm_eo > 0 ? g[0].rm_eo : 1;
        }
        if (!last) {
            *reason = xasprintf("no result: regex for '%s' matched nothing in the output",
                                sp->regex[i].metric);
            cJSON_Delete(m);
            return NULL;
        }
        char *s = xasprintf("%.*s", (int)last_len, last), *e;
        errno = 0;
        double v = strtod(s, &e);
        if (e == s || *e != '\0' || errno == ERANGE) {
            *reason = xasprintf("metric '%s' is not a number (regex captured \"%.40s\")",
                                sp->regex[i].metric, s);
            free(s);
            cJSON_Delete(m);
            return NULL;
        }
        free(s);
        cJSON_AddNumberToObject(m, sp->regex[i].metric, v);
    }
    return m;
}

/* Judge one metric; returns 0 ok, 1 infeasible, 2 failed (with *why set). */
static int judge_metric(const cJSON *metrics, const char *name, char **why) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(metrics, name);
    if (!v) {
        *why = xasprintf("metric '%s' missing from the result", name);
        return 2;
    }
    if (cJSON_IsNull(v)) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(metrics, "reason");
        if (cJSON_IsString(r) && r->valuestring[0]) {
            *why = xasprintf("%s is infinite: %s", name, r->valuestring);
            return 1;
        }
        *why = xasprintf("metric '%s' is null and the result gives no \"reason\"", name);
        return 2;
    }
    if (!cJSON_IsNumber(v)) {
        char *txt = cJSON_PrintUnformatted(v);
        *why = xasprintf("metric '%s' is not a number (got %.40s)", name, txt);
        free(txt);
        return 2;
    }
    if (!isfinite(v->valuedouble)) {
        *why = xasprintf("metric '%s' is not finite", name);
        return 2;
    }
    return 0;
}

char *runner_judge(const space *sp, const cJSON *metrics, trial_status *status) {
    char *infeasible = NULL, *why = NULL;
    int n = 1 + sp->n_constraints;
    for (int i = 0; i < n; i++) {
        const char *name = i == 0 ? sp->objective : sp->constraints[i - 1].metric;
        int v = judge_metric(metrics, name, &why);
        if (v == 2) {
            free(infeasible);
            *status = TRIAL_FAILED;
            return why;
        }
        if (v == 1 && !infeasible)
            infeasible = why;
        else
            free(why);
        why = NULL;
    }
    *status = infeasible ? TRIAL_INFEASIBLE : TRIAL_OK;
    return infeasible;
}

/* The last non-empty line of the log (for the reasons of crashed trials). Caller frees. */
static char *log_last_line(const char *log_path) {
    char err[256];
    size_t len;
    char *text = file_read_all(log_path, &len, err, sizeof err);
    if (!text) return NULL;
    char *end = text + len;
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    char *line =
        end > start ? xasprintf("%.*s", (int)(end - start > 160 ? 160 : end - start), start) : NULL;
    free(text);
    return line;
}

/* Fill out->status/metrics/reason from a clean exit (status 0). */
static void result_read(const space *sp, const run_request *req, const char *stdout_tail,
                        run_result *out) {
    char err[512];
    size_t len;
    char *reason = NULL;
    struct stat st;
    if (stat(req->result_path, &st) == 0) {
        char *text = file_read_all(req->result_path, &len, err, sizeof err);
        cJSON *j = text ? cJSON_Parse(text) : NULL;
        if (!j || !cJSON_IsObject(j)) {
            out->status = TRIAL_FAILED;
            out->reason = xasprintf("garbage result: $TUNER_RESULT file %s is not a JSON object",
                                    req->result_path);
            cJSON_Delete(j);
            free(text);
            return;
        }
        free(text);
        out->metrics = j;
    } else if ((out->metrics = runner_last_json_line(stdout_tail)) != NULL) {
        /* found on stdout */
    } else if (sp->n_regex > 0) {
        char *text = file_read_all(req->log_path, &len, err, sizeof err);
        if (!text) {
            out->status = TRIAL_FAILED;
            out->reason = xstrdup(err);
            return;
        }
        out->metrics = metrics_from_regex(sp, text, &reason);
        free(text);
        if (!out->metrics) {
            out->status = TRIAL_FAILED;
            out->reason = reason;
            return;
        }
    } else {
        out->status = TRIAL_FAILED;
        out->reason = xstrdup("no result: no $TUNER_RESULT file and no line of stdout is a JSON "
                              "object");
        return;
    }
    out->reason = runner_judge(sp, out->metrics, &out->status);
}

/* ---------------------------------------------------------------------------------------- */
/* the run */

/* Copies the engine's output into the log, keeping the last TAIL_MAX bytes of stdout. */
typedef struct {
    int log_fd;
    const char *log_path;
    int log_broken; /* a write to the log failed (reported once) */
    char *tail;     /* [TAIL_MAX + 1] the end of stdout */
    size_t tail_len;
} log_pump;

/* Read what fd has; returns 0 at end of file (or on a read error). */
static int pump_read(log_pump *p, int fd, int is_stdout) {
    char buf[65536]; /* smaller than TAIL_MAX */
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
    if (n <= 0) return 0;
    if (write(p->log_fd, buf, (size_t)n) != n && !p->log_broken) {
        p->log_broken = 1;
        fprintf(stderr, "%s: warning: cannot write log %s: %s\n", util_progname, p->log_path,
                strerror(errno));
    }
    if (is_stdout) {
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

/* The engines running now (their process-group leaders), so that reaping adopted orphans
 * never takes the exit status of another worker's engine. */
enum { ACTIVE_MAX = 1024 };
static pid_t active_pids[ACTIVE_MAX];
static int n_active;

static void active_add(pid_t pid) {
    if (n_active == ACTIVE_MAX) die("more than %d engines at once", ACTIVE_MAX);
    active_pids[n_active++] = pid;
}

static void active_remove(pid_t pid) {
    for (int i = 0; i < n_active; i++)
        if (active_pids[i] == pid) {
            active_pids[i] = active_pids[--n_active];
            return;
        }
}

/* Reap exited children that are no running engine: orphans adopted as subreaper from
 * outside a group. Peeks first (WNOWAIT) and stops at a running engine's leader, whose
 * status belongs to its own run; that one is reaped by its run's next step. */
static void orphans_reap(void) {
    for (;;) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        if (waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
        for (int i = 0; i < n_active; i++)
            if (active_pids[i] == info.si_pid) return;
        waitpid(info.si_pid, NULL, WNOHANG);
    }
}

/* One run in flight: the child, its output pump and where the run stands. */
struct run_handle {
    const space *sp;
    run_request req;
    char *log_path, *result_path; /* copies: req points at these */
    child_state c;
    log_pump pump;
    int fds[2]; /* the engine's stdout and stderr pipes; -1 once at end of file */
    int log_fd;
    int timed_out, stop_sig, over;
    double t0, deadline, exited_at; /* exited_at: when the engine was reaped (0 before) */
    run_result early;               /* a run that could not start (over from the outset) */
    int failed_to_start;
};

run_handle *runner_start(const space *sp, const int *levels, const run_request *req) {
    run_handle *h = xcalloc(1, sizeof *h);
    h->sp = sp;
    h->req = *req;
    h->log_path = xstrdup(req->log_path);
    h->result_path = xstrdup(req->result_path);
    h->req.log_path = h->log_path;
    h->req.result_path = h->result_path;
    h->fds[0] = h->fds[1] = -1;
    h->early.exit_code = -1;
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    h->t0 = now_seconds();

    unlink(req->result_path);
    h->log_fd = open(req->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
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

    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) child_exec(sp, levels, &h->req, workdir, argv, out_pipe[1], err_pipe[1]);
    setpgid(pid, pid); /* also in the parent: no window where a kill(-pid) could miss */
    active_add(pid);
    close(out_pipe[1]);
    close(err_pipe[1]);
    free(argv0);
    free(argv);
    free(workdir);

    h->c.pid = pid;
    h->pump =
        (log_pump){.log_fd = h->log_fd, .log_path = h->log_path, .tail = xmalloc(TAIL_MAX + 1)};
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
    if (!c->exited) group_reap(c);
    if (runner_interrupted()) { /* runner_finish stops the group */
        h->over = 1;
        return 1;
    }
    if (!c->exited && h->deadline > 0 && now_seconds() >= h->deadline) {
        h->timed_out = 1;
        h->stop_sig = group_stop(c, h->req.grace_s);
        h->over = 1;
        return 1;
    }
    /* The engine is gone but a leftover of its group may keep a pipe open: stop the
     * group, then the next steps drain the pipes to their end. */
    if (c->exited && (h->fds[0] >= 0 || h->fds[1] >= 0) && group_alive(c))
        group_stop(c, h->req.grace_s);
    /* A process that left the group (setsid) may still hold a pipe: stop waiting for the
     * end of its output a while after the engine is gone. */
    if (c->exited && h->exited_at == 0) h->exited_at = now_seconds();
    if (c->exited && (now_seconds() - h->exited_at > DRAIN_S || (h->fds[0] < 0 && h->fds[1] < 0)))
        h->over = 1;
    return h->over;
}

void runner_signal(run_handle *h, int sig) {
    if (!h->failed_to_start && !h->c.exited) kill(-h->c.pid, sig);
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
    group_stop(c, h->req.grace_s); /* leftovers of a finished engine go too */
    if (!c->exited) {
        waitpid(c->pid, &c->wstatus, 0);
        c->exited = 1;
    }
    active_remove(c->pid);
    orphans_reap();
    close(h->log_fd);
    tail[tail_len] = '\0';
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
            run_fail(out, xasprintf("timed out after %g s (process group stopped with %s)",
                                    sp->timeout_s, h->stop_sig == SIGKILL ? "SIGKILL" : "SIGTERM"));
        } else if (out->term_signal) {
            char *last = log_last_line(req->log_path);
            run_fail(out, xasprintf("killed by signal %d (%s)%s%s%s", out->term_signal,
                                    strsignal(out->term_signal), last ? "; last output: \"" : "",
                                    last ? last : "", last ? "\"" : ""));
            free(last);
        } else if (out->exit_code != 0) {
            char *last = log_last_line(req->log_path);
            run_fail(out, xasprintf("exit status %d%s%s%s", out->exit_code,
                                    last ? "; last output: \"" : "", last ? last : "",
                                    last ? "\"" : ""));
            free(last);
        } else {
            result_read(sp, req, tail, out);
        }
    }
    free(tail);
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
    memset(r, 0, sizeof *r);
}
