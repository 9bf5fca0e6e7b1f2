/* proctree.c: reading /proc; see proctree.h. */
#include "proctree.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

int proc_read(pid_t pid, proc_info *pi) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    /* "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime stime cutime cstime priority nice threads itrealvalue starttime ...": comm may
     * hold spaces and parentheses, so the fields are counted from the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    char state;
    int ppid, pgrp;
    unsigned long long start;
    if (sscanf(p + 1,
               " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
               &state, &ppid, &pgrp, &start) != 4)
        return 0;
    pi->pid = pid;
    pi->ppid = ppid;
    pi->pgrp = pgrp;
    pi->start = start;
    pi->state = state;
    return 1;
}

int proc_scan(proc_info **out) {
    int n = 0, cap = 256;
    proc_info *ps = xmalloc((size_t)cap * sizeof *ps);
    DIR *d = opendir("/proc");
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
        if (!isdigit((unsigned char)e->d_name[0])) continue;
        if (n == cap) ps = xrealloc(ps, (size_t)(cap *= 2) * sizeof *ps);
        if (proc_read((pid_t)atoi(e->d_name), &ps[n])) n++;
    }
    if (d) closedir(d);
    *out = ps;
    return n;
}

int proc_alive(pid_t pid, unsigned long long start) {
    proc_info pi;
    return pid > 0 && proc_read(pid, &pi) && pi.start == start && pi.state != 'Z' &&
           pi.state != 'X';
}

long proc_env_trial(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    /* The environment is NUL-separated; read it in chunks, keeping a partial entry. */
    static const char key[] = "TUNER_TRIAL=";
    char buf[8192];
    size_t have = 0;
    long found = -1;
    for (;;) {
        ssize_t n = read(fd, buf + have, sizeof buf - have);
        if (n <= 0) break;
        have += (size_t)n;
        size_t at = 0;
        for (;;) {
            char *nul = memchr(buf + at, '\0', have - at);
            if (!nul) break;
            if (!strncmp(buf + at, key, sizeof key - 1)) {
                char *end;
                long v = strtol(buf + at + sizeof key - 1, &end, 10);
                if (end != buf + at + sizeof key - 1 && *end == '\0') found = v;
            }
            at = (size_t)(nul - buf) + 1;
        }
        if (at == 0 && have == sizeof buf) at = have; /* one entry longer than buf: skip it */
        memmove(buf, buf + at, have - at);
        have -= at;
    }
    close(fd);
    return found;
}

const char *proc_boot_id(void) {
    static char id[64];
    if (!id[0]) {
        FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
        if (f) {
            if (!fgets(id, sizeof id, f)) id[0] = '\0';
            fclose(f);
        }
        id[strcspn(id, "\n")] = '\0';
        if (!id[0]) snprintf(id, sizeof id, "unknown");
    }
    return id;
}
