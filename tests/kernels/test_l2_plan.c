/* test_l2_plan.c: the plan of the L2 weight-prefetch branch (kernels/backend_cuda_prefetch.c),
 * which needs no GPU: which device ranges a window of the step's weight line maps to, and which
 * window each product asks for. Every expected number is worked out by hand in the comments.
 *
 * The plan used throughout, three products laid end to end:
 *   product 0: one matrix A of 1600 bytes              plan bytes [0, 1600)
 *   product 1: a pair G, U of 3200 bytes each           plan bytes [1600, 8000)
 *              (read side by side: plan offset 1600 + 2x is byte x of G and of U)
 *   product 2: two matrices Q (800), K (480) in order   plan bytes [8000, 9280) */
#include <stdio.h>
#include <string.h>

#include "backend_cuda_prefetch.h"
#include "util.h"
#include "../test_util.h"

static char A[1600], G[3200], U[3200], Q[800], K[480];

typedef struct {
    const void *p[16];
    size_t n[16];
    int count;
} seen;

static void collect(void *ctx, const void *ptr, size_t bytes) {
    seen *s = ctx;
    if (s->count < 16) {
        s->p[s->count] = ptr;
        s->n[s->count] = bytes;
    }
    s->count++;
}

static seen walk(const l2_plan *p, size_t from, size_t to) {
    seen s;
    memset(&s, 0, sizeof s);
    l2_plan_walk(p, from, to, collect, &s);
    return s;
}

#define EXPECT_RANGE(s, i, base, off, len)                                                         \
    EXPECT((s).p[i] == (const char *)(base) + (off) && (s).n[i] == (size_t)(len),                  \
           "range %d: got +%td, %zu", i, (const char *)(s).p[i] - (const char *)(base), (s).n[i])

int main(void) {
    util_progname = "test_l2_plan";
    l2_plan p;
    memset(&p, 0, sizeof p);
    l2_plan_add(&p, &(l2_part){{A, NULL}, {sizeof A, 0}, 1}, 1);
    l2_plan_add(&p, &(l2_part){{G, U}, {sizeof G, sizeof U}, 2}, 1);
    const l2_part qk[2] = {{{Q, NULL}, {sizeof Q, 0}, 1}, {{K, NULL}, {sizeof K, 0}, 1}};
    l2_plan_add(&p, qk, 2);
    EXPECT(p.n_prods == 3 && p.n_parts == 4 && p.total == 9280);
    EXPECT(p.prods[1].start == 1600 && p.prods[1].bytes == 6400);
    EXPECT(p.prods[2].start == 8000 && p.prods[2].bytes == 1280 && p.prods[2].n_parts == 2);

    /* the whole line: every matrix whole, in order */
    seen s = walk(&p, 0, 9280);
    EXPECT(s.count == 5);
    EXPECT_RANGE(s, 0, A, 0, 1600);
    EXPECT_RANGE(s, 1, G, 0, 3200);
    EXPECT_RANGE(s, 2, U, 0, 3200);
    EXPECT_RANGE(s, 3, Q, 0, 800);
    EXPECT_RANGE(s, 4, K, 0, 480);

    /* [3200, 6400) is the pair's bytes [1600, 4800): G and U each give [800, 2400) */
    s = walk(&p, 3200, 6400);
    EXPECT(s.count == 2);
    EXPECT_RANGE(s, 0, G, 800, 1600);
    EXPECT_RANGE(s, 1, U, 800, 1600);

    /* [1000, 1700): A's last 600 bytes, its start rounded down to 16 bytes: [992, 1600); then
     * the pair's first 100 = 50 of each, the end rounded down: [0, 48) of G and of U */
    s = walk(&p, 1000, 1700);
    EXPECT(s.count == 3);
    EXPECT_RANGE(s, 0, A, 992, 608);
    EXPECT_RANGE(s, 1, G, 0, 48);
    EXPECT_RANGE(s, 2, U, 0, 48);

    /* [8500, 20000): clipped to the line's end: Q from 500 (rounded down: 496), all of K */
    s = walk(&p, 8500, 20000);
    EXPECT(s.count == 2);
    EXPECT_RANGE(s, 0, Q, 496, 304);
    EXPECT_RANGE(s, 1, K, 0, 480);

    /* a range inside 16 bytes asks for nothing; an empty one neither */
    EXPECT(walk(&p, 1604, 1610).count == 0);
    EXPECT(walk(&p, 5000, 5000).count == 0);

    /* Windows, 2000 bytes ahead: product 0 (ends at 1600) asks for [1600, 3600); product 1
     * (ends at 8000) for [8000, 9280), the line's end; product 2 (ends at 9280) for nothing. */
    size_t frontier = 0, from, to;
    l2_plan_window(&p, 0, 2000, &frontier, &from, &to);
    EXPECT(from == 1600 && to == 3600 && frontier == 3600, "%zu %zu %zu", from, to, frontier);
    l2_plan_window(&p, 1, 2000, &frontier, &from, &to);
    EXPECT(from == 8000 && to == 9280 && frontier == 9280, "%zu %zu %zu", from, to, frontier);
    l2_plan_window(&p, 2, 2000, &frontier, &from, &to);
    EXPECT(from >= to, "%zu %zu", from, to);

    /* 8000 ahead: product 0 asks for [1600, 9280); product 1 then has nothing left to ask for,
     * since the frontier is already past its end */
    frontier = 0;
    l2_plan_window(&p, 0, 8000, &frontier, &from, &to);
    EXPECT(from == 1600 && to == 9280, "%zu %zu", from, to);
    l2_plan_window(&p, 1, 8000, &frontier, &from, &to);
    EXPECT(from >= to && frontier == 9280, "%zu %zu %zu", from, to, frontier);

    /* off: no branch, and every call takes the NULL */
    l2_ahead *off = l2_ahead_new(0, K_L2_BULK, 1);
    EXPECT(off == NULL);
    l2_ahead_step_begin(off, 1, 1, NULL);
    l2_ahead_product(off, qk, 2);
    l2_ahead_launched(off);
    l2_ahead_step_end(off);
    l2_ahead_free(off);

    l2_plan_clear(&p);
    EXPECT(p.total == 0 && p.n_prods == 0 && p.parts == NULL);
    return test_exit("test_l2_plan");
}
