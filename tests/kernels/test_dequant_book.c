/* test_dequant_book.c: the bookkeeping of the prefill products' two copy buffers
 * (kernels/backend_cuda_dequant_book.c) - host code, so a ctest test wherever the CUDA backend
 * is built; tests/kernels/cuda_ops_dequant.h checks the same on a GPU, with the products.
 *
 * The device is modelled: each buffer's contents (a matrix, or garbage) and the copy made ahead
 * into it that the main stream has not waited for yet (the side stream's write, which lands when
 * the main stream waits for it or when both streams synchronize: a buffer grows, or the copies
 * are forgotten). Over random sequences of products, with wrong guesses, repeats, buffers that
 * grow and copies forgotten, every product must
 *   - wait for a copy in flight into its buffer (else it would read a half-written buffer),
 *   - never write its buffer while one is in flight (the book checks this itself: it dies),
 *   - read its own matrix there, and
 *   - never have a copy made ahead into its own buffer.
 * And the counts that cuda_ops_dequant.h expects on the GPU (rounds A B C D, A B C D, A A B D C,
 * D C B A: made ahead 0, 4, 4, 2 and found 0, 3, 2, 1), the successor table past its growth, no
 * copy made ahead without guesses (profiling), and dq_same over every field. Under keep
 * (dq_keep), over devices of several sizes: which copies are kept and when, each product reading
 * its own, and the book serving the others with its checks above (test_keep). */
#include <stdio.h>
#include <string.h>

#include "backend_cuda_dequant_book.h"
#include "util.h"
#include "../test_util.h"

enum { N_MATS = 6, BIG = 300 };

static char hosts[BIG], devs[BIG]; /* distinct addresses: the matrices' keys, their copies */

static cuda_dq_matrix mat(int i) {
    return (cuda_dq_matrix){.host = &hosts[i],
                            .qm = {.dtype = i % 3 ? KQ_INT4 : KQ_INT8,
                                   .rows = 64 + 32 * (i % 5),
                                   .cols = 128 * (1 + i % 4),
                                   .group = 32 << (i % 3),
                                   .q = &devs[i],
                                   .scales = (const uint16_t *)(uintptr_t)(4096 + 64 * i)},
                            .e = i % 3 ? i - 2 : CUDA_NO_F16};
}

static int id_of(const cuda_dq_matrix *m) {
    return m->host ? (int)((const char *)m->host - hosts) : -1;
}

/* The device as the products see it. */
typedef struct {
    int content[2];  /* the matrix a buffer holds, -1: garbage */
    int inflight[2]; /* a copy made ahead into it, not waited for: its matrix, or -1 */
} device;

static void land(device *dv, int b) {
    if (dv->inflight[b] >= 0) dv->content[b] = dv->inflight[b];
    dv->inflight[b] = -1;
}

static void sync_all(device *dv) {
    land(dv, 0);
    land(dv, 1);
}

typedef struct {
    int grow_pct, forget_pct, guess; /* how often a buffer grows, copies are forgotten */
} chaos;

/* One product of matrix i, the backend's calls in order, checked against the model. */
static dq_steps product(dq_book *bk, device *dv, int i, const chaos *c) {
    const cuda_dq_matrix m = mat(i);
    if (c->forget_pct && rng_int(100) < c->forget_pct) {
        sync_all(dv);
        dq_book_forget(bk);
    }
    const int b = dq_book_choose(bk, &m);
    if (c->grow_pct && rng_int(100) < c->grow_pct) {
        sync_all(dv);
        dv->content[b] = -1;
        dq_book_cleared(bk, b);
    }
    const cuda_dq_matrix *a = dq_book_plan(bk, c->guess);
    if (a && c->grow_pct && rng_int(100) < c->grow_pct) {
        sync_all(dv);
        dv->content[!b] = -1;
        dq_book_cleared(bk, !b);
    }
    const dq_steps s = dq_book_fill(bk);
    EXPECT(dv->inflight[b] < 0 || s.wait,
           "product of matrix %d reads buffer %d, where the copy "
           "of %d is in flight, without waiting",
           i, b, dv->inflight[b]);
    if (s.wait) land(dv, b);
    if (s.fill) dv->content[b] = i;
    EXPECT(dv->content[b] == i, "product of matrix %d reads buffer %d, which holds %d", i, b,
           dv->content[b]);
    EXPECT(bk->use == b);
    if (s.ahead) {
        EXPECT(a && !dq_same(a, &m), "a copy made ahead of its own matrix");
        EXPECT(id_of(&bk->ahead_m) != i);
        dv->inflight[!b] = id_of(&bk->ahead_m); /* the side stream writes in order */
    }
    EXPECT(!s.ahead || c->guess, "a copy made ahead without guesses");
    dq_book_done(bk);
    return s;
}

static void test_rounds(void) {
    dq_book bk = {0};
    device dv = {{-1, -1}, {-1, -1}};
    const chaos calm = {.guess = 1};
    const int rounds[][5] = {{0, 1, 2, 3, -1}, {0, 1, 2, 3, -1}, {0, 0, 1, 3, 2}, {3, 2, 1, 0, -1}};
    const long want_made[] = {0, 4, 4, 2}, want_used[] = {0, 3, 2, 1};
    for (int r = 0; r < 4; r++) {
        const long made = bk.made_ahead, used = bk.used_ahead;
        for (int k = 0; k < 5 && rounds[r][k] >= 0; k++)
            product(&bk, &dv, rounds[r][k], &calm);
        EXPECT(bk.made_ahead - made == want_made[r] && bk.used_ahead - used == want_used[r],
               "round %d: %ld made ahead, %ld found (want %ld and %ld)", r + 1,
               bk.made_ahead - made, bk.used_ahead - used, want_made[r], want_used[r]);
    }
    dq_book_free(&bk);
}

/* Many matrices in a cycle: the successor table grows (64 slots at first) and keeps them all. */
static void test_many(void) {
    dq_book bk = {0};
    device dv = {{-1, -1}, {-1, -1}};
    const chaos calm = {.guess = 1};
    for (int r = 0; r < 3; r++) {
        const long made = bk.made_ahead, used = bk.used_ahead;
        for (int i = 0; i < BIG; i++)
            product(&bk, &dv, i, &calm);
        const long want_made = r ? BIG : 0, want_used = r ? BIG - (r == 1) : 0;
        EXPECT(bk.made_ahead - made == want_made && bk.used_ahead - used == want_used,
               "cycle %d of %d matrices: %ld made ahead, %ld found (want %ld and %ld)", r + 1, BIG,
               bk.made_ahead - made, bk.used_ahead - used, want_made, want_used);
    }
    EXPECT(bk.n_links == BIG && bk.cap_links >= 2 * BIG, "%zu links in %zu slots", bk.n_links,
           bk.cap_links);
    /* forgotten (after the side stream, as cuda_dequant_forget): nothing is made ahead until
     * the order is seen again */
    sync_all(&dv);
    dq_book_forget(&bk);
    const long made = bk.made_ahead;
    for (int i = 0; i < BIG; i++)
        product(&bk, &dv, i, &calm);
    EXPECT(bk.made_ahead == made, "%ld copies made ahead just after forget", bk.made_ahead - made);
    dq_book_free(&bk);
}

/* Random sequences: mostly a repeating order with wrong guesses, repeats and jumps mixed in. */
static void test_random(void) {
    for (int run = 0; run < 2000 && !failures; run++) {
        dq_book bk = {0};
        device dv = {{-1, -1}, {-1, -1}};
        const chaos c = {
            .grow_pct = run % 3 ? 5 : 0, .forget_pct = run % 5 ? 0 : 2, .guess = run % 7 != 0};
        int order[N_MATS];
        const int len = 2 + rng_int(N_MATS - 1);
        for (int k = 0; k < len; k++)
            order[k] = rng_int(N_MATS);
        long used = 0;
        for (int step = 0, k = 0; step < 200; step++) {
            const int roll = rng_int(100);
            const int i = roll < 80   ? order[k]
                          : roll < 90 ? order[(k + len - 1) % len]
                                      : rng_int(N_MATS);
            if (roll < 80 || roll >= 90) k = (k + 1) % len;
            used += product(&bk, &dv, i, &c).wait;
        }
        EXPECT(bk.used_ahead == used && used <= bk.made_ahead, "%ld found of %ld made ahead", used,
               bk.made_ahead);
        EXPECT(c.guess || bk.made_ahead == 0);
        dq_book_free(&bk);
    }
}

static void test_same(void) {
    const cuda_dq_matrix a = mat(1);
    EXPECT(dq_same(&a, &a));
    cuda_dq_matrix m = a;
    m.host = &hosts[2];
    EXPECT(!dq_same(&a, &m), "host");
    m = a, m.qm.q = (const char *)a.qm.q + 16;
    EXPECT(!dq_same(&a, &m), "q");
    m = a, m.qm.scales = a.qm.scales + 8;
    EXPECT(!dq_same(&a, &m), "scales");
    m = a, m.qm.dtype = KQ_INT8;
    EXPECT(!dq_same(&a, &m), "dtype");
    m = a, m.qm.rows++;
    EXPECT(!dq_same(&a, &m), "rows");
    m = a, m.qm.cols += 128;
    EXPECT(!dq_same(&a, &m), "cols");
    m = a, m.qm.group = 128;
    EXPECT(!dq_same(&a, &m), "group");
    m = a, m.e = CUDA_NO_F16;
    EXPECT(!dq_same(&a, &m), "e");
    /* fp16 w 2^e: 2 bytes a weight; bf16 hi and lo: 4 */
    EXPECT(dq_copy_bytes(&a) == 2 * (size_t)a.qm.rows * a.qm.cols);
    EXPECT(dq_copy_bytes(&m) == 4 * (size_t)m.qm.rows * m.qm.cols);
}

/* ---- kept copies (dq_keep) ----------------------------------------------------------------- */

/* A device of `free` bytes for kept copies, and the book for the products without one. */
typedef struct {
    dq_keep k;
    dq_book bk;
    device dv;
    size_t free;
    long made, book_products;
} keeper;

/* One product of matrix i under keep, the backend's calls in order (kept_copy in
 * backend_cuda_dequant.c), checked: a kept copy is matrix i's, made once; the rest go by the
 * book, checked by product(). Returns 1 when it read a kept copy. */
static int product_keep(keeper *kp, int i) {
    const cuda_dq_matrix m = mat(i);
    int make = 0;
    const int e = dq_keep_find(&kp->k, &m, &make);
    if (e >= 0 && make) {
        EXPECT(!kp->k.e[e].copy && !kp->k.full);
        if (dq_keep_room(&kp->k, &m, kp->free)) {
            kp->free -= dq_copy_bytes(&m);
            dq_keep_made(&kp->k, e, &devs[i]);
            kp->made++;
        } else {
            dq_keep_no_room(&kp->k);
        }
    }
    if (e >= 0 && kp->k.e[e].copy) {
        EXPECT(dq_same(&kp->k.e[e].m, &m) && kp->k.e[e].copy == &devs[i],
               "product of matrix %d reads the kept copy of %d", i, id_of(&kp->k.e[e].m));
        return 1;
    }
    const chaos calm = {.guess = 1};
    product(&kp->bk, &kp->dv, i, &calm);
    kp->book_products++;
    return 0;
}

/* Passes over BIG matrices on devices of several sizes: nothing is kept in the first pass; in
 * the second the copies are made in order while dq_keep_room allows (the two buffers at the
 * largest copy and DQ_KEEP_MARGIN stay free), the first that finds no room ends keeping; from
 * the third on nothing is made, the kept ones are read and the others go by the book, which then
 * finds its copies made ahead (its successors are those of the matrices without a copy). A
 * matrix at a reused host address (another dq_cuda_matrix) is a new entry. Forgotten: the first
 * pass again. */
static void test_keep(void) {
    size_t largest = 0, total = 0;
    for (int i = 0; i < BIG; i++) {
        const cuda_dq_matrix m = mat(i);
        largest = dq_copy_bytes(&m) > largest ? dq_copy_bytes(&m) : largest;
        total += dq_copy_bytes(&m);
    }
    const size_t reserve = 2 * largest + DQ_KEEP_MARGIN;
    const size_t frees[] = {0,
                            reserve,
                            reserve + total / 3,
                            reserve + total / 2 + 1000,
                            reserve + total,
                            reserve + 2 * total};
    for (size_t f = 0; f < sizeof frees / sizeof frees[0]; f++) {
        keeper kp = {.dv = {{-1, -1}, {-1, -1}}, .free = frees[f]};
        /* the copies the second pass makes: in order, until one finds no room */
        long want = 0;
        for (size_t left = frees[f]; want < BIG; want++) {
            const cuda_dq_matrix m = mat((int)want);
            if (left < dq_copy_bytes(&m) + reserve) break;
            left -= dq_copy_bytes(&m);
        }
        for (int pass = 0; pass < 4; pass++) {
            const long made = kp.made, book = kp.book_products, used = kp.bk.used_ahead;
            int read = 0;
            for (int i = 0; i < BIG; i++)
                read += product_keep(&kp, i);
            const long want_made = pass == 1 ? want : 0;
            const long want_read = pass == 0 ? 0 : want;
            EXPECT(kp.made - made == want_made && read == want_read &&
                       kp.book_products - book == BIG - want_read,
                   "free %zu, pass %d: %ld copies made, %d read, %ld by the book (want %ld, %ld, "
                   "%ld)",
                   frees[f], pass + 1, kp.made - made, read, kp.book_products - book, want_made,
                   want_read, BIG - want_read);
            EXPECT(kp.k.copies == (pass ? want : 0) && kp.k.n == BIG &&
                       kp.k.full == (pass && want < BIG),
                   "free %zu, pass %d: %d copies of %d entries, full %d", frees[f], pass + 1,
                   kp.k.copies, kp.k.n, kp.k.full);
            if (pass >= 2 && BIG - want >= 2)
                EXPECT(kp.bk.used_ahead - used >= BIG - want - 1,
                       "free %zu, pass %d: the book found %ld copies made ahead of %ld products",
                       frees[f], pass + 1, kp.bk.used_ahead - used, BIG - want);
        }
        /* another matrix at matrix 0's host address: its own entry, met once */
        cuda_dq_matrix other = mat(0);
        other.qm.rows += 32;
        int make = 1;
        EXPECT(dq_keep_find(&kp.k, &other, &make) == -1 && !make && kp.k.n == BIG + 1);
        /* forgotten (its copies freed): nothing kept until a matrix is met twice again */
        sync_all(&kp.dv);
        dq_book_forget(&kp.bk);
        dq_keep_forget(&kp.k);
        kp.free = frees[f];
        int read = 0;
        for (int i = 0; i < BIG; i++)
            read += product_keep(&kp, i);
        EXPECT(read == 0 && kp.k.copies == 0 && !kp.k.full, "free %zu: %d read after forget",
               frees[f], read);
        dq_book_free(&kp.bk);
        dq_keep_free(&kp.k);
    }
}

int main(void) {
    util_progname = "test_dequant_book";
    rng_seed_from_env();
    test_same();
    test_rounds();
    test_many();
    test_random();
    test_keep();
    return test_exit("test_dequant_book");
}
