/* slurm.c: trials as Slurm jobs; see slurm.h.
 *
 * The Slurm commands (squeue, scancel) run as child processes with their output read
 * through a pipe; no shell is involved, so names and ids need no quoting. A job is the
 * study's when its name is exactly tuner.STUDY.N with N all digits: study names have no
 * '.'-free ambiguity with that (tuner.a.1.5 is no job of study "a").
 */
#include "slurm.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node.h"
#include "util.h"

#define JOB_LINE_PREFIX "tuner-slurm: "

void slurm_launcher_free(slurm_launcher *l) {
    if (!l) return;
    free(l->partition);
    free(l->gres);
    for (int i = 0; i < l->n_extra; i++)
        free(l->extra[i]);
    free(l->extra);
    free(l);
}

cJSON *slurm_launcher_json(const slurm_launcher *l) {
    cJSON *o = cJSON_CreateObject(), *s = cJSON_AddObjectToObject(o, "slurm");
    if (l->partition)
        cJSON_AddStringToObject(s, "partition", l->partition);
    else
        cJSON_AddNullToObject(s, "partition");
    if (l->gres)
        cJSON_AddStringToObject(s, "gres", l->gres);
    else
        cJSON_AddNullToObject(s, "gres");
    if (l->time_s > 0)
        cJSON_AddNumberToObject(s, "time_s", l->time_s);
    else
        cJSON_AddNullToObject(s, "time_s");
    cJSON *extra = cJSON_AddArrayToObject(s, "extra");
    for (int i = 0; i < l->n_extra; i++)
        cJSON_AddItemToArray(extra, cJSON_CreateString(l->extra[i]));
    return o;
}

char *slurm_job_name(const char *study, long trial) {
    return xasprintf("tuner.%s.%ld", study, trial);
}

/* Seconds as Slurm's --time, D-HH:MM:SS, rounded up to a whole second. */
static char *time_arg(double s) {
    long t = (long)ceil(s);
    return xasprintf("--time=%ld-%02ld:%02ld:%02ld", t / 86400, t / 3600 % 24, t / 60 % 60, t % 60);
}

/* The script in front of the engine: say which job and node this is, then become it. */
static char *wrapper_script(void) {
    return xasprintf("printf '" JOB_LINE_PREFIX "job=%%s step=%%s\\n' \"$SLURM_JOB_ID\" "
                     "\"$SLURM_STEP_ID\" >&2; %s; exec \"$@\"",
                     NODE_PROBE_SH);
}

char **slurm_srun_argv(const slurm_launcher *l, const char *job_name, double timeout_s,
                       char *const *cmd) {
    int n_cmd = 0;
    while (cmd && cmd[n_cmd])
        n_cmd++;
    char **a = xcalloc((size_t)(l->n_extra + n_cmd + 16), sizeof *a);
    int k = 0;
    a[k++] = xstrdup("srun");
    a[k++] = xasprintf("--job-name=%s", job_name);
    a[k++] = xstrdup("--nodes=1");
    a[k++] = xstrdup("--ntasks=1");
    if (l->partition) a[k++] = xasprintf("--partition=%s", l->partition);
    if (l->gres) a[k++] = xasprintf("--gres=%s", l->gres);
    a[k++] = time_arg(l->time_s > 0 ? l->time_s : timeout_s + SLURM_TIME_MARGIN_S);
    for (int i = 0; i < l->n_extra; i++)
        a[k++] = xstrdup(l->extra[i]);
    a[k++] = xstrdup("/bin/sh");
    a[k++] = xstrdup("-c");
    a[k++] = wrapper_script();
    a[k++] = xstrdup("tuner-slurm");
    for (int i = 0; i < n_cmd; i++)
        a[k++] = xstrdup(cmd[i]);
    a[k] = NULL;
    return a;
}

void slurm_argv_free(char **argv) {
    for (int i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

char *slurm_srun_line(const slurm_launcher *l, double timeout_s) {
    char **a = slurm_srun_argv(l, "tuner.STUDY.TRIAL", timeout_s, NULL);
    char *line = xstrdup("");
    for (int i = 0; a[i] && strcmp(a[i], "/bin/sh"); i++) {
        char *next = xasprintf("%s%s%s", line, i ? " " : "", a[i]);
        free(line);
        line = next;
    }
    char *full = xasprintf("%s {cmd}", line);
    free(line);
    slurm_argv_free(a);
    return full;
}

/* A "key=value" field of a job line (value up to the next blank), malloc'd; NULL if empty. */
static char *line_field(const char *line, const char *key) {
    const char *p = strstr(line, key);
    if (!p) return NULL;
    p += strlen(key);
    size_t n = strcspn(p, " \r\n");
    return n ? xasprintf("%.*s", (int)n, p) : NULL;
}

int slurm_job_info_read(const char *log_path, slurm_job_info *info) {
    memset(info, 0, sizeof *info);
    int fd = open(log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[16384];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0) return 0;
    buf[got] = '\0';
    int found = 0;
    for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        if (!found && !strncmp(line, JOB_LINE_PREFIX "job=", strlen(JOB_LINE_PREFIX) + 4)) {
            info->job = line_field(line, "job=");
            info->step = line_field(line, " step=");
            found = 1;
        } else if (found && !info->host) {
            node_parse_line(line, &info->host, &info->model);
        }
    }
    return found;
}

void slurm_job_info_free(slurm_job_info *info) {
    free(info->job);
    free(info->step);
    free(info->host);
    free(info->model);
    memset(info, 0, sizeof *info);
}

/* Run argv (a Slurm command) and collect its stdout and stderr into *out (malloc'd).
 * Returns its exit status, or -1 when it could not be run (*out says why). */
static int capture(char *const *argv, char **out) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        *out = xasprintf("pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) die("fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        execvp(argv[0], argv);
        dprintf(STDERR_FILENO, "cannot execute %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 4096, len = 0;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1024 > cap) buf = xrealloc(buf, cap *= 2);
        ssize_t n = read(fds[0], buf + len, cap - len - 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
    }
    buf[len] = '\0';
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            st = -1;
            break;
        }
    *out = buf;
    if (st == -1 || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st) == 127 && strstr(buf, "cannot execute") ? -1 : WEXITSTATUS(st);
}

typedef struct {
    char *id, *name, *state; /* state "" for steps */
} queued;

/* The current user's jobs (steps = 0) or job steps (steps = 1) in the queue. Returns how
 * many (*out malloc'd), or -1 after reporting why squeue failed. */
static int queue_list(int steps, queued **out) {
    char uid[32];
    snprintf(uid, sizeof uid, "%u", (unsigned)getuid());
    char *argv[] = {"squeue", "--noheader", steps ? "--steps" : "--array", "--user",
                    uid,      "--format",   steps ? "%i|%j" : "%i|%j|%T",  NULL};
    char *text;
    int st = capture(argv, &text);
    if (st != 0) {
        fprintf(stderr, "%s: cannot list the Slurm queue (squeue%s): %s\n", util_progname,
                steps ? " --steps" : "", text);
        free(text);
        *out = NULL;
        return -1;
    }
    int n = 0;
    queued *q = NULL;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *bar = strchr(line, '|');
        if (!bar) continue;
        char *last = steps ? NULL : strrchr(line, '|');
        if (last == bar) last = NULL;
        q = xrealloc(q, (size_t)(n + 1) * sizeof *q);
        q[n].id = xasprintf("%.*s", (int)(bar - line), line);
        q[n].name = last ? xasprintf("%.*s", (int)(last - bar - 1), bar + 1) : xstrdup(bar + 1);
        q[n].state = xstrdup(last ? last + 1 : "");
        n++;
    }
    free(text);
    *out = q;
    return n;
}

static void queue_free(queued *q, int n) {
    for (int i = 0; i < n; i++) {
        free(q[i].id);
        free(q[i].name);
        free(q[i].state);
    }
    free(q);
}

/* Is name a job of the study (of trial `trial`, or of any trial when trial < 0)? */
static int name_matches(const char *name, const char *study, long trial) {
    if (trial >= 0) {
        char *want = slurm_job_name(study, trial);
        int same = !strcmp(name, want);
        free(want);
        return same;
    }
    size_t ns = strlen(study);
    if (strncmp(name, "tuner.", 6) || strncmp(name + 6, study, ns) || name[6 + ns] != '.') return 0;
    const char *digits = name + 7 + ns;
    return digits[0] && strspn(digits, "0123456789") == strlen(digits);
}

/* Is any of ids (n) still in the queue as a job or a step? -1 when squeue failed. */
static int any_queued(char **ids, int n) {
    int left = 0;
    for (int steps = 0; steps < 2 && !left; steps++) {
        queued *q;
        int nq = queue_list(steps, &q);
        if (nq < 0) return -1;
        for (int i = 0; i < nq && !left; i++)
            for (int k = 0; k < n && !left; k++)
                left = !strcmp(q[i].id, ids[k]);
        queue_free(q, nq);
    }
    return left;
}

/* Is id a step ("J.S") of a job among ids[0..n)? */
static int step_of(const char *id, char **ids, int n) {
    const char *dot = strchr(id, '.');
    for (int k = 0; dot && k < n; k++)
        if (strlen(ids[k]) == (size_t)(dot - id) && !strncmp(ids[k], id, (size_t)(dot - id)))
            return 1;
    return 0;
}

int slurm_cancel(const char *study, long trial, const char *why, double wait_s, char **first_id) {
    if (first_id) *first_id = NULL;
    char **ids = NULL; /* [n] to wait for; the first n_cancel of them to cancel */
    int n = 0, n_cancel = 0;
    for (int steps = 0; steps < 2; steps++) {
        queued *q;
        int nq = queue_list(steps, &q);
        if (nq < 0) {
            for (int i = 0; i < n; i++)
                free(ids[i]);
            free(ids);
            return -1;
        }
        for (int i = 0; i < nq; i++) {
            if (!name_matches(q[i].name, study, trial) || step_of(q[i].id, ids, n)) continue;
            /* A job already ending (its srun gone) is only waited for. */
            int ending = !strcmp(q[i].state, "COMPLETING");
            fprintf(stderr, "%s: %s: %s Slurm %s %s (%s%s%s)%s\n", util_progname, why,
                    ending ? "waiting for" : "cancelling", steps ? "job step" : "job", q[i].id,
                    q[i].name, q[i].state[0] ? ", " : "", q[i].state, ending ? " to end" : "");
            ids = xrealloc(ids, (size_t)(n + 2) * sizeof *ids);
            if (ending) {
                ids[n++] = xstrdup(q[i].id);
            } else { /* the ones to cancel come first */
                ids[n++] = ids[n_cancel];
                ids[n_cancel++] = xstrdup(q[i].id);
            }
        }
        queue_free(q, nq);
    }
    if (n_cancel > 0) {
        char **argv = xcalloc((size_t)n_cancel + 3, sizeof *argv);
        argv[0] = "scancel";
        for (int i = 0; i < n_cancel; i++)
            argv[i + 1] = ids[i];
        char *text;
        /* A job that ended since the listing makes scancel fail for it: not an error, the
         * wait below sees whether anything is left. */
        if (capture(argv, &text) != 0)
            fprintf(stderr, "%s: warning: scancel: %s\n", util_progname, text);
        free(text);
        free(argv);
        if (first_id) *first_id = xstrdup(ids[0]);
    }
    int rc = n_cancel;
    if (n > 0) {
        double until = now_seconds() + wait_s;
        int left;
        while (wait_s > 0 && (left = any_queued(ids, n)) != 0) {
            if (left < 0) {
                rc = -1;
                break;
            }
            if (now_seconds() >= until) {
                fprintf(stderr,
                        "%s: warning: cancelled Slurm jobs of study '%s' are still in "
                        "the queue after %g s\n",
                        util_progname, study, wait_s);
                break;
            }
            usleep(200000);
        }
    }
    for (int i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    return rc;
}
