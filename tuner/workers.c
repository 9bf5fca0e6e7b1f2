/* workers.c: the pool of runs in flight; see workers.h. */
#include "workers.h"

#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void workers_init(worker_pool *w, int n, int n_params, char *const *gpus) {
    memset(w, 0, sizeof *w);
    w->n = n;
    w->n_params = n_params;
    w->slots = xcalloc((size_t)n, sizeof *w->slots);
    for (int i = 0; i < n; i++) {
        w->slots[i].levels = xcalloc((size_t)n_params + 1, sizeof(int));
        w->slots[i].gpu = gpus ? gpus[i] : NULL;
    }
}

void workers_free(worker_pool *w) {
    for (int i = 0; i < w->n; i++)
        free(w->slots[i].levels);
    free(w->slots);
    memset(w, 0, sizeof *w);
}

int workers_free_slot(const worker_pool *w) {
    for (int i = 0; i < w->n; i++)
        if (!w->slots[i].h) return i;
    return -1;
}

void workers_start(worker_pool *w, int i, const space *sp, const int *levels, const char *phase,
                   const run_request *req, int repeat, const char *started) {
    worker_slot *s = &w->slots[i];
    memcpy(s->levels, levels, (size_t)w->n_params * sizeof *levels);
    s->phase = phase;
    s->prompt_set = req->prompt_set;
    s->id = req->trial_id;
    s->repeat = repeat;
    s->over = 0;
    snprintf(s->started, sizeof s->started, "%s", started);
    run_request r = *req;
    r.gpu = s->gpu;
    s->h = runner_start(sp, s->levels, &r);
    w->n_running++;
}

int workers_inflight(const worker_pool *w, const int *levels, int verify) {
    int n = 0;
    for (int i = 0; i < w->n; i++) {
        const worker_slot *s = &w->slots[i];
        if (s->h && (strcmp(s->phase, "verify") == 0) == (verify != 0) &&
            memcmp(s->levels, levels, (size_t)w->n_params * sizeof *levels) == 0)
            n++;
    }
    return n;
}

int workers_ended(const worker_pool *w) {
    for (int i = 0; i < w->n; i++)
        if (w->slots[i].h && w->slots[i].over) return i;
    return -1;
}

int workers_wait(worker_pool *w, int timeout_ms) {
    int ended = workers_ended(w);
    if (ended >= 0) return ended;
    struct pollfd *pfd = xcalloc((size_t)w->n * 2 + 1, sizeof *pfd);
    int n = 0, quiet = 0; /* quiet: a run whose output is closed, waiting for its exit */
    for (int i = 0; i < w->n; i++) {
        if (!w->slots[i].h) continue;
        int k = runner_fds(w->slots[i].h, pfd + n);
        quiet |= k == 0;
        n += k;
    }
    if (n > 0)
        poll(pfd, (nfds_t)n, quiet && timeout_ms > 2 ? 2 : timeout_ms);
    else
        poll(NULL, 0, timeout_ms > 2 ? 2 : timeout_ms);
    free(pfd);
    int first = -1;
    for (int i = 0; i < w->n; i++) {
        worker_slot *s = &w->slots[i];
        if (s->h && !s->over && runner_step(s->h)) s->over = 1;
        if (s->h && s->over && first < 0) first = i;
    }
    return first;
}

run_outcome workers_collect(worker_pool *w, int i, run_result *out) {
    worker_slot *s = &w->slots[i];
    run_outcome oc = runner_finish(s->h, out);
    s->h = NULL;
    s->over = 0;
    w->n_running--;
    return oc;
}

void workers_stop_all(worker_pool *w) {
    for (int i = 0; i < w->n; i++)
        if (w->slots[i].h) runner_signal(w->slots[i].h, SIGTERM);
    for (int i = 0; i < w->n; i++) {
        if (!w->slots[i].h) continue;
        run_result r;
        workers_collect(w, i, &r);
        run_result_free(&r);
    }
}
