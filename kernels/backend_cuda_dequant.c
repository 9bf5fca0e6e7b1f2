/* backend_cuda_dequant.c: the 16-bit copies of quantized matrices that a prefill chunk's cuBLAS
 * products read (backend_cuda_core.c matmul_quant), each made one product ahead on a second
 * stream, so that dequantizing a matrix overlaps the product before it.
 *
 * Dequantizing is a pass over memory (an int4 matrix: half a byte read and an fp16 written a
 * weight) and a prefill product is bound by the tensor cores, so the two can share the GPU. A
 * chunk multiplies the same matrices in the same order every time (forward.c's layers), so each
 * product starts its successor's copy into the other of two buffers. Which buffer, whether to
 * write it and what to make ahead is decided on the host by backend_cuda_dequant_book.c (tested
 * without a GPU); this file does it with streams, events and the dequantization kernels.
 *
 * Ordering, with two buffers and two events each: the side stream waits for `freed` (recorded on
 * the main stream after the last product that read the buffer) before writing a buffer; the main
 * stream waits for `ready` (recorded on the side stream after the write) before touching it.
 * Buffers grow with both streams synchronized, before the op starts. Profiling times every op
 * alone, so there nothing is made ahead. A weight copied anew (backend_cuda_weights.c: its host
 * memory was reused) makes the backend forget every copy and successor here: their device
 * addresses may be stale.
 *
 * Kept copies (GEMMA_CUDA_DEQUANT=keep). Each matrix's copy is made on the main stream at its
 * second prefill product and kept on the device, so later prompts make none: the whole-MLP
 * kernel's trade (weights held twice) for prefill. Which copies are kept, and when there is no
 * room for more, is the book's too (dq_keep); the matrices without one go by the two buffers.
 * E4B at int4 g32: 7.7 GB more, a 256-token prompt 14963 / 15036 tokens/s against 12585 /
 * 12568 made ahead (an H100, `engine bench`, the same run, binaries of 8a9c753). */
#include "backend_cuda_internal.h"

static void dequantize(cudaStream_t s, const cuda_dq_matrix *m, uint16_t *out) {
    const int bad = m->e == CUDA_NO_F16 ? k_dequant_q_bf16x2(s, &m->qm, out)
                                        : k_dequant_q4_f16(s, &m->qm, m->e, out);
    if (bad) die("CUDA: cannot dequantize a %d x %d matrix", m->qm.rows, m->qm.cols);
}

/* Buffer b holds at least m's copy; both streams are idle when it grows. */
static void grow(cuda_state *st, int b, const cuda_dq_matrix *m) {
    cuda_dequant *d = &st->dq;
    const size_t bytes = dq_copy_bytes(m);
    if (bytes <= d->cap[b]) return;
    CU(cudaStreamSynchronize(st->stream));
    CU(cudaStreamSynchronize(d->side));
    if (d->buf[b]) CU(cudaFree(d->buf[b]));
    CU(cudaMalloc((void **)&d->buf[b], bytes));
    d->cap[b] = bytes;
    dq_book_cleared(&d->book, b);
}

/* The entry of m's kept copy, made now where the book says so and the device has room
 * (d->cur_made); -1 where the buffers serve. */
static int kept_copy(cuda_state *st, const cuda_dq_matrix *m) {
    cuda_dequant *d = &st->dq;
    int make = 0;
    const int i = dq_keep_find(&d->kept, m, &make);
    d->cur_made = 0;
    if (i < 0) return -1;
    if (make) {
        size_t free_b = 0, total_b = 0;
        CU(cudaMemGetInfo(&free_b, &total_b));
        void *copy = NULL;
        if (!dq_keep_room(&d->kept, m, free_b) ||
            cudaMalloc(&copy, dq_copy_bytes(m)) != cudaSuccess) {
            (void)cudaGetLastError(); /* a failed allocation: the buffers serve from here on */
            dq_keep_no_room(&d->kept);
            return -1;
        }
        dq_keep_made(&d->kept, i, copy);
        d->cur_made = 1;
    }
    return i;
}

static void kept_free(cuda_dequant *d) {
    for (int i = 0; i < d->kept.n; i++)
        cudaFree(d->kept.e[i].copy);
    dq_keep_forget(&d->kept);
}

void cuda_dequant_init(cuda_state *st) {
    cuda_dequant *d = &st->dq;
    CU(cudaStreamCreateWithFlags(&d->side, cudaStreamNonBlocking));
    for (int b = 0; b < 2; b++) {
        CU(cudaEventCreateWithFlags(&d->ready[b], cudaEventDisableTiming));
        CU(cudaEventCreateWithFlags(&d->freed[b], cudaEventDisableTiming));
    }
    d->cur_i = -1;
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
    kept_free(d);
    dq_keep_free(&d->kept);
    dq_book_free(&d->book);
    *d = (cuda_dequant){0};
}

void cuda_dequant_forget(cuda_state *st) {
    CU(cudaStreamSynchronize(st->dq.side));
    dq_book_forget(&st->dq.book);
    CU(cudaStreamSynchronize(st->stream)); /* a product may still read a kept copy */
    kept_free(&st->dq);
}

uint16_t *cuda_dequant_take(cuda_state *st, const cuda_dq_matrix *m) {
    cuda_dequant *d = &st->dq;
    if (st->mode == 1) die("a prefill product inside a captured CUDA graph");
    d->cur_i = d->keep_on ? kept_copy(st, m) : -1;
    if (d->cur_i >= 0) return d->kept.e[d->cur_i].copy;
    const int b = dq_book_choose(&d->book, m);
    grow(st, b, m); /* (a buffer that holds m is big enough for it) */
    /* profiling times every op alone: nothing is made ahead there */
    const cuda_dq_matrix *a = dq_book_plan(&d->book, !st->profile);
    if (a) grow(st, !b, a);
    return d->buf[b];
}

int cuda_dequant_fill(cuda_state *st) {
    cuda_dequant *d = &st->dq;
    if (d->cur_i >= 0) {
        const dq_kept *k = &d->kept.e[d->cur_i];
        if (d->cur_made) {
            dequantize(st->stream, &k->m, k->copy);
            d->kept_writes++;
        }
        return d->cur_made;
    }
    const int b = d->book.use;
    const dq_steps s = dq_book_fill(&d->book);
    if (s.wait) CU(cudaStreamWaitEvent(st->stream, d->ready[b], 0));
    if (s.fill) dequantize(st->stream, &d->book.cur, d->buf[b]);
    if (s.ahead) {
        CU(cudaStreamWaitEvent(d->side, d->freed[!b], 0));
        dequantize(d->side, &d->book.ahead_m, d->buf[!b]);
        CU(cudaEventRecord(d->ready[!b], d->side));
    }
    return s.fill || s.wait;
}

void cuda_dequant_done(cuda_state *st) {
    cuda_dequant *d = &st->dq;
    if (d->cur_i >= 0) {
        d->cur_i = -1;
        return;
    }
    CU(cudaEventRecord(d->freed[d->book.use], st->stream));
    dq_book_done(&d->book);
}
