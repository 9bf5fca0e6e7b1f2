/* backend_cuda_dequant.c: the 16-bit copies of quantized matrices that a prefill chunk's cuBLAS
 * products read (backend_cuda_core.c matmul_quant), each made one product ahead on a second
 * stream, so that dequantizing a matrix overlaps the product before it.
 *
 * Dequantizing is a pass over memory (an int4 matrix: half a byte read and an fp16 written a
 * weight) and a prefill product is bound by the tensor cores, so the two can share the GPU. A
 * chunk multiplies the same matrices in the same order every time (forward.c's layers), so the
 * matrix that followed this one last time is the one to dequantize next: each product records
 * its matrix as its predecessor's successor, and then starts its own successor's copy into the
 * other of two buffers. A wrong guess costs only the time: a copy is used only for the matrix it
 * was made from, and a product whose matrix is in neither buffer dequantizes it on the main stream
 * as before.
 *
 * Ordering, with two buffers and two events each: the side stream waits for `freed` (recorded on
 * the main stream after the last product that read the buffer) before writing a buffer; the main
 * stream waits for `ready` (recorded on the side stream after the write) before touching it.
 * Buffers grow with both streams synchronized, before the op starts. Profiling times every op
 * alone, so there nothing is made ahead. A weight copied anew (backend_cuda_weights.c: its host
 * memory was reused) makes the backend forget every copy and successor here: their device
 * addresses may be stale. */
#include <stdint.h>
#include <stdlib.h>

#include "backend_cuda_internal.h"

/* ---- the successors: an open-addressing table keyed by the matrix's host data ----------- */

struct dq_link {
    const void *host; /* key; NULL = empty */
    cuda_dq_matrix next;
};

static dq_link *link_find(cuda_dequant *d, const void *host, int add) {
    if (add && 2 * (d->n_links + 1) > d->cap_links) {
        const size_t cap = d->cap_links ? 2 * d->cap_links : 64;
        dq_link *t = xcalloc(cap, sizeof *t);
        for (size_t i = 0; i < d->cap_links; i++) {
            if (!d->links[i].host) continue;
            size_t j = cuda_hash_ptr(d->links[i].host, 0, cap);
            while (t[j].host)
                j = (j + 1) & (cap - 1);
            t[j] = d->links[i];
        }
        free(d->links);
        d->links = t;
        d->cap_links = cap;
    }
    if (!d->cap_links) return NULL;
    size_t j = cuda_hash_ptr(host, 0, d->cap_links);
    for (; d->links[j].host; j = (j + 1) & (d->cap_links - 1))
        if (d->links[j].host == host) return &d->links[j];
    if (!add) return NULL;
    d->links[j] = (dq_link){.host = host};
    d->n_links++;
    return &d->links[j];
}

/* ---- the two buffers ------------------------------------------------------------------- */

static size_t copy_bytes(const cuda_dq_matrix *m) {
    const size_t parts = m->e == CUDA_NO_F16 ? 2 : 1; /* fp16 w 2^e, or bf16 hi and lo */
    return parts * 2 * (size_t)m->qm.rows * m->qm.cols;
}

/* Is buffer b's copy m's? Everything the copy depends on is compared: a tensor at a reused host
 * address may share its device copy with a bigger one (backend_cuda_weights.c). */
static int same_matrix(const cuda_dq_matrix *a, const cuda_dq_matrix *m) {
    return a->host == m->host && a->qm.q == m->qm.q && a->qm.scales == m->qm.scales &&
           a->qm.dtype == m->qm.dtype && a->qm.rows == m->qm.rows && a->qm.cols == m->qm.cols &&
           a->qm.group == m->qm.group && a->e == m->e;
}

static int holds(const cuda_dequant *d, int b, const cuda_dq_matrix *m) {
    return same_matrix(&d->held[b], m);
}

static void dequantize(cudaStream_t s, const cuda_dq_matrix *m, uint16_t *out) {
    const int bad = m->e == CUDA_NO_F16 ? k_dequant_q_bf16x2(s, &m->qm, out)
                                        : k_dequant_q4_f16(s, &m->qm, m->e, out);
    if (bad) die("CUDA: cannot dequantize a %d x %d matrix", m->qm.rows, m->qm.cols);
}

/* Buffer b holds at least `bytes`; both streams are idle when it grows. */
static void grow(cuda_state *st, int b, size_t bytes) {
    cuda_dequant *d = &st->dq;
    if (bytes <= d->cap[b]) return;
    CU(cudaStreamSynchronize(st->stream));
    CU(cudaStreamSynchronize(d->side));
    if (d->buf[b]) CU(cudaFree(d->buf[b]));
    CU(cudaMalloc((void **)&d->buf[b], bytes));
    d->cap[b] = bytes;
    d->held[b] = (cuda_dq_matrix){0};
    d->pending[b] = 0;
}

void cuda_dequant_init(cuda_state *st) {
    cuda_dequant *d = &st->dq;
    CU(cudaStreamCreateWithFlags(&d->side, cudaStreamNonBlocking));
    for (int b = 0; b < 2; b++) {
        CU(cudaEventCreateWithFlags(&d->ready[b], cudaEventDisableTiming));
        CU(cudaEventCreateWithFlags(&d->freed[b], cudaEventDisableTiming));
    }
}

void cuda_dequant_free(cuda_state *st) {
    cuda_dequant *d = &st->dq;
    cudaStreamSynchronize(d->side);
    for (int b = 0; b < 2; b++) {
        cudaFree(d->buf[b]);
        cudaEventDestroy(d->ready[b]);
        cudaEventDestroy(d->freed[b]);
    }
    cudaStreamDestroy(d->side);
    free(d->links);
    *d = (cuda_dequant){0};
}

void cuda_dequant_forget(cuda_state *st) {
    cuda_dequant *d = &st->dq;
    CU(cudaStreamSynchronize(d->side));
    d->held[0] = d->held[1] = d->cur = (cuda_dq_matrix){0};
    d->pending[0] = d->pending[1] = 0;
    for (size_t i = 0; i < d->cap_links; i++)
        d->links[i] = (dq_link){0};
    d->n_links = 0;
}

uint16_t *cuda_dequant_take(cuda_state *st, const cuda_dq_matrix *m) {
    cuda_dequant *d = &st->dq;
    if (st->mode == 1) die("a prefill product inside a captured CUDA graph");
    /* this matrix follows the one before */
    if (d->cur.host) link_find(d, d->cur.host, 1)->next = *m;
    d->cur = *m;
    /* the buffer for m: one that holds it; else one that no write of the side stream is headed
     * for (a copy made ahead for a wrong guess); else the one used less recently, so that the
     * other keeps the last product's copy */
    int b = holds(d, 0, m)   ? 0
            : holds(d, 1, m) ? 1
            : d->pending[0]  ? 1
            : d->pending[1]  ? 0
                             : !d->last;
    grow(st, b, copy_bytes(m)); /* (a buffer that holds m is big enough for it) */
    d->fill = !holds(d, b, m);
    d->use = b;
    /* and the one to make ahead: m's successor, unless it is m or in the other buffer already */
    const dq_link *l = st->profile ? NULL : link_find(d, m->host, 0);
    d->ahead = l && !same_matrix(&l->next, m) && !holds(d, !b, &l->next);
    if (d->ahead) {
        grow(st, !b, copy_bytes(&l->next));
        d->ahead_m = l->next;
    }
    return d->buf[b];
}

int cuda_dequant_fill(cuda_state *st) {
    cuda_dequant *d = &st->dq;
    const int b = d->use;
    const int made_ahead = d->pending[b]; /* (a pending buffer holds a copy of m: no fill) */
    if (made_ahead) {
        CHECK(!d->fill);
        CU(cudaStreamWaitEvent(st->stream, d->ready[b], 0));
        d->used_ahead++;
    }
    d->pending[b] = 0;
    if (d->fill) {
        dequantize(st->stream, &d->cur, d->buf[b]);
        d->held[b] = d->cur;
    }
    if (d->ahead) {
        const int a = !b;
        CU(cudaStreamWaitEvent(d->side, d->freed[a], 0));
        dequantize(d->side, &d->ahead_m, d->buf[a]);
        CU(cudaEventRecord(d->ready[a], d->side));
        d->held[a] = d->ahead_m;
        d->pending[a] = 1;
        d->made_ahead++;
    }
    return d->fill || made_ahead;
}

void cuda_dequant_done(cuda_state *st) {
    cuda_dequant *d = &st->dq;
    CU(cudaEventRecord(d->freed[d->use], st->stream));
    d->last = d->use;
}
