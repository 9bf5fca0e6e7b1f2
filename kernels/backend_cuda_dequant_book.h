/* backend_cuda_dequant_book.h: the bookkeeping of the prefill products' two copy buffers
 * (backend_cuda_dequant.c) without the device: which buffer a product's 16-bit copy is in or
 * goes into, whether it must be written, and which matrix to copy ahead into the other buffer;
 * and under GEMMA_CUDA_DEQUANT=keep which copies are kept (dq_keep, at the end).
 * Plain C over plain values, so that tests/kernels/test_dequant_book.c checks it on the host;
 * backend_cuda_dequant.c does what it decides with streams, events and kernels.
 *
 * One product is these calls, in order:
 *   b = dq_book_choose(bk, m)    the buffer for m's copy (m also becomes its predecessor's
 *                                successor); if the caller reallocates buffer b: dq_book_cleared
 *   a = dq_book_plan(bk, guess)  whether b must be written, and the matrix to make ahead in the
 *                                other buffer (NULL: none; guess 0: never); if the caller
 *                                reallocates that buffer: dq_book_cleared
 *   s = dq_book_fill(bk)         inside the op: wait for a copy made ahead into b, or write b
 *                                now, and start the copy ahead
 *   dq_book_done(bk)             after the products that read b */
#ifndef BACKEND_CUDA_DEQUANT_BOOK_H
#define BACKEND_CUDA_DEQUANT_BOOK_H

#include <stddef.h>
#include <stdint.h>

#include "matvec_q.h"

/* cuda_weight_slot.f16_exp and cuda_dq_matrix.e of a matrix with no fp16 form */
#define CUDA_NO_F16 INT32_MIN

/* What dequantizing a matrix for cuBLAS needs: fp16 w 2^e (an int4 matrix's quant_f16_exponent)
 * or, where e is CUDA_NO_F16, bf16 hi then lo. */
typedef struct {
    const void *host; /* the tensor's host data: the key */
    k_qmat qm;        /* its device copy */
    int e;
} cuda_dq_matrix;

/* Is a copy of a one of m? Everything a copy depends on is compared: a tensor at a reused host
 * address may share its device copy with a bigger one (backend_cuda_weights.c). */
int dq_same(const cuda_dq_matrix *a, const cuda_dq_matrix *m);
/* The bytes of m's copy: rows x cols fp16, or bf16 hi and lo. */
size_t dq_copy_bytes(const cuda_dq_matrix *m);

typedef struct dq_link dq_link;
typedef struct {
    cuda_dq_matrix held[2]; /* what each buffer holds, or is being written with */
    int pending[2];         /* buffer b's copy was made ahead and not yet waited for */
    cuda_dq_matrix cur;     /* the matrix of the product in progress (the next one's
                               predecessor) */
    int use, fill, last;    /* its buffer, whether to write it there, the buffer used before */
    int ahead;              /* whether dq_book_fill makes ahead_m in the other buffer */
    cuda_dq_matrix ahead_m;
    dq_link *links; /* each matrix's successor, cap_links slots, n_links used */
    size_t cap_links, n_links;
    long made_ahead, used_ahead; /* copies made ahead; products that found theirs so */
} dq_book;

/* What a product's op does on the device, in this order. */
typedef struct {
    int wait;  /* the main stream waits for buffer `use`'s copy made ahead (its ready event) */
    int fill;  /* the main stream writes buffer `use` with cur */
    int ahead; /* the side stream writes the other buffer with ahead_m (after its freed event) */
} dq_steps;

int dq_book_choose(dq_book *bk, const cuda_dq_matrix *m);
const cuda_dq_matrix *dq_book_plan(dq_book *bk, int guess);
dq_steps dq_book_fill(dq_book *bk);
void dq_book_done(dq_book *bk);
/* Buffer b was reallocated (both streams idle): it holds nothing. */
void dq_book_cleared(dq_book *bk, int b);
/* Forget every copy and successor (a weight's device copy moved); the counters stay. */
void dq_book_forget(dq_book *bk);
void dq_book_free(dq_book *bk);

/* ---- kept copies (GEMMA_CUDA_DEQUANT=keep) ---------------------------------------------------
 * Every matrix met gets an entry. From its second product on - once a whole forward pass has
 * put every weight on the device, as weights go there at first use - its copy is made once and
 * kept, while the device keeps room for it, for the two buffers at the largest copy met and for
 * DQ_KEEP_MARGIN. Once one finds no room, no more are made: the matrices without a copy go by
 * the two buffers (the book above sees only their products). One product under keep:
 *   i = dq_keep_find(k, m, &make)   -1: the buffers serve; else entry i's copy is read, and
 *                                   where make is 1 the caller allocates it (if dq_keep_room)
 *                                   and calls dq_keep_made, or dq_keep_no_room (buffers serve) */

/* device memory that keeping leaves free for scratch buffers to grow */
#define DQ_KEEP_MARGIN ((size_t)1 << 30)

typedef struct {
    cuda_dq_matrix m;
    void *copy; /* its copy on the device, or NULL (met once, or no room) */
} dq_kept;

typedef struct {
    dq_kept *e; /* n of cap: every matrix met, `copies` of them with a copy */
    int n, cap, copies;
    size_t bytes;   /* of the copies */
    size_t largest; /* the largest copy met */
    int full;       /* a copy found no room: no more are made */
} dq_keep;

int dq_keep_find(dq_keep *k, const cuda_dq_matrix *m, int *make);
/* Whether a device with free_bytes free has room for m's copy (see above). */
int dq_keep_room(const dq_keep *k, const cuda_dq_matrix *m, size_t free_bytes);
void dq_keep_made(dq_keep *k, int i, void *copy);
void dq_keep_no_room(dq_keep *k);
/* Forget every entry (the caller has freed the copies, their products done). */
void dq_keep_forget(dq_keep *k);
void dq_keep_free(dq_keep *k);

#endif
