/* runner.h: run one trial of the engine in a child process (DESIGN.md 4.1).
 *
 * The runner is the only part of the tuner that touches processes. It starts the engine
 * command of the space in a new process group with the environment of the protocol
 * (inherited + the space's fixed env + one variable per knob + TUNER_PROMPT_SET,
 * TUNER_TRIAL, TUNER_RESULT), sends stdout and stderr into the trial's log file (capped:
 * run_request.log_limit), enforces the timeout by stopping every process of the trial
 * (SIGTERM, then SIGKILL after a grace period) and reaps what it started. It then reads the
 * result: the $TUNER_RESULT file if the engine wrote one, else the last stdout line that is
 * a JSON object, else the space's regexes. A result that is almost one (truncated JSON, a
 * NaN, a key twice, a line over RUNNER_RESULT_LINE_MAX) fails the trial with a reason that
 * says which; so does a figure outside the space's metric bounds (space.h).
 *
 * Whatever the engine does, the runner returns a verdict with a precise reason; it never
 * ends the sweep. The one exception is an interruption of the tuner itself (SIGINT or
 * SIGTERM, see runner_install_signals): the run's processes are stopped and the caller is
 * told so, so that the interrupted trial is not recorded and the study stays resumable.
 *
 * With the slurm launcher (slurm.h) the engine runs under srun as a job named after the
 * study and the trial; a run that times out or is stopped gets its job cancelled first.
 */
#ifndef RUNNER_H
#define RUNNER_H

#include <cjson/cJSON.h>

#include "log_pump.h"
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
    const char *running_dir; /* NULL, or a folder where the run is recorded while it runs */
    long long log_limit;     /* bytes a log may keep (0: RUNNER_LOG_LIMIT_DEFAULT) */
    const char *study;       /* the study's name: Slurm jobs are named after it (slurm.h) */
} run_request;

/* Logs: past the limit a log keeps its first and its last half, and a line in between
 * says how many bytes were cut. */
#define RUNNER_LOG_LIMIT_DEFAULT (8LL << 20)

typedef struct {
    trial_status status;
    cJSON *metrics;  /* everything the engine reported (a JSON object), or NULL */
    char *reason;    /* why it failed or is infeasible (NULL when ok); malloc'd */
    double wall_s;   /* from fork to reap */
    int exit_code;   /* -1 when killed by a signal or never started */
    int term_signal; /* the signal that ended the engine, 0 if none */
    /* Where it ran (node.h): the tuner's machine, or the node the Slurm job reported; NULL
     * when unknown (a template launcher, a Slurm job that never started). malloc'd. */
    char *node_host, *node_model;
    /* With the slurm launcher: the job's name, and its job and step ids (NULL when never
     * learnt). malloc'd. */
    char *slurm_name, *slurm_job, *slurm_step;
} run_result;

/* Processes of a run: the engine is the leader of a new process group and gets SIGKILL
 * when the tuner dies (PR_SET_PDEATHSIG). The tuner is a child subreaper, so processes that
 * leave the group (setsid, double fork) come back to it as orphans; the runner follows
 * them (by parent, and by the TUNER_TRIAL of their environment) and stops every process
 * of a run when the run ends, however it ends. With running_dir, the run is recorded in
 * running_dir/<trial id> while it runs (its group, and each process that left the group
 * as it is found), so that a later sweep can stop what a killed tuner left behind
 * (proc_track.h: track_stop_recorded, track_cleanup). */

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

/* Add where the run ran to its journal record: "node": {"host", "model"} when known, and
 * with the slurm launcher "slurm": {"name", "job", "step"} (null where never learnt). */
void run_result_where_json(const run_result *r, cJSON *rec);

/* Turn an engine's JSON report into a verdict for the metrics the space needs (the
 * objective, every constraint metric, every metric with bounds): OK when all are finite
 * numbers within their bounds (space.h: space_metric_bounds), INFEASIBLE when one is null
 * beside a "reason" (the engine measured it as infinite), FAILED otherwise, and FAILED
 * when an object of the report has a key twice. Returns a malloc'd reason (NULL for OK).
 * Exposed for the unit tests. */
char *runner_judge(const space *sp, const cJSON *metrics, trial_status *status);

/* Parse text[0..len) as an engine's result object. Returns it, or NULL with *why (malloc'd)
 * saying what is wrong: truncated JSON, a NaN or Infinity (not JSON), a key twice, not an
 * object, or where the syntax breaks. Exposed for the tests and the fuzzers. */
cJSON *runner_parse_result(const char *text, size_t len, char **why);

/* The last line of text that parses as a JSON object, or NULL. Exposed for the tests. */
cJSON *runner_last_json_line(const char *text);

/* The engine's program as the runner starts it: a relative path with a slash resolves
 * against the space file's folder and is made absolute (the child changes into the
 * working directory before exec); a bare name is left to the PATH. Caller frees. */
char *runner_command_path(const space *sp);

/* s quoted for a POSIX shell with single quotes (it's -> 'it'\''s'). Caller frees. */
char *shell_single_quote(const char *s);

#endif
