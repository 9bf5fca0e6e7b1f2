/* runner.h: run one trial of the engine in a child process (DESIGN.md 4.1).
 *
 * The runner is the only part of the tuner that touches processes. It starts the engine
 * command of the space in a new process group with the environment of the protocol
 * (inherited + the space's fixed env + one variable per knob + TUNER_PROMPT_SET,
 * TUNER_TRIAL, TUNER_RESULT), sends stdout and stderr into the trial's log file, enforces
 * the timeout by killing the whole group (SIGTERM, then SIGKILL after a grace period) and
 * reaps what it started. It then reads the result: the $TUNER_RESULT file if the engine
 * wrote one, else the last stdout line that is a JSON object, else the space's regexes.
 *
 * Whatever the engine does, the runner returns a verdict with a precise reason; it never
 * ends the sweep. The one exception is an interruption of the tuner itself (SIGINT or
 * SIGTERM, see runner_install_signals): the child group is stopped and the caller is told
 * so, so that the interrupted trial is not recorded and the study stays resumable.
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <cjson/cJSON.h>

#include "space.h"
#include "strategy.h"

typedef enum {
    RUN_DONE,       /* the trial finished (ok, infeasible or failed: see status) */
    RUN_INTERRUPTED /* the tuner got SIGINT/SIGTERM; the trial must not be recorded */
} run_outcome;

typedef struct {
    const char *prompt_set;  /* TUNER_PROMPT_SET: "tune" or "holdout" */
    long trial_id;           /* TUNER_TRIAL and the log file's name */
    const char *log_path;    /* stdout+stderr of the engine go here (truncated first) */
    const char *result_path; /* TUNER_RESULT (removed first) */
    double grace_s;          /* between SIGTERM and SIGKILL of the group */
    const char *gpu;         /* CUDA_VISIBLE_DEVICES for the engine, or NULL to inherit */
} run_request;

typedef struct {
    trial_status status;
    cJSON *metrics;  /* everything the engine reported (a JSON object), or NULL */
    char *reason;    /* why it failed or is infeasible (NULL when ok); malloc'd */
    double wall_s;   /* from fork to reap */
    int exit_code;   /* -1 when killed by a signal or never started */
    int term_signal; /* the signal that ended the engine, 0 if none */
} run_result;

/* Make the tuner a child subreaper (so orphaned grandchildren of the engine can be
 * reaped) and route SIGINT/SIGTERM/SIGHUP to a flag that the runner polls. */
void runner_install_signals(void);
/* The signal that interrupted the tuner (0 when none has arrived). */
int runner_interrupted(void);

/* Run the engine once for the point `levels` of `sp`. Fills *out (call run_result_free). */
run_outcome runner_run(const space *sp, const int *levels, const run_request *req, run_result *out);

/* The same run in steps, for several runs at once (parallel workers). runner_start forks
 * the engine and returns at once (sp and levels must outlive the run; req's strings are
 * copied). The caller polls the descriptors of every run in flight (runner_fds: up to 2,
 * none once the output is closed: then poll with a short timeout), calls runner_step on
 * each after the poll until it returns 1 (the run is over: exited, timed out, or the
 * tuner was interrupted), then runner_finish, which reaps the group, reads the result
 * and frees the handle. runner_signal sends a signal to a run's whole group (used to
 * stop every run at once on Ctrl-C before finishing them one by one). A step that finds a
 * run past its timeout stops the group before it returns (up to grace_s; the other runs'
 * pipes wait meanwhile, which costs them nothing but that time). */
typedef struct run_handle run_handle;
struct pollfd;
run_handle *runner_start(const space *sp, const int *levels, const run_request *req);
int runner_fds(const run_handle *h, struct pollfd *pfd);
int runner_step(run_handle *h);
void runner_signal(run_handle *h, int sig);
run_outcome runner_finish(run_handle *h, run_result *out);
void run_result_free(run_result *r);

/* Turn an engine's JSON report into a verdict for the metrics the space needs (the
 * objective and every constraint metric): OK when all are finite numbers, INFEASIBLE when
 * one is null beside a "reason" (the engine measured it as infinite), FAILED otherwise.
 * Returns a malloc'd reason (NULL for OK). Exposed for the unit tests. */
char *runner_judge(const space *sp, const cJSON *metrics, trial_status *status);

/* The last line of text that parses as a JSON object, or NULL. Exposed for the tests. */
cJSON *runner_last_json_line(const char *text);

/* The engine's program as the runner starts it: a relative path with a slash resolves
 * against the space file's folder and is made absolute (the child changes into the
 * working directory before exec); a bare name is left to the PATH. Caller frees. */
char *runner_command_path(const space *sp);

/* s quoted for a POSIX shell with single quotes (it's -> 'it'\''s'). Caller frees. */
char *shell_single_quote(const char *s);

#endif
