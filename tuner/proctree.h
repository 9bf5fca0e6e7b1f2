/* proctree.h: the process table as /proc shows it, for following a trial's processes.
 *
 * The runner needs to know every process a trial started, including those that left the
 * trial's process group (setsid, double fork) and those that outlived a tuner that was
 * killed. Processes are identified by (pid, start time): the start time (in clock ticks
 * since boot, field 22 of /proc/PID/stat) tells a live process from a later one that
 * reuses its pid, and the boot id tells this boot from an earlier one.
 */
#ifndef PROCTREE_H
#define PROCTREE_H

#include <sys/types.h>

typedef struct {
    pid_t pid, ppid, pgrp;
    unsigned long long start; /* start time, clock ticks after boot */
    char state;               /* 'R', 'S', 'Z', ... */
} proc_info;

/* One process; returns 1 and fills *pi, or 0 when it does not exist. */
int proc_read(pid_t pid, proc_info *pi);

/* Every process (*out: malloc'd array, caller frees). Returns how many. */
int proc_scan(proc_info **out);

/* Is (pid, start) still the same process, alive and not a zombie? */
int proc_alive(pid_t pid, unsigned long long start);

/* The TUNER_TRIAL of a process's initial environment, or -1 (absent, or unreadable). */
long proc_env_trial(pid_t pid);

/* This boot's id (/proc/sys/kernel/random/boot_id), "" when unknown. */
const char *proc_boot_id(void);

#endif
