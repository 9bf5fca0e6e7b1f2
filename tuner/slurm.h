/* slurm.h: trials as Slurm jobs (engine.launcher: {slurm: {...}}; docs/cluster.md).
 *
 * With the slurm launcher the tuner builds each trial's srun line itself:
 *
 *   srun --job-name=tuner.STUDY.TRIAL --nodes=1 --ntasks=1 [--partition=P] [--gres=G]
 *        --time=T [extra...] /bin/sh -c 'PROBE; exec "$@"' tuner-slurm ENGINE ARGS...
 *
 * Outside an allocation srun makes one job per trial; inside one (an sbatch script that
 * runs the tuner) it makes one job step. The job is named after the study and the trial, so
 * that it can be found in the queue by name. The shell in front of the engine prints the job
 * id, the step id and the node (node.h) on the trial's stderr as it starts: the runner reads
 * that line back from the trial's log and the journal records it.
 *
 * Cancelling: a trial that times out, or that an interrupted sweep stops, gets its job (or
 * step) cancelled with scancel before its srun is signalled; a sweep that takes over a
 * study first cancels every job and step of the study still in the queue (left by a tuner
 * killed with SIGKILL, whose srun died with it) and waits for them to leave the queue.
 * Jobs are found with squeue among the current user's jobs and steps by exact name:
 * tuner.STUDY.N, N a trial id.
 */
#ifndef SLURM_H
#define SLURM_H

#include <cjson/cJSON.h>

/* The launcher as the space gives it. */
typedef struct slurm_launcher {
    char *partition; /* --partition, NULL: the cluster's default */
    char *gres;      /* --gres, NULL: none */
    double time_s;   /* --time in seconds; 0: the trial's timeout plus SLURM_TIME_MARGIN_S */
    char **extra;    /* [n_extra] further srun options, each one argument */
    int n_extra;
} slurm_launcher;

/* The job's time limit when the space gives none: the trial timeout plus this, so that a job
 * whose tuner died ends by itself. */
#define SLURM_TIME_MARGIN_S 60.0

void slurm_launcher_free(slurm_launcher *l);

/* The launcher's canonical JSON ({"slurm": {...}}), for the space's snapshot and hash. */
cJSON *slurm_launcher_json(const slurm_launcher *l);

/* The job name of a trial: "tuner.STUDY.TRIAL". Caller frees. */
char *slurm_job_name(const char *study, long trial);

/* The srun argv (NULL-terminated, caller frees with slurm_argv_free) that runs cmd (a
 * NULL-terminated argv) as the trial's job. timeout_s: the trial's timeout. */
char **slurm_srun_argv(const slurm_launcher *l, const char *job_name, double timeout_s,
                       char *const *cmd);
void slurm_argv_free(char **argv);

/* The srun argv as one shell line (for the manifest's and the dry run's display). */
char *slurm_srun_line(const slurm_launcher *l, double timeout_s);

/* What the job's first line said, read back from the trial's log. */
typedef struct {
    char *job, *step;   /* SLURM_JOB_ID, SLURM_STEP_ID; NULL when the job never started */
    char *host, *model; /* the node (node.h), NULL when the job never started */
} slurm_job_info;

/* Read the job's line and the node's line from the first bytes of the log. Returns 1 when
 * the job line was found. */
int slurm_job_info_read(const char *log_path, slurm_job_info *info);
void slurm_job_info_free(slurm_job_info *info);

/* Cancel the queued jobs and steps of the study: trial's only (trial >= 0), or every trial's
 * (trial < 0). Each cancelled one is reported on stderr after `why` ("trial 4 timed out").
 * With wait_s > 0, waits up to that long for them to leave the queue. *first_id (may be
 * NULL) gets the id of the first one cancelled (malloc'd, NULL when none). Returns how many
 * were cancelled, or -1 when squeue or scancel failed (reported on stderr). */
int slurm_cancel(const char *study, long trial, const char *why, double wait_s, char **first_id);

#endif
