/* runner.c: one trial of the engine in a child process; see runner.h.
 *
 * Shape of a run: the parent forks; the child puts itself in a new process group, moves
 * to the working directory, points stderr at the log file and stdout at a pipe, exports
 * the protocol's variables and execs the engine. The parent pumps the pipe into the log
 * (log_pump.c, keeping a tail in memory to find the last JSON line), polls for the child's
 * exit, the timeout and the tuner's own interruption every few milliseconds, and in every
 * case ends by stopping every process of the run and reaping what is ours.
 *
 * The loop is cut into steps (runner_start / runner_step / runner_finish) so that the
 * sweep can keep several runs in flight with one poll over all their pipes; runner_run is
 * the one-run loop over those steps. What a finished run reported is read by
 * runner_result.c.
 *
 * Every process of a run is followed, not only its process group, and stopped when the run
 * ends: proc_track.c, which also stops what runs of a killed tuner left behind
 * (track_stop_recorded) and what is left at the end of a sweep (track_cleanup).
 */
#include "runner.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log_pump.h"
#include "node.h"
#include "proc_track.h"
#include "runner_result.h"
#include "slurm.h"
#include "util.h"

/* POLL_MS: the loop's tick; DRAIN_S: how long output is still read after the engine
 * exited. */
enum { POLL_MS = 20 };
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

static void run_fail(run_result *out, char *reason) {
    out->status = TRIAL_FAILED;
    out->reason = reason;
}

/* ---------------------------------------------------------------------------------------- */
/* the run */

/* One run in flight: the child, its output pump and where the run stands. */
struct run_handle {
    const space *sp;
    run_request req;
    char *log_path, *result_path; /* copies: req points at these */
    tracked_run procs;            /* the engine and every other process of the run */
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
    track_grace(req->grace_s);

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
    track_begin(&h->procs, pid, req->trial_id, req->running_dir);
    close(out_pipe[1]);
    close(err_pipe[1]);
    free(argv0);
    free(argv);
    free(workdir);

    long long limit = req->log_limit > 0 ? req->log_limit : RUNNER_LOG_LIMIT_DEFAULT;
    log_pump_open(&h->pump, h->log_fd, h->log_path, limit);
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
    tracked_run *c = &h->procs;
    /* Read what is there now (a bounded number of chunks, so one chatty engine cannot
     * starve the others). */
    for (int round = 0; round < 16 && (h->fds[0] >= 0 || h->fds[1] >= 0); round++) {
        struct pollfd pfd[2] = {{.fd = h->fds[0], .events = POLLIN},
                                {.fd = h->fds[1], .events = POLLIN}};
        if (poll(pfd, 2, 0) <= 0) break;
        for (int k = 0; k < 2; k++) /* stdout first: it was usually written first */
            if (pfd[k].revents && !log_pump_read(&h->pump, h->fds[k], k == 0)) {
                close(h->fds[k]);
                h->fds[k] = -1;
            }
    }
    track_scan(0);
    if (!c->exited) track_reap(c);
    if (runner_interrupted()) { /* runner_finish stops the group */
        h->over = 1;
        return 1;
    }
    if (!c->exited && h->deadline > 0 && now_seconds() >= h->deadline) {
        h->timed_out = 1;
        run_cancel_job(h, "timed out");
        h->stop_sig = track_stop(c, h->req.grace_s);
        h->over = 1;
        return 1;
    }
    /* The engine is gone but a leftover of the run may keep a pipe open: stop the run's
     * processes, then the next steps drain the pipes to their end. */
    if (c->exited && (h->fds[0] >= 0 || h->fds[1] >= 0) && track_alive(c))
        track_stop(c, h->req.grace_s);
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
    track_signal(&h->procs, sig);
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
    tracked_run *c = &h->procs;
    for (int k = 0; k < 2; k++)
        if (h->fds[k] >= 0) close(h->fds[k]);
    if (runner_interrupted()) run_cancel_job(h, "is stopped");
    track_stop(c, h->req.grace_s); /* leftovers of a finished engine go too */
    if (!c->exited) {
        waitpid(c->pid, &c->wstatus, 0);
        c->exited = 1;
    }
    track_end(c);
    log_pump_close(&h->pump);
    close(h->log_fd);
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
            char *last = runner_last_output(req->log_path, h->pump.err_tail, h->pump.err_len);
            run_fail(out, xasprintf("killed by signal %d (%s)%s%s%s", out->term_signal,
                                    strsignal(out->term_signal), last ? "; last output: \"" : "",
                                    last ? last : "", last ? "\"" : ""));
            free(last);
        } else if (out->exit_code != 0) {
            char *last = runner_last_output(req->log_path, h->pump.err_tail, h->pump.err_len);
            run_fail(out, xasprintf("exit status %d%s%s%s", out->exit_code,
                                    last ? "; last output: \"" : "", last ? last : "",
                                    last ? "\"" : ""));
            free(last);
        } else {
            runner_result_read(sp, req, h->pump.tail, h->pump.long_line, out);
        }
    }
    free(h->pump.tail);
    free(h->study);
    free(h->job_name);
    free(h->cancelled);
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
