/* test_strategies.c: the grid and Sobol strategies and the shared feasibility rule.
 *
 * A strategy is driven here the way the sweep drives it: propose, then either mark the point
 * pending or record it as observed, and ask again. Grid must enumerate every lattice point
 * exactly once in odometer order; Sobol must be a pure function of (seed, observed, pending),
 * cover a small lattice completely without a repeat, and never propose a pending point.
 * Runs in tests/tuner (the spaces/ fixtures). */
#include "space.h"
#include "strategy.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../test_util.h"

static space *load(const char *path) {
    char err[1024];
    space *sp = space_load(path, err, sizeof err);
    if (!sp) die("%s", err);
    return sp;
}

/* The points seen so far in a simulated sweep. */
typedef struct {
    int n_params;
    int n;
    int *levels;      /* [cap * n_params] point i at levels + i * n_params */
    observation *obs; /* [cap] views of levels */
} history;

static void history_init(history *h, const space *sp, int cap) {
    h->n_params = sp->n_params;
    h->n = 0;
    h->levels = xcalloc((size_t)cap * (size_t)sp->n_params, sizeof(int));
    h->obs = xcalloc((size_t)cap, sizeof *h->obs);
}

static void history_add(history *h, const int *levels) {
    int *dst = h->levels + (size_t)h->n * (size_t)h->n_params;
    memcpy(dst, levels, (size_t)h->n_params * sizeof(int));
    h->obs[h->n] = (observation){.levels = dst, .status = TRIAL_OK, .objective = h->n, .n_runs = 1};
    h->n++;
}

static void history_free(history *h) {
    free(h->levels);
    free(h->obs);
}

/* Linear index of a point in grid order (last parameter fastest). */
static long grid_index(const space *sp, const int *levels) {
    long idx = 0;
    for (int i = 0; i < sp->n_params; i++)
        idx = idx * sp->params[i].n_levels + levels[i];
    return idx;
}

/* Run a strategy to exhaustion with every proposal observed at once; the proposal order
 * goes into order[n_points]. Returns how many points it proposed. */
static int run_to_end(const space *sp, const char *name, uint64_t seed, long *order) {
    const strategy_ops *ops = strategy_find(name);
    CHECK(ops);
    strategy *s = ops->create(sp, seed);
    long n = space_n_points(sp);
    history h;
    history_init(&h, sp, (int)n + 1);
    int levels[64];
    int count = 0;
    while (count <= n && ops->propose(s, h.obs, h.n, NULL, 0, NULL, 0, levels)) {
        order[count++] = grid_index(sp, levels);
        history_add(&h, levels);
    }
    EXPECT(!ops->propose(s, h.obs, h.n, NULL, 0, NULL, 0, levels)); /* stays exhausted */
    ops->destroy(s);
    history_free(&h);
    return count;
}

static void expect_permutation(const long *order, int count, long n, const char *what) {
    char *seen = xcalloc((size_t)n, 1);
    int dup = 0;
    for (int i = 0; i < count; i++) {
        if (order[i] < 0 || order[i] >= n || seen[order[i]])
            dup++;
        else
            seen[order[i]] = 1;
    }
    if (count != n || dup) {
        fprintf(stderr, "%s: proposed %d points (%d repeats) of %ld\n", what, count, dup, n);
        failures++;
    }
    free(seen);
}

static void test_registry(void) {
    EXPECT(strategy_find("grid") && !strcmp(strategy_find("grid")->name, "grid"));
    EXPECT(strategy_find("sobol") && !strcmp(strategy_find("sobol")->name, "sobol"));
    EXPECT(strategy_find("annealing") == NULL && strategy_find("") == NULL);
    /* The names a space may give and the registry agree, both ways. */
    int n = 0;
    for (; space_strategy_names[n]; n++) {
        const strategy_ops *ops = strategy_find(space_strategy_names[n]);
        EXPECT(ops && !strcmp(ops->name, space_strategy_names[n]));
    }
    EXPECT(n == 3 && space_strategy_known("bayes") && !space_strategy_known("annealing"));
}

static void test_grid_order(void) {
    space *sp = load("spaces/good_small.yaml");
    long n = space_n_points(sp);
    EXPECT(n == 24);
    long order[32];
    int count = run_to_end(sp, "grid", 0, order);
    EXPECT(count == 24);
    for (int i = 0; i < count; i++)
        EXPECT(order[i] == i); /* odometer order, exactly once */

    /* Pending points are skipped; an observed point out of order does not shift the rest. */
    const strategy_ops *ops = strategy_find("grid");
    strategy *s = ops->create(sp, 99);
    history h;
    history_init(&h, sp, 4);
    int p0[3] = {0, 0, 0}, p1[3] = {0, 0, 1}, far[3] = {3, 2, 1}, levels[3];
    history_add(&h, far);
    const int *pending[] = {p0, p1};
    EXPECT(ops->propose(s, h.obs, h.n, NULL, 0, pending, 2, levels));
    EXPECT(levels[0] == 0 && levels[1] == 1 && levels[2] == 0);
    EXPECT(ops->propose(s, h.obs, h.n, NULL, 0, pending, 1, levels));
    EXPECT(grid_index(sp, levels) == 1);
    ops->destroy(s);
    history_free(&h);
    space_free(sp);
}

static void test_sobol_covers_and_is_deterministic(void) {
    const char *files[] = {"spaces/good_small.yaml", "spaces/good_cube.yaml"};
    for (int f = 0; f < 2; f++) {
        space *sp = load(files[f]);
        long n = space_n_points(sp);
        long *a = xcalloc((size_t)n + 1, sizeof *a), *b = xcalloc((size_t)n + 1, sizeof *b);
        long *c = xcalloc((size_t)n + 1, sizeof *c);
        int na = run_to_end(sp, "sobol", 1, a);
        int nb = run_to_end(sp, "sobol", 1, b);
        int nc = run_to_end(sp, "sobol", 2, c);
        expect_permutation(a, na, n, files[f]);
        expect_permutation(c, nc, n, files[f]);
        EXPECT(na == nb && !memcmp(a, b, (size_t)na * sizeof *a)); /* same seed, same order */
        EXPECT(memcmp(a, c, (size_t)na * sizeof *a) != 0);         /* another seed, another */
        /* Not the grid order: the first proposals spread over the lattice. */
        int in_order = 0;
        for (int i = 0; i < na; i++)
            in_order += a[i] == i;
        EXPECT(in_order < na / 2);
        free(a);
        free(b);
        free(c);
        space_free(sp);
    }
}

/* The first proposals of Sobol spread over each axis: with 16 draws on the 16-level log axis
 * of good_cube every level-quarter is hit, and the 5-level axes see all five levels. */
static void test_sobol_spread(void) {
    space *sp = load("spaces/good_cube.yaml");
    const strategy_ops *ops = strategy_find("sobol");
    strategy *s = ops->create(sp, 0);
    history h;
    history_init(&h, sp, 32);
    int seen_q[5] = {0}, seen_r[5] = {0}, quarter[4] = {0}, levels[3];
    for (int i = 0; i < 20; i++) {
        CHECK(ops->propose(s, h.obs, h.n, NULL, 0, NULL, 0, levels));
        history_add(&h, levels);
        seen_q[levels[1]] = seen_r[levels[2]] = 1;
        long v = sp->params[0].min + levels[0]; /* P: 1..16 on a log scale */
        quarter[v < 2 ? 0 : v < 4 ? 1 : v < 8 ? 2 : 3] = 1;
    }
    for (int i = 0; i < 5; i++)
        EXPECT(seen_q[i] && seen_r[i]);
    for (int i = 0; i < 4; i++)
        EXPECT(quarter[i]);
    ops->destroy(s);
    history_free(&h);
    space_free(sp);
}

/* Pending points are never proposed, and proposing is a pure function of its inputs: a fresh
 * strategy object given the same history proposes the same point (what resume relies on). */
static void test_sobol_pending_and_purity(void) {
    space *sp = load("spaces/good_small.yaml");
    const strategy_ops *ops = strategy_find("sobol");
    strategy *s = ops->create(sp, 5);
    history h;
    history_init(&h, sp, 32);
    int pend[24][3];
    const int *pending[24];
    int n_pending = 0, levels[3];
    /* Keep everything pending until the lattice is full: every proposal must be new. */
    while (ops->propose(s, h.obs, h.n, NULL, 0, pending, n_pending, levels)) {
        for (int i = 0; i < n_pending; i++)
            EXPECT(memcmp(pending[i], levels, sizeof levels) != 0);
        CHECK(n_pending < 24);
        memcpy(pend[n_pending], levels, sizeof levels);
        pending[n_pending] = pend[n_pending];
        n_pending++;
    }
    EXPECT(n_pending == 24);
    /* Half observed, half pending: still nothing to propose. */
    for (int i = 0; i < 12; i++)
        history_add(&h, pend[i]);
    EXPECT(!ops->propose(s, h.obs, h.n, NULL, 0, pending + 12, 12, levels));
    /* Free two points; a fresh object proposes the same one as the old object. */
    int a[3], b[3];
    EXPECT(ops->propose(s, h.obs, h.n, NULL, 0, pending + 12, 10, a));
    strategy *fresh = ops->create(sp, 5);
    EXPECT(ops->propose(fresh, h.obs, h.n, NULL, 0, pending + 12, 10, b));
    EXPECT(!memcmp(a, b, sizeof a));
    EXPECT(!memcmp(a, pend[22], sizeof a) || !memcmp(a, pend[23], sizeof a));
    ops->destroy(fresh);
    ops->destroy(s);
    history_free(&h);
    space_free(sp);
}

static void test_feasible(void) {
    space *sp = load("spaces/good_full.yaml"); /* ppl <= 2.42, ppl <= 1.05*baseline, tps > 10 */
    resolved_constraint rc[3] = {
        {&sp->constraints[0], 2.42}, {&sp->constraints[1], 1.05 * 2.3}, {&sp->constraints[2], 10}};
    int lv[3] = {0, 0, 0};
    double ok[3] = {2.40, 2.40, 50}, at_bound[3] = {2.415, 2.415, 10.0};
    double over[3] = {2.43, 2.43, 50}, inf[3] = {INFINITY, INFINITY, 50};
    double nan3[3] = {NAN, NAN, NAN}, over_rel[3] = {2.419, 2.419, 50};
    observation o = {.levels = lv, .status = TRIAL_OK, .objective = 50, .cons = ok, .n_runs = 1};
    EXPECT(observation_feasible(&o, rc, 3));
    o.cons = at_bound; /* tps > 10 is strict: 10 fails */
    EXPECT(!observation_feasible(&o, rc, 3));
    EXPECT(observation_feasible(&o, rc, 2)); /* <= holds at the bound */
    o.cons = over;
    EXPECT(!observation_feasible(&o, rc, 3));
    o.cons = over_rel; /* inside 2.42 but over 1.05 * 2.3 = 2.415 */
    EXPECT(!observation_feasible(&o, rc, 3));
    o.cons = inf;
    EXPECT(!observation_feasible(&o, rc, 3));
    o.cons = nan3;
    EXPECT(!observation_feasible(&o, rc, 3));
    o.cons = ok;
    o.status = TRIAL_INFEASIBLE;
    EXPECT(!observation_feasible(&o, rc, 3));
    o.status = TRIAL_FAILED;
    EXPECT(!observation_feasible(&o, rc, 3));
    o.status = TRIAL_OK;
    EXPECT(observation_feasible(&o, NULL, 0)); /* no constraints: every measured point */
    rc[0].bound = NAN; /* an unknown bound (baseline not measured) is never satisfied */
    EXPECT(!observation_feasible(&o, rc, 3));
    space_free(sp);
}

/* A lattice far too large to linearise: proposals still work and never repeat. */
static void test_huge_lattice(void) {
    char path[] = "/tmp/test_strategies_XXXXXX.yaml";
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("engine: {command: ./e}\nobjective: {metric: tps}\nparameters:\n", f);
    for (int i = 0; i < 30; i++)
        fprintf(f, "  P%d: {type: int, min: 0, max: 999999}\n", i);
    fclose(f);
    space *sp = load(path);
    remove(path);
    EXPECT(space_n_points(sp) == LONG_MAX);
    const char *names[] = {"grid", "sobol"};
    for (int k = 0; k < 2; k++) {
        const strategy_ops *ops = strategy_find(names[k]);
        strategy *s = ops->create(sp, 3);
        history h;
        history_init(&h, sp, 50);
        int levels[30];
        for (int i = 0; i < 50; i++) {
            CHECK(ops->propose(s, h.obs, h.n, NULL, 0, NULL, 0, levels));
            for (int j = 0; j < h.n; j++)
                EXPECT(memcmp(h.obs[j].levels, levels, sizeof levels) != 0);
            history_add(&h, levels);
        }
        if (k == 0) EXPECT(levels[29] == 49 && levels[0] == 0); /* odometer: last is fastest */
        ops->destroy(s);
        history_free(&h);
    }
    space_free(sp);
}

int main(void) {
    test_registry();
    test_grid_order();
    test_sobol_covers_and_is_deterministic();
    test_sobol_spread();
    test_sobol_pending_and_purity();
    test_feasible();
    test_huge_lattice();
    return test_exit("test_strategies");
}
