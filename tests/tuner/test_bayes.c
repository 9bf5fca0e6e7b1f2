/* test_bayes.c: the Bayesian strategy (tuner/strategy_bayes.c) driven in-process.
 *
 * The spaces are built in code (the loader has its own tests) and the "engine" is a known
 * function of the levels, so each test knows the true constrained optimum by enumeration.
 * What is checked: a fixed seed gives the same sequence of proposals (also with a fresh
 * strategy object per proposal, i.e. a resumed study, and with 1 or 2 OpenMP threads); no
 * proposal is ever observed or pending, and parallel workers (pending points) get
 * different points; a small lattice is exhausted exactly; a small constrained problem with
 * crashes is solved within 40 evaluations and rank() returns only feasible points, best
 * first; minimisation; the sampled-candidate mode for large lattices; a categorical level
 * measured infinite at two settings is not proposed again; the measured noise keeps
 * proposals reproducible.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "strategy.h"
#include "util.h"
#include "../test_util.h"

extern const strategy_ops bayes_ops;

/* ---- a hand-built space ---- */

enum { MAX_P = 6 };

typedef struct {
    space sp;
    param_def params[MAX_P];
    constraint_def cons[1];
    resolved_constraint rc[1];
    int n_rc;
} test_space;

static void add_int(test_space *t, const char *name, long min, long max, long step) {
    param_def *p = &t->params[t->sp.n_params++];
    memset(p, 0, sizeof *p);
    p->name = (char *)name;
    p->kind = PARAM_INT;
    p->min = min;
    p->max = max;
    p->step = step;
    p->n_levels = (int)((max - min) / step + 1);
    p->default_level = -1;
}

static char *cat_values[] = {"a", "b", "c", "d", "e"};

static void add_cat(test_space *t, const char *name, int n) {
    param_def *p = &t->params[t->sp.n_params++];
    memset(p, 0, sizeof *p);
    p->name = (char *)name;
    p->kind = PARAM_CATEGORICAL;
    p->values = cat_values;
    p->n_levels = n;
    p->default_level = -1;
}

static void space_init(test_space *t, int maximize) {
    memset(t, 0, sizeof *t);
    t->sp.params = t->params;
    t->sp.maximize = maximize;
    t->sp.objective = "f";
    t->sp.repeats = 1;
}

static void add_le(test_space *t, double bound) {
    t->cons[0] = (constraint_def){.metric = "c", .op = OP_LE, .value = bound, .text = "c <= b"};
    t->sp.constraints = t->cons;
    t->sp.n_constraints = 1;
    t->rc[0] = (resolved_constraint){.def = &t->cons[0], .bound = bound};
    t->n_rc = 1;
}

/* ---- the synthetic problem: levels -> (status, objective, constraint) ---- */

typedef struct {
    trial_status status;
    double f, c;
} outcome;

typedef outcome (*problem_fn)(const int *lv);

/* 21 x 21 x 3: objective peaks at (14, 5, cat 1), constraint x + y <= 15 cuts it off,
 * x >= 19 crashes. The constrained optimum is found by enumeration. */
static outcome problem_a(const int *lv) {
    if (lv[0] >= 19) return (outcome){TRIAL_FAILED, NAN, NAN};
    double bonus = lv[2] == 1 ? 3.0 : lv[2] == 2 ? 1.0 : 0.0;
    double f = 100.0 - 0.5 * (lv[0] - 14) * (lv[0] - 14) - 0.8 * (lv[1] - 5) * (lv[1] - 5) + bonus;
    return (outcome){TRIAL_OK, f, (double)(lv[0] + lv[1])};
}

/* ---- a sequential (or parallel, via pending) driver ---- */

typedef struct {
    int d, n;
    int *levels;  /* [cap][d] */
    double *cons; /* [cap] */
    observation *obs;
    int cap;
} history;

static void history_init(history *h, int d, int cap) {
    h->d = d;
    h->n = 0;
    h->cap = cap;
    h->levels = xcalloc((size_t)cap * (size_t)d, sizeof(int));
    h->cons = xcalloc((size_t)cap, sizeof(double));
    h->obs = xcalloc((size_t)cap, sizeof(observation));
}

static void history_free(history *h) {
    free(h->levels);
    free(h->cons);
    free(h->obs);
}

static void history_add(history *h, const int *lv, problem_fn fn) {
    CHECK(h->n < h->cap);
    int i = h->n++;
    memcpy(h->levels + (size_t)i * h->d, lv, (size_t)h->d * sizeof(int));
    outcome o = fn(lv);
    h->cons[i] = o.c;
    h->obs[i] = (observation){.levels = h->levels + (size_t)i * h->d,
                              .status = o.status,
                              .objective = o.f,
                              .cons = &h->cons[i],
                              .n_runs = 1};
}

static int same_point(const int *a, const int *b, int d) {
    return memcmp(a, b, (size_t)d * sizeof(int)) == 0;
}

/* Run n proposals; fresh: a new strategy object for every proposal (a resumed study).
 * Returns the number of proposals made; proposals go to seq[n][d]. Checks that no
 * proposal is observed already. */
static int run_sequence(test_space *t, problem_fn fn, uint64_t seed, int n, int fresh, int *seq,
                        history *h) {
    int d = t->sp.n_params;
    strategy *s = fresh ? NULL : bayes_ops.create(&t->sp, seed);
    int made = 0;
    for (int k = 0; k < n; k++) {
        if (fresh) s = bayes_ops.create(&t->sp, seed);
        int lv[MAX_P];
        int ok = bayes_ops.propose(s, h->obs, h->n, t->rc, t->n_rc, NULL, 0, lv);
        if (fresh) {
            bayes_ops.destroy(s);
            s = NULL;
        }
        if (!ok) break;
        for (int j = 0; j < d; j++)
            EXPECT(lv[j] >= 0 && lv[j] < t->params[j].n_levels);
        for (int i = 0; i < h->n; i++)
            EXPECT(!same_point(lv, h->obs[i].levels, d));
        memcpy(seq + (size_t)k * d, lv, (size_t)d * sizeof(int));
        history_add(h, lv, fn);
        made++;
    }
    if (s) bayes_ops.destroy(s);
    return made;
}

static void problem_a_space(test_space *t) {
    space_init(t, 1);
    add_int(t, "X", 0, 20, 1);
    add_int(t, "Y", 0, 40, 2);
    add_cat(t, "C", 3);
    add_le(t, 15.5);
}

/* The true constrained optimum of problem_a by enumeration. */
static double problem_a_best(const test_space *t) {
    double best = -INFINITY;
    int lv[3];
    for (lv[0] = 0; lv[0] < t->params[0].n_levels; lv[0]++)
        for (lv[1] = 0; lv[1] < t->params[1].n_levels; lv[1]++)
            for (lv[2] = 0; lv[2] < 3; lv[2]++) {
                outcome o = problem_a(lv);
                if (o.status == TRIAL_OK && o.c <= 15.5 && o.f > best) best = o.f;
            }
    return best;
}

static void test_determinism(void) {
    test_space t;
    problem_a_space(&t);
    enum { N = 25 };
    int a[N * 3], b[N * 3], c[N * 3], e[N * 3];
    history h1, h2, h3, h4;
    history_init(&h1, 3, N);
    history_init(&h2, 3, N);
    history_init(&h3, 3, N);
    history_init(&h4, 3, N);
    EXPECT(run_sequence(&t, problem_a, 42, N, 0, a, &h1) == N);
    EXPECT(run_sequence(&t, problem_a, 42, N, 1, b, &h2) == N); /* resumed at every step */
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    EXPECT(run_sequence(&t, problem_a, 42, N, 0, c, &h3) == N);
    omp_set_num_threads(threads);
    EXPECT(memcmp(a, b, sizeof a) == 0);
    EXPECT(memcmp(a, c, sizeof a) == 0);
    /* Another seed: another initial design. */
    EXPECT(run_sequence(&t, problem_a, 43, N, 0, e, &h4) == N);
    EXPECT(memcmp(a, e, sizeof a) != 0);
    /* No duplicates within a sequence. */
    for (int i = 0; i < N; i++)
        for (int k = 0; k < i; k++)
            EXPECT(!same_point(a + 3 * i, a + 3 * k, 3));
    history_free(&h1);
    history_free(&h2);
    history_free(&h3);
    history_free(&h4);
}

static void test_finds_constrained_optimum(void) {
    test_space t;
    problem_a_space(&t);
    double best = problem_a_best(&t);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        enum { N = 40 };
        int seq[N * 3];
        history h;
        history_init(&h, 3, N);
        run_sequence(&t, problem_a, seed, N, 0, seq, &h);
        strategy *s = bayes_ops.create(&t.sp, seed);
        int order[N];
        int n = bayes_ops.rank(s, h.obs, h.n, t.rc, t.n_rc, order);
        EXPECT(n >= 1);
        for (int i = 0; i < n; i++) {
            /* Noise-free problem: everything ranked is feasible and measured OK. */
            EXPECT(observation_feasible(&h.obs[order[i]], t.rc, t.n_rc));
        }
        if (n >= 1) {
            double picked = h.obs[order[0]].objective;
            if (picked < best - 1e-9)
                fprintf(stderr, "seed %llu: pick %.3f, optimum %.3f\n", (unsigned long long)seed,
                        picked, best);
            EXPECT(picked >= best - 1e-9);
        }
        /* The crash region is avoided once learnt: few proposals with X >= 19. */
        int crashes = 0;
        for (int i = 0; i < h.n; i++)
            crashes += h.obs[i].status == TRIAL_FAILED;
        EXPECT(crashes <= 6);
        bayes_ops.destroy(s);
        history_free(&h);
    }
}

/* Parallel workers: keep W points pending, finish the oldest, propose again. No proposal
 * may equal an observed or pending point, and the W points in flight must differ. */
static void test_pending(void) {
    test_space t;
    problem_a_space(&t);
    enum { W = 4, N = 36 };
    history h;
    history_init(&h, 3, N + W);
    strategy *s = bayes_ops.create(&t.sp, 5);
    int pend[W][3];
    const int *pp[W];
    int n_pend = 0, proposed = 0;
    while (proposed < N) {
        while (n_pend < W && proposed < N) {
            for (int i = 0; i < n_pend; i++)
                pp[i] = pend[i];
            int lv[3];
            EXPECT(bayes_ops.propose(s, h.obs, h.n, t.rc, t.n_rc, pp, n_pend, lv));
            for (int i = 0; i < h.n; i++)
                EXPECT(!same_point(lv, h.obs[i].levels, 3));
            for (int i = 0; i < n_pend; i++)
                EXPECT(!same_point(lv, pend[i], 3));
            memcpy(pend[n_pend++], lv, sizeof lv);
            proposed++;
        }
        history_add(&h, pend[0], problem_a); /* the oldest finishes */
        memmove(pend[0], pend[1], sizeof(pend[0]) * (size_t)(n_pend - 1));
        n_pend--;
    }
    /* After the initial design, with a point pending, the next proposal is not that point
     * nor (thanks to the believer) a lattice neighbour of it. */
    int lv0[3], lv1[3];
    EXPECT(bayes_ops.propose(s, h.obs, h.n, t.rc, t.n_rc, NULL, 0, lv0));
    const int *one[1] = {lv0};
    EXPECT(bayes_ops.propose(s, h.obs, h.n, t.rc, t.n_rc, one, 1, lv1));
    int far = 0;
    for (int j = 0; j < 3; j++)
        far += abs(lv0[j] - lv1[j]);
    EXPECT(far >= 2);
    bayes_ops.destroy(s);
    history_free(&h);
}

static outcome problem_small(const int *lv) {
    return (outcome){TRIAL_OK, (double)(lv[0] * 3 + lv[1]), 0.0};
}

static void test_exhaustion(void) {
    test_space t;
    space_init(&t, 1);
    add_int(&t, "A", 1, 2, 1);
    add_cat(&t, "B", 3);
    int seq[7 * 2];
    history h;
    history_init(&h, 2, 7);
    EXPECT(run_sequence(&t, problem_small, 1, 7, 0, seq, &h) == 6);
    for (int i = 0; i < 6; i++)
        for (int k = 0; k < i; k++)
            EXPECT(!same_point(seq + 2 * i, seq + 2 * k, 2));
    history_free(&h);
}

/* Minimise (x - 17)^2 + (y - 3)^2 + 0.5 on 30 x 30 under y >= 4.5 (a ">=" constraint). */
static outcome problem_min(const int *lv) {
    double f = (lv[0] - 17) * (lv[0] - 17) + (lv[1] - 3) * (lv[1] - 3) + 0.5;
    return (outcome){TRIAL_OK, f, (double)lv[1]};
}

static void test_minimise(void) {
    test_space t;
    space_init(&t, 0);
    add_int(&t, "X", 0, 29, 1);
    add_int(&t, "Y", 0, 29, 1);
    t.cons[0] = (constraint_def){.metric = "c", .op = OP_GE, .value = 4.5, .text = "c >= 4.5"};
    t.sp.constraints = t.cons;
    t.sp.n_constraints = 1;
    t.rc[0] = (resolved_constraint){.def = &t.cons[0], .bound = 4.5};
    t.n_rc = 1;
    enum { N = 30 };
    int seq[N * 2];
    history h;
    history_init(&h, 2, N);
    run_sequence(&t, problem_min, 3, N, 0, seq, &h);
    strategy *s = bayes_ops.create(&t.sp, 3);
    int order[N];
    int n = bayes_ops.rank(s, h.obs, h.n, t.rc, t.n_rc, order);
    EXPECT(n >= 1);
    /* Optimum: x = 17, y = 5 (f = 4.5). */
    if (n >= 1) EXPECT(h.obs[order[0]].objective <= 4.5 + 1e-9);
    bayes_ops.destroy(s);
    history_free(&h);
}

/* Over 8192 points: sampled candidates. 5 x 100 levels = 10^10 points. */
static outcome problem_big(const int *lv) {
    double f = 0.0;
    for (int j = 0; j < 5; j++)
        f -= (lv[j] - 30.0 - 5 * j) * (lv[j] - 30.0 - 5 * j);
    return (outcome){TRIAL_OK, f, 0.0};
}

static void test_large_lattice(void) {
    test_space t;
    space_init(&t, 1);
    for (int j = 0; j < 5; j++)
        add_int(&t, "P", 0, 99, 1);
    enum { N = 40 };
    int seq[N * 5];
    history h;
    history_init(&h, 5, N);
    EXPECT(run_sequence(&t, problem_big, 9, N, 0, seq, &h) == N);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < i; k++)
            EXPECT(!same_point(seq + 5 * i, seq + 5 * k, 5));
    /* The model-based part must beat the initial design by a wide margin. */
    double init_best = -INFINITY, best = -INFINITY;
    for (int i = 0; i < N; i++) {
        if (i < 10) init_best = fmax(init_best, h.obs[i].objective);
        best = fmax(best, h.obs[i].objective);
    }
    EXPECT(best > init_best + 0.5 * fabs(init_best));
    history_free(&h);
}

/* Feasible only in a small corner (x <= 2 and y <= 2 of 21 x 21: 9 of 441 points), the
 * objective pulls the other way: while nothing feasible is known the strategy must climb
 * the probability of feasibility and find the corner. */
static outcome problem_corner(const int *lv) {
    return (outcome){TRIAL_OK, (double)(lv[0] + lv[1]), (double)(lv[0] > lv[1] ? lv[0] : lv[1])};
}

static void test_feasibility_search(void) {
    test_space t;
    space_init(&t, 1);
    add_int(&t, "X", 0, 20, 1);
    add_int(&t, "Y", 0, 20, 1);
    add_le(&t, 2.5);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        enum { N = 25 };
        int seq[N * 2];
        history h;
        history_init(&h, 2, N);
        run_sequence(&t, problem_corner, seed, N, 0, seq, &h);
        int first = -1;
        for (int i = 0; i < h.n && first < 0; i++)
            if (observation_feasible(&h.obs[i], t.rc, t.n_rc)) first = i;
        EXPECT(first >= 0);
        history_free(&h);
    }
}

/* No constraint, but x + y > 30 crashes: the failure pseudo-constraint must keep the
 * search mostly out of the crash region while it climbs to the edge of it. */
static outcome problem_crash(const int *lv) {
    if (lv[0] + lv[1] > 30) return (outcome){TRIAL_FAILED, NAN, NAN};
    return (outcome){TRIAL_OK, (double)(lv[0] + lv[1]), 0.0};
}

static void test_failures_avoided(void) {
    test_space t;
    space_init(&t, 1);
    add_int(&t, "X", 0, 20, 1);
    add_int(&t, "Y", 0, 20, 1);
    enum { N = 30 };
    int seq[N * 2];
    history h;
    history_init(&h, 2, N);
    run_sequence(&t, problem_crash, 2, N, 0, seq, &h);
    int crashes = 0;
    double best = -INFINITY;
    for (int i = 0; i < h.n; i++) {
        crashes += h.obs[i].status == TRIAL_FAILED;
        if (h.obs[i].status == TRIAL_OK) best = fmax(best, h.obs[i].objective);
    }
    EXPECT(best >= 29.0);
    EXPECT(crashes <= N / 3);
    history_free(&h);
}

/* A categorical level whose metric is always infinite (a keepset that misses a target) and
 * the most attractive objective: once it has been measured infinite at two settings, nothing
 * else to blame, it is never proposed again. */
static outcome problem_inf(const int *lv) {
    if (lv[2] == 2) return (outcome){TRIAL_INFEASIBLE, NAN, INFINITY};
    return (outcome){TRIAL_OK, (double)(lv[0] + lv[1]) + 5.0 * lv[2], (double)lv[0]};
}

static void test_infinite_level_condemned(void) {
    test_space t;
    space_init(&t, 1);
    add_int(&t, "X", 0, 20, 1);
    add_int(&t, "Y", 0, 20, 1);
    add_cat(&t, "K", 3);
    add_le(&t, 15.5);
    for (uint64_t seed = 1; seed <= 3; seed++) {
        enum { N = 40 };
        int seq[N * 3];
        history h;
        history_init(&h, 3, N);
        run_sequence(&t, problem_inf, seed, N, 0, seq, &h);
        int n_inf = 0, after = 0;
        for (int i = 0; i < h.n; i++) {
            if (seq[i * 3 + 2] != 2) continue;
            after += n_inf >= 2;
            n_inf++;
        }
        EXPECT(after == 0);
        history_free(&h);
    }
}

/* The measured noise enters the model, and proposals stay a function of the seed, the
 * observations and that noise: a fresh strategy per proposal (a resume) repeats them. */
static void test_noise_deterministic(void) {
    test_space t;
    problem_a_space(&t);
    enum { N = 16 };
    int seq[2][N * 3];
    for (int fresh = 0; fresh <= 1; fresh++) {
        history h;
        history_init(&h, 3, N);
        strategy *s = NULL;
        for (int k = 0; k < N; k++) {
            if (!s) s = bayes_ops.create(&t.sp, 4);
            bayes_ops.set_noise(s, 0.03);
            CHECK(bayes_ops.propose(s, h.obs, h.n, t.rc, t.n_rc, NULL, 0, seq[fresh] + k * 3));
            history_add(&h, seq[fresh] + k * 3, problem_a);
            if (fresh) {
                bayes_ops.destroy(s);
                s = NULL;
            }
        }
        if (s) bayes_ops.destroy(s);
        history_free(&h);
    }
    EXPECT(memcmp(seq[0], seq[1], sizeof seq[0]) == 0);
}

int main(void) {
    test_infinite_level_condemned();
    test_noise_deterministic();
    test_determinism();
    test_finds_constrained_optimum();
    test_pending();
    test_exhaustion();
    test_minimise();
    test_large_lattice();
    test_feasibility_search();
    test_failures_avoided();
    return test_exit("test_bayes");
}
