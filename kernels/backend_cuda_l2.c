/* backend_cuda_l2.c: L2 prefetch of the weights of the next matrix products of a decode step.
 *
 * A decode step streams ~350 weight matrices one after another. The small ones (q, k, v, o, the
 * per-layer products: 1-21 MB on E4B) cannot keep the memory busy on their own: a launch is one
 * or two waves of blocks, with a ramp at the start and a tail at the end, and the next launch
 * waits for its input. Their weights depend on nothing computed, and every step reads them in
 * the same order, so a product can ask the L2 cache to fetch the weights of the products after
 * it while it streams its own; they then arrive from L2 (GEMMA_CUDA_L2_PREFETCH=MB, how far
 * ahead in bytes of weights; 0 = off).
 *
 * The order is learnt, not assumed: every single-token product launch is recorded, a step at a
 * time (cuda_l2_step at each step_begin starts a new record and keeps the last one). While the
 * launches of a step follow the last record, each launch gets the record's next entries as its
 * hints - the first MB of each, at most MB ahead in all, every entry hinted once; from the first
 * launch that departs from the record, none for the rest of the step. A graph captured from
 * such a step keeps its hints. Prefetching changes where bytes come from, never a result; a
 * hint only ever names weights, which stay on the device for the backend's life.
 */
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_internal.h"
#include "kernels.h"
#include "util.h"

#define L2_MAX_RECORD 8192 /* launches recorded per step (beyond: not recorded, no hints) */

typedef struct {
    const void *w; /* device weights */
    size_t bytes;
} l2_entry;

struct cuda_l2 {
    size_t budget;        /* bytes of weights hinted ahead of a launch */
    l2_entry *prev, *cur; /* [L2_MAX_RECORD] the last step's launches, this step's */
    int n_prev, n_cur;
    int hinted_to; /* entries of prev below this were hinted; -1: this step left the record */
};

cuda_l2 *cuda_l2_new(size_t budget) {
    if (!budget) return NULL;
    cuda_l2 *l = xcalloc(1, sizeof *l);
    l->budget = budget;
    l->prev = xcalloc(L2_MAX_RECORD, sizeof *l->prev);
    l->cur = xcalloc(L2_MAX_RECORD, sizeof *l->cur);
    return l;
}

void cuda_l2_free(cuda_l2 *l) {
    if (!l) return;
    free(l->prev);
    free(l->cur);
    free(l);
}

void cuda_l2_step(cuda_l2 *l) {
    if (!l) return;
    if (l->n_cur) { /* a step that launched (a replayed graph records nothing: keep the last) */
        l2_entry *t = l->prev;
        l->prev = l->cur;
        l->cur = t;
        l->n_prev = l->n_cur;
    }
    l->n_cur = 0;
    l->hinted_to = 0;
}

void cuda_l2_launch(cuda_l2 *l, const void *const *w, const size_t *bytes, int nw, int n) {
    if (!l || n != 1) return;
    const int j = l->n_cur;
    if (j + nw > L2_MAX_RECORD) return;
    int follows = l->hinted_to >= 0 && j + nw <= l->n_prev;
    for (int i = 0; i < nw; i++) {
        l->cur[j + i] = (l2_entry){w[i], bytes[i]};
        follows = follows && l->prev[j + i].w == w[i];
    }
    l->n_cur = j + nw;
    if (!follows) {
        l->hinted_to = -1;
        return;
    }
    const void *ptrs[K_MV_PF];
    size_t sizes[K_MV_PF];
    int np = 0;
    size_t ahead = 0;
    for (int e = j + nw; e < l->n_prev && np < K_MV_PF && ahead < l->budget; e++) {
        const size_t b =
            l->prev[e].bytes < l->budget - ahead ? l->prev[e].bytes : l->budget - ahead;
        if (e >= l->hinted_to) {
            ptrs[np] = l->prev[e].w;
            sizes[np++] = b;
            l->hinted_to = e + 1;
        }
        ahead += b;
    }
    k_matvec_set_l2_prefetch(ptrs, sizes, np);
}
