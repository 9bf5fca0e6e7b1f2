/* backend_cuda_dequant_book.c: the bookkeeping of the prefill products' two copy buffers, on
 * the host (backend_cuda_dequant_book.h; backend_cuda_dequant.c says why copies are made ahead).
 *
 * A chunk multiplies the same matrices in the same order every time, so the matrix that followed
 * this one last time is the one to copy next: each product records its matrix as its
 * predecessor's successor (an open-addressing table keyed by the matrix's host data), and plans
 * its own successor's copy into the other buffer. A wrong guess costs only time: a copy serves
 * only the matrix it was made from (dq_same), and a product whose matrix is in neither buffer
 * has it written on the main stream. */
#include "backend_cuda_dequant_book.h"

#include <stdint.h>
#include <stdlib.h>

#include "backend_cuda_internal.h"

/* ---- the successors ------------------------------------------------------------------- */

struct dq_link {
    const void *host; /* key; NULL = empty */
    cuda_dq_matrix next;
};

static dq_link *link_find(dq_book *bk, const void *host, int add) {
    if (add && 2 * (bk->n_links + 1) > bk->cap_links) {
        const size_t cap = bk->cap_links ? 2 * bk->cap_links : 64;
        dq_link *t = xcalloc(cap, sizeof *t);
        for (size_t i = 0; i < bk->cap_links; i++) {
            if (!bk->links[i].host) continue;
            size_t j = cuda_hash_ptr(bk->links[i].host, 0, cap);
            while (t[j].host)
                j = (j + 1) & (cap - 1);
            t[j] = bk->links[i];
        }
        free(bk->links);
        bk->links = t;
        bk->cap_links = cap;
    }
    if (!bk->cap_links) return NULL;
    size_t j = cuda_hash_ptr(host, 0, bk->cap_links);
    for (; bk->links[j].host; j = (j + 1) & (bk->cap_links - 1))
        if (bk->links[j].host == host) return &bk->links[j];
    if (!add) return NULL;
    bk->links[j] = (dq_link){.host = host};
    bk->n_links++;
    return &bk->links[j];
}

/* ---- the two buffers ------------------------------------------------------------------- */

int dq_same(const cuda_dq_matrix *a, const cuda_dq_matrix *m) {
    return a->host == m->host && a->qm.q == m->qm.q && a->qm.scales == m->qm.scales &&
           a->qm.dtype == m->qm.dtype && a->qm.rows == m->qm.rows && a->qm.cols == m->qm.cols &&
           a->qm.group == m->qm.group && a->e == m->e;
}

size_t dq_copy_bytes(const cuda_dq_matrix *m) {
    const size_t parts = m->e == CUDA_NO_F16 ? 2 : 1; /* fp16 w 2^e, or bf16 hi and lo */
    return parts * 2 * (size_t)m->qm.rows * m->qm.cols;
}

static int holds(const dq_book *bk, int b, const cuda_dq_matrix *m) {
    return dq_same(&bk->held[b], m);
}

int dq_book_choose(dq_book *bk, const cuda_dq_matrix *m) {
    /* this matrix follows the one before */
    if (bk->cur.host) link_find(bk, bk->cur.host, 1)->next = *m;
    bk->cur = *m;
    /* the buffer for m: one that holds it; else one that no copy made ahead is headed for (one
     * made for a wrong guess); else the one used less recently, so that the other keeps the
     * last product's copy */
    bk->use = holds(bk, 0, m)   ? 0
              : holds(bk, 1, m) ? 1
              : bk->pending[0]  ? 1
              : bk->pending[1]  ? 0
                                : !bk->last;
    return bk->use;
}

const cuda_dq_matrix *dq_book_plan(dq_book *bk, int guess) {
    const int b = bk->use;
    bk->fill = !holds(bk, b, &bk->cur);
    /* m's successor, unless it is m or in the other buffer already */
    const dq_link *l = guess ? link_find(bk, bk->cur.host, 0) : NULL;
    bk->ahead = l && !dq_same(&l->next, &bk->cur) && !holds(bk, !b, &l->next);
    if (!bk->ahead) return NULL;
    bk->ahead_m = l->next;
    return &bk->ahead_m;
}

dq_steps dq_book_fill(dq_book *bk) {
    const int b = bk->use;
    const dq_steps s = {.wait = bk->pending[b], .fill = bk->fill, .ahead = bk->ahead};
    /* a pending buffer holds a copy of m (held is set when the copy is started): no fill */
    CHECK(!(s.wait && s.fill));
    bk->used_ahead += s.wait;
    bk->pending[b] = 0;
    if (s.fill) bk->held[b] = bk->cur;
    if (s.ahead) {
        bk->held[!b] = bk->ahead_m;
        bk->pending[!b] = 1;
        bk->made_ahead++;
    }
    return s;
}

void dq_book_done(dq_book *bk) {
    bk->last = bk->use;
}

void dq_book_cleared(dq_book *bk, int b) {
    bk->held[b] = (cuda_dq_matrix){0};
    bk->pending[b] = 0;
}

void dq_book_forget(dq_book *bk) {
    bk->held[0] = bk->held[1] = bk->cur = (cuda_dq_matrix){0};
    bk->pending[0] = bk->pending[1] = 0;
    for (size_t i = 0; i < bk->cap_links; i++)
        bk->links[i] = (dq_link){0};
    bk->n_links = 0;
}

void dq_book_free(dq_book *bk) {
    free(bk->links);
    *bk = (dq_book){0};
}

/* ---- kept copies ------------------------------------------------------------------------- */

int dq_keep_find(dq_keep *k, const cuda_dq_matrix *m, int *make) {
    *make = 0;
    int i = 0;
    while (i < k->n && !dq_same(&k->e[i].m, m))
        i++;
    if (i == k->n) { /* met the first time: an entry, and the buffers serve */
        if (k->n == k->cap) {
            k->cap = k->cap ? 2 * k->cap : 64;
            k->e = xrealloc(k->e, (size_t)k->cap * sizeof *k->e);
        }
        k->e[k->n++] = (dq_kept){*m, NULL};
        if (dq_copy_bytes(m) > k->largest) k->largest = dq_copy_bytes(m);
        return -1;
    }
    if (k->e[i].copy) return i;
    if (k->full) return -1;
    *make = 1;
    return i;
}

int dq_keep_room(const dq_keep *k, const cuda_dq_matrix *m, size_t free_bytes) {
    return free_bytes >= dq_copy_bytes(m) + 2 * k->largest + DQ_KEEP_MARGIN;
}

void dq_keep_made(dq_keep *k, int i, void *copy) {
    if (i < 0 || i >= k->n || k->e[i].copy || !copy) die("dq_keep_made: entry %d", i);
    k->e[i].copy = copy;
    k->copies++;
    k->bytes += dq_copy_bytes(&k->e[i].m);
}

void dq_keep_no_room(dq_keep *k) {
    k->full = 1;
}

void dq_keep_forget(dq_keep *k) {
    k->n = k->copies = 0;
    k->bytes = 0;
    k->full = 0;
}

void dq_keep_free(dq_keep *k) {
    free(k->e);
    *k = (dq_keep){0};
}
