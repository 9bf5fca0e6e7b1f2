/* node.c: the machine a trial ran on; see node.h.
 *
 * The probe is a shell snippet rather than C so that it can run unchanged inside a Slurm
 * job on another node (slurm.c prepends it to the trial's command there). Locally the tuner
 * runs it once per GPU value through /bin/sh and keeps the answer.
 */
#include "node.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

const char NODE_PROBE_SH[] =
    "m=; if command -v nvidia-smi >/dev/null 2>&1; then d=${CUDA_VISIBLE_DEVICES%%,*}; "
    "[ -n \"$d\" ] && m=$(nvidia-smi --query-gpu=name --format=csv,noheader -i \"$d\" "
    "2>/dev/null | head -n 1); "
    "[ -n \"$m\" ] || m=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | "
    "head -n 1); fi; "
    "[ -n \"$m\" ] || m=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo "
    "2>/dev/null | head -n 1); "
    "printf 'tuner-node: host=%s model=%s\\n' \"${SLURMD_NODENAME:-$(hostname 2>/dev/null || "
    "uname -n)}\" \"${m:-unknown}\" >&2";

int node_parse_line(const char *line, char **host, char **model) {
    size_t np = strlen(NODE_PROBE_PREFIX);
    if (strncmp(line, NODE_PROBE_PREFIX "host=", np + 5) != 0) return 0;
    const char *h = line + np + 5, *m = strstr(h, " model=");
    if (!m) return 0;
    const char *end = m + 7 + strcspn(m + 7, "\r\n");
    *host = xasprintf("%.*s", (int)(m - h), h);
    *model = xasprintf("%.*s", (int)(end - (m + 7)), m + 7);
    return 1;
}

/* Run the probe here with CUDA_VISIBLE_DEVICES = gpu (unset when NULL). */
static void probe_here(const char *gpu, char **host, char **model) {
    int fds[2];
    *host = *model = NULL;
    if (pipe(fds) == 0) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fds[1], STDERR_FILENO);
            close(fds[0]);
            close(fds[1]);
            if (gpu)
                setenv("CUDA_VISIBLE_DEVICES", gpu, 1);
            else
                unsetenv("CUDA_VISIBLE_DEVICES");
            execl("/bin/sh", "sh", "-c", NODE_PROBE_SH, (char *)NULL);
            _exit(127);
        }
        close(fds[1]);
        char buf[1024];
        size_t len = 0;
        ssize_t n;
        while (
            pid > 0 && len < sizeof buf - 1 &&
            ((n = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0 || (n < 0 && errno == EINTR)))
            len += n > 0 ? (size_t)n : 0;
        buf[len] = '\0';
        close(fds[0]);
        while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        for (char *line = strtok(buf, "\n"); line && !*host; line = strtok(NULL, "\n"))
            node_parse_line(line, host, model);
    }
    if (!*host) {
        char name[256] = "unknown";
        gethostname(name, sizeof name - 1);
        *host = xstrdup(name);
        *model = xstrdup("unknown");
    }
}

typedef struct {
    char *gpu; /* NULL: not pinned */
    char *host, *model;
} node_entry;

static node_entry *cache;
static int n_cache;

void node_local(const char *gpu, const char **host, const char **model) {
    for (int i = 0; i < n_cache; i++)
        if ((!gpu && !cache[i].gpu) || (gpu && cache[i].gpu && !strcmp(gpu, cache[i].gpu))) {
            *host = cache[i].host;
            *model = cache[i].model;
            return;
        }
    cache = xrealloc(cache, (size_t)(n_cache + 1) * sizeof *cache);
    node_entry *e = &cache[n_cache++];
    e->gpu = gpu ? xstrdup(gpu) : NULL;
    probe_here(gpu, &e->host, &e->model);
    *host = e->host;
    *model = e->model;
}
