/* node.h: which machine ran a trial, so that figures from different nodes stay comparable.
 *
 * Every trial records the host it ran on and the host's model: the name of the GPU the run
 * could see (nvidia-smi, the first device of CUDA_VISIBLE_DEVICES when it is set), else the
 * CPU's model name from /proc/cpuinfo, else "unknown". The same shell probe (NODE_PROBE_SH)
 * runs on the tuner's machine for local trials and inside the job for Slurm trials
 * (slurm.h), so one machine gets one model string either way. The report groups the runs
 * by model (report_nodes.c).
 */
#ifndef NODE_H
#define NODE_H

/* A POSIX shell snippet that prints one line "tuner-node: host=HOST model=MODEL" on
 * stderr; HOST is $SLURMD_NODENAME when set, else the output of hostname. */
extern const char NODE_PROBE_SH[];

/* The prefix of the probe's line. */
#define NODE_PROBE_PREFIX "tuner-node: "

/* The local machine as a trial pinned to `gpu` (CUDA_VISIBLE_DEVICES, NULL when not pinned)
 * sees it: *host and *model point at cached strings (never NULL). The probe runs once per
 * distinct gpu value. */
void node_local(const char *gpu, const char **host, const char **model);

/* Parse a probe line ("tuner-node: host=H model=M", the prefix included) into malloc'd
 * *host and *model. Returns 1 when the line is one. */
int node_parse_line(const char *line, char **host, char **model);

#endif
