/* backend_cuda_prefetch.c: a side branch of the captured decode step that asks L2 for the
 * weights of the next products while the step's chain of kernels is still busy before them
 * (GEMMA_CUDA_L2_AHEAD; prefetch.cu says why this pays and how the asking is done).
 *
 * The plan. A step's first run is eager (backend_cuda.c); while it runs, every product the
 * backend launches is written down here in order - which matrices it reads, how many bytes -
 * as one line of weights laid end to end (l2_plan). The second run of the same step key is
 * captured into a CUDA graph; as each product j is captured, it is checked against the plan
 * (same matrices, same order; on any difference the branch stops for that capture), and the
 * branch asks for the weights from the end of product j up to `ahead` bytes further, the part
 * of it not asked for yet. The ask is a prefetch kernel on a second stream that waits for the
 * kernel before product j - so in the replayed graph it starts when product j starts, and runs
 * beside it and the small kernels after it. A product's own weights are never asked for at its
 * start: it is about to read them. At the end of the step the branch joins the step's stream
 * (a captured fork must), which costs nothing: its kernels end in microseconds.
 *
 * `ahead` is bounded by L2: what is asked for must still be there when its product comes,
 * while the products in between stream their own weights through L2 (evict-first loads,
 * matvec.cu). The default is measured (docs/bench_gpu.md). Eager steps (prefill, verify, the
 * profiled runs) do not prefetch. */
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_prefetch.h"
#include "util.h"

#define CUP(call)                                                                                  \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) die("CUDA: %s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

/* ---- the plan ------------------------------------------------------------------------------ */

static size_t part_bytes(const l2_part *pt) {
    return pt->bytes[0] + (pt->n > 1 ? pt->bytes[1] : 0);
}

void l2_plan_add(l2_plan *p, const l2_part *parts, int n) {
    if (p->n_parts + n > p->cap_parts) {
        p->cap_parts = 2 * (p->n_parts + n) + 16;
        p->parts = xrealloc(p->parts, (size_t)p->cap_parts * sizeof *p->parts);
    }
    if (p->n_prods == p->cap_prods) {
        p->cap_prods = 2 * p->cap_prods + 16;
        p->prods = xrealloc(p->prods, (size_t)p->cap_prods * sizeof *p->prods);
    }
    l2_product *pr = &p->prods[p->n_prods++];
    pr->part0 = p->n_parts;
    pr->n_parts = n;
    pr->start = p->total;
    pr->bytes = 0;
    for (int i = 0; i < n; i++) {
        p->parts[p->n_parts++] = parts[i];
        pr->bytes += part_bytes(&parts[i]);
    }
    p->total += pr->bytes;
}

void l2_plan_clear(l2_plan *p) {
    free(p->parts);
    free(p->prods);
    memset(p, 0, sizeof *p);
}

void l2_plan_walk(const l2_plan *p, size_t from, size_t to,
                  void (*emit)(void *ctx, const void *ptr, size_t bytes), void *ctx) {
    if (to > p->total) to = p->total;
    size_t at = 0; /* plan offset of part i */
    for (int i = 0; i < p->n_parts && at < to; i++) {
        const l2_part *pt = &p->parts[i];
        const size_t pb = part_bytes(pt);
        if (at + pb > from && pb) {
            /* [a, b): the part's own bytes wanted; matrix m gets the same fraction of its own */
            const size_t a = from > at ? from - at : 0, b = (to < at + pb ? to : at + pb) - at;
            for (int m = 0; m < pt->n; m++) {
                const size_t mb = pt->bytes[m];
                size_t s = pt->n == 1 ? a : (size_t)((double)a * mb / pb);
                size_t e = pt->n == 1 ? b : (size_t)((double)b * mb / pb);
                if (e > mb) e = mb;
                s &= ~(size_t)15;
                e &= ~(size_t)15;
                if (e > s) emit(ctx, (const char *)pt->w[m] + s, e - s);
            }
        }
        at += pb;
    }
}

void l2_plan_window(const l2_plan *p, int j, size_t ahead, size_t *frontier, size_t *from,
                    size_t *to) {
    const size_t end = p->prods[j].start + p->prods[j].bytes;
    size_t want = end + ahead;
    if (want > p->total) want = p->total;
    *from = *frontier > end ? *frontier : end;
    *to = want;
    if (want > *frontier) *frontier = want;
}

/* ---- the branch ---------------------------------------------------------------------------- */

#define L2_KEYS 8 /* step keys with a plan (backend_cuda.c keeps at most 4 graphs) */

struct l2_ahead {
    size_t ahead;
    int mode, at_end;
    cudaStream_t side;
    cudaEvent_t fork, join;
    struct {
        int key, used;
        l2_plan plan;
    } keys[L2_KEYS];

    /* the step in progress: state 0 none, 1 recording, 2 capturing (off when bad) */
    int state, bad, forked;
    l2_plan *plan;
    cudaStream_t main;
    int next;                  /* capturing: the plan's product expected next */
    size_t frontier;           /* capturing: plan bytes asked for so far */
    size_t pend_from, pend_to; /* at_end: the ask of the product just launched */
    k_l2_range batch[K_L2_RANGES];
    int n_batch;
};

l2_ahead *l2_ahead_new(size_t ahead, int mode, int at_end) {
    if (!ahead) return NULL;
    l2_ahead *a = xcalloc(1, sizeof *a);
    a->ahead = ahead;
    a->mode = mode;
    a->at_end = at_end;
    CUP(cudaStreamCreateWithFlags(&a->side, cudaStreamNonBlocking));
    CUP(cudaEventCreateWithFlags(&a->fork, cudaEventDisableTiming));
    CUP(cudaEventCreateWithFlags(&a->join, cudaEventDisableTiming));
    return a;
}

void l2_ahead_free(l2_ahead *a) {
    if (!a) return;
    for (int i = 0; i < L2_KEYS; i++)
        l2_plan_clear(&a->keys[i].plan);
    cudaEventDestroy(a->fork);
    cudaEventDestroy(a->join);
    cudaStreamDestroy(a->side);
    free(a);
}

static l2_plan *plan_of(l2_ahead *a, int key, int create) {
    for (int i = 0; i < L2_KEYS; i++)
        if (a->keys[i].used && a->keys[i].key == key) return &a->keys[i].plan;
    if (!create) return NULL;
    for (int i = 0; i < L2_KEYS; i++)
        if (!a->keys[i].used) {
            a->keys[i].used = 1;
            a->keys[i].key = key;
            return &a->keys[i].plan;
        }
    return NULL;
}

void l2_ahead_step_begin(l2_ahead *a, int key, int record, cudaStream_t stream) {
    if (!a) return;
    a->state = 0;
    a->plan = plan_of(a, key, record);
    if (!a->plan) return;
    if (record) l2_plan_clear(a->plan);
    a->state = record ? 1 : 2;
    a->bad = a->forked = 0;
    a->main = stream;
    a->next = 0;
    a->frontier = 0;
    a->pend_from = a->pend_to = 0;
    a->n_batch = 0;
}

static void batch_flush(l2_ahead *a) {
    if (!a->n_batch) return;
    k_l2_prefetch(a->side, a->batch, a->n_batch, a->mode);
    a->n_batch = 0;
}

static void batch_add(void *ctx, const void *ptr, size_t bytes) {
    l2_ahead *a = ctx;
    if (a->n_batch == K_L2_RANGES) batch_flush(a);
    a->batch[a->n_batch++] = (k_l2_range){ptr, bytes};
}

/* Fork: the branch waits for what the step's stream has captured so far, so in the graph it
 * starts when that kernel ends (at_end: the product just launched; else the kernel before the
 * product about to be launched, i.e. as that product starts), and asks for plan bytes
 * [from, to). */
static void ask(l2_ahead *a, size_t from, size_t to) {
    CUP(cudaEventRecord(a->fork, a->main));
    CUP(cudaStreamWaitEvent(a->side, a->fork, 0));
    a->forked = 1;
    l2_plan_walk(a->plan, from, to, batch_add, a);
    if (a->mode == K_L2_NONE && !a->n_batch) batch_add(a, a->plan->parts[0].w[0], 16);
    batch_flush(a);
}

static int same_product(const l2_plan *p, int j, const l2_part *parts, int n) {
    if (j >= p->n_prods || p->prods[j].n_parts != n) return 0;
    for (int i = 0; i < n; i++) {
        const l2_part *x = &p->parts[p->prods[j].part0 + i], *y = &parts[i];
        if (x->n != y->n) return 0;
        for (int m = 0; m < x->n; m++)
            if (x->w[m] != y->w[m] || x->bytes[m] != y->bytes[m]) return 0;
    }
    return 1;
}

void l2_ahead_product(l2_ahead *a, const l2_part *parts, int n) {
    if (!a || !a->state || a->bad) return;
    if (a->state == 1) {
        l2_plan_add(a->plan, parts, n);
        return;
    }
    if (!same_product(a->plan, a->next, parts, n)) {
        a->bad = 1; /* not the step that was written down: ask for nothing more */
        return;
    }
    size_t from, to;
    l2_plan_window(a->plan, a->next++, a->ahead, &a->frontier, &from, &to);
    if (from >= to) return;
    if (a->at_end) {
        a->pend_from = from;
        a->pend_to = to;
        return;
    }
    ask(a, from, to);
}

void l2_ahead_launched(l2_ahead *a) {
    if (!a || a->state != 2 || a->bad || a->pend_from >= a->pend_to) return;
    ask(a, a->pend_from, a->pend_to);
    a->pend_from = a->pend_to = 0;
}

void l2_ahead_step_end(l2_ahead *a) {
    if (!a || !a->state) return;
    if (a->state == 2 && a->forked) {
        CUP(cudaEventRecord(a->join, a->side));
        CUP(cudaStreamWaitEvent(a->main, a->join, 0));
    }
    a->state = 0;
    a->plan = NULL;
}
