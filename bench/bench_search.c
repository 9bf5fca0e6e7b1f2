/* bench_search.c: how many evaluations each search strategy needs on synthetic surfaces
 * shaped like the record's space. Runs the strategies in-process
 * through strategy.h, exactly as the sweep driver calls them, with no child processes.
 *
 * The space (per surface): SLIDING_WINDOW 128..256 (step 1 or 2), NUM_SPECULATIVE_TOKENS
 * 1..8, CENTROID_TOP_K (44..49, or 32..64 step 2), LM_HEAD_KEEPSET one of {0, 8192, 12288,
 * 16384, 24576} (categorical): about 31,000 or 44,000 points.
 *
 * A surface is a small performance model of speculative decoding (all in surface_eval):
 *   acceptance a = a0 (1 - q ((topk - t*) / 16)^2)         top-k: a shallow optimum
 *   tokens per target step = (1 - a^(k+1)) / (1 - a), cost per step = 1 + c k
 *                                                          k: an inverted U
 *   step time also grows with the window (attention) and shrinks with the keepset (the
 *   lm-head share h of the step scales with keepset / vocabulary);
 *   ppl = (p0 + A exp(-(w - 128) / tau)) (1 + keepset penalty)  the window sets ppl
 *   ppl = infinity below the keepset's coverage cliff            (measured, infeasible)
 *   some surfaces crash (failed trial) in a corner, like an out-of-memory.
 * The constraint is ppl <= bound; the objective tps, maximised.
 *
 * Measurements: tps with 2 % multiplicative Gaussian noise; ppl with 0.1 % (a deterministic
 * harness would give 0; a little noise makes "violates on re-evaluation" a real question).
 *
 * For each surface, strategy and seed: run the strategy for up to --cap evaluations; after
 * every evaluation take the pick (the strategy's rank() when it has one, else the best
 * measured feasible point, as the driver does); record the first evaluation at which the
 * pick's TRUE value is feasible and >= 99 % of the true constrained optimum (found by
 * enumeration); and at --budget evaluations record whether the pick's true ppl violates
 * the bound (the final manifest re-evaluated without noise) and its true tps. A run stops
 * once it has both figures. Output: a markdown table, one row per surface and strategy;
 * one line per run on stderr, and with BENCH_TRACE=1 one line per evaluation (point,
 * measured figures, the pick and its true quality).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_sort.h>

#include "strategy.h"
#include "util.h"

enum { N_PARAMS = 4, N_KEEP = 5 };

static const long keepsets[N_KEEP] = {0, 8192, 12288, 16384, 24576};
static char *keep_values[N_KEEP] = {"0", "8192", "12288", "16384", "24576"};
#define VOCAB 262144.0

/* One synthetic surface: the space shape and the model's constants. */
typedef struct {
    const char *name;
    int win_step; /* SLIDING_WINDOW 128..256 in this step */
    int topk_min, topk_max, topk_step;
    double a0, q, t_opt;     /* acceptance and its shallow optimum over top-k */
    double c;                /* drafting cost per speculative token (relative) */
    double wcost;            /* attention share of the step at window 256 */
    double head;             /* lm-head share of the step at full vocabulary */
    double t0;               /* tokens/s scale */
    double p0, amp, tau;     /* ppl(window) */
    double keep_pen[N_KEEP]; /* relative ppl increase per keepset */
    int cliff;               /* keepsets with index in [1, cliff] have infinite ppl */
    double bound;            /* ppl <= bound */
    int crash;               /* 1: window < 150 with k >= 7 crashes */
} surface;

/* One surface per row reads better than one number per line. */
// clang-format off
static const surface surfaces[] = {
    /* name                                   step topk       a0    q     t*  c     wcost head  t0   p0    amp   tau  keepset ppl penalties            cliff bound crash */
    {"A: record-like",                          1, 44, 49, 1, 0.80, 0.30, 47, 0.10, 0.30, 0.25, 120, 2.30, 0.60, 30, {0, 0.012, 0.008, 0.005, 0.003}, 1, 2.42, 0},
    {"B: tight budget, crash corner",           1, 44, 49, 1, 0.75, 0.40, 45, 0.12, 0.35, 0.20, 100, 2.30, 0.50, 40, {0, 0.010, 0.006, 0.004, 0.002}, 2, 2.36, 1},
    {"C: loose budget, high acceptance",        1, 44, 49, 1, 0.86, 0.25, 48, 0.11, 0.25, 0.30, 140, 2.30, 0.80, 25, {0, 0.015, 0.010, 0.006, 0.003}, 1, 2.50, 0},
    {"D: wide top-k, window step 2",            2, 32, 64, 2, 0.82, 0.60, 52, 0.09, 0.30, 0.22, 110, 2.30, 0.60, 35, {0, 0.012, 0.008, 0.005, 0.003}, 1, 2.40, 0},
    {"E: low acceptance, steep cliff",          1, 44, 49, 1, 0.65, 0.35, 46, 0.15, 0.40, 0.28,  90, 2.30, 0.70, 30, {0, 0.020, 0.012, 0.007, 0.004}, 3, 2.45, 1},
};
// clang-format on
#define N_SURFACES ((int)(sizeof surfaces / sizeof surfaces[0]))

typedef struct {
    int ok;          /* 0: crashed (failed trial) */
    double tps, ppl; /* ppl may be INFINITY */
} truth;

/* The true (noise-free) figures at a point given as values. */
static truth surface_eval(const surface *s, long w, long k, long topk, int keep_i) {
    if (s->crash && w < 150 && k >= 7) return (truth){0, NAN, NAN};
    double dt = (topk - s->t_opt) / 16.0;
    double a = s->a0 * (1.0 - s->q * dt * dt);
    double tokens = (1.0 - pow(a, (double)k + 1.0)) / (1.0 - a);
    double keep_frac = keepsets[keep_i] ? keepsets[keep_i] / VOCAB : 1.0;
    double step = (1.0 - s->head - s->wcost) + s->wcost * w / 256.0 + s->head * keep_frac;
    double tps = s->t0 * tokens / (step * (1.0 + s->c * k));
    double ppl = (s->p0 + s->amp * exp(-(w - 128.0) / s->tau)) * (1.0 + s->keep_pen[keep_i]);
    if (keep_i >= 1 && keep_i <= s->cliff) ppl = INFINITY;
    return (truth){1, tps, ppl};
}

/* ---- the space of a surface ---- */

typedef struct {
    space sp;
    param_def params[N_PARAMS];
    constraint_def con;
    resolved_constraint rc;
} bench_space;

static void bench_space_init(bench_space *b, const surface *s) {
    memset(b, 0, sizeof *b);
    static char *names[N_PARAMS] = {"SLIDING_WINDOW", "NUM_SPECULATIVE_TOKENS", "CENTROID_TOP_K",
                                    "LM_HEAD_KEEPSET"};
    long lo[3] = {128, 1, s->topk_min}, hi[3] = {256, 8, s->topk_max},
         st[3] = {s->win_step, 1, s->topk_step};
    for (int j = 0; j < 3; j++) {
        param_def *p = &b->params[j];
        p->name = names[j];
        p->kind = PARAM_INT;
        p->min = lo[j];
        p->max = hi[j];
        p->step = st[j];
        p->n_levels = (int)((hi[j] - lo[j]) / st[j] + 1);
        p->default_level = -1;
    }
    param_def *p = &b->params[3];
    p->name = names[3];
    p->kind = PARAM_CATEGORICAL;
    p->values = keep_values;
    p->n_levels = N_KEEP;
    p->default_level = -1;
    b->sp.params = b->params;
    b->sp.n_params = N_PARAMS;
    b->sp.objective = "tps";
    b->sp.maximize = true;
    b->con = (constraint_def){.metric = "ppl", .op = OP_LE, .value = s->bound, .text = "ppl"};
    b->sp.constraints = &b->con;
    b->sp.n_constraints = 1;
    b->sp.repeats = 1;
    b->rc = (resolved_constraint){.def = &b->con, .bound = s->bound};
}

static truth eval_levels(const surface *s, const bench_space *b, const int *lv) {
    return surface_eval(s, b->params[0].min + lv[0] * b->params[0].step, 1 + lv[1],
                        b->params[2].min + lv[2] * b->params[2].step, lv[3]);
}

/* True constrained optimum by enumeration; also counts the feasible points and those
 * within 99 % of the optimum. */
static double true_optimum(const surface *s, const bench_space *b, int *best, long *n_feasible,
                           long *n_near) {
    double opt = -INFINITY;
    int lv[N_PARAMS];
    long total = space_n_points(&b->sp);
    *n_feasible = 0;
    for (int pass = 0; pass < 2; pass++) {
        *n_near = 0;
        for (long i = 0; i < total; i++) {
            long r = i;
            for (int j = N_PARAMS - 1; j >= 0; j--) {
                lv[j] = (int)(r % b->params[j].n_levels);
                r /= b->params[j].n_levels;
            }
            truth t = eval_levels(s, b, lv);
            if (!t.ok || !(t.ppl <= s->bound)) continue;
            if (pass == 0) {
                (*n_feasible)++;
                if (t.tps > opt) {
                    opt = t.tps;
                    memcpy(best, lv, sizeof lv);
                }
            } else if (t.tps >= 0.99 * opt) {
                (*n_near)++;
            }
        }
    }
    return opt;
}

/* ---- one run ---- */

typedef struct {
    int reach;          /* evaluations to a 99 % pick; -1 when not within the cap */
    int violated;       /* final pick's true ppl above the bound (or it crashes) */
    double final_ratio; /* final pick's true tps / optimum (0 without a pick) */
    double seconds;
} run_result;

static run_result run_one(const surface *s, const bench_space *b, const strategy_ops *ops,
                          uint64_t seed, double opt, int cap, int budget) {
    int d = N_PARAMS;
    int *levels = xmalloc((size_t)cap * d * sizeof(int));
    double *cons = xmalloc((size_t)cap * sizeof(double));
    observation *obs = xmalloc((size_t)cap * sizeof(observation));
    int *order = xmalloc((size_t)cap * sizeof(int));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)(seed * 1000003ULL + 17));
    strategy *st = ops->create(&b->sp, seed);
    run_result res = {.reach = -1, .violated = -1};
    double t0 = now_seconds();
    int n = 0;
    while (n < cap && (res.reach < 0 || res.violated < 0)) {
        int *lv = levels + (size_t)n * d;
        if (!ops->propose(st, obs, n, &b->rc, 1, NULL, 0, lv)) break;
        truth t = eval_levels(s, b, lv);
        observation *o = &obs[n];
        *o = (observation){.levels = lv, .cons = &cons[n], .n_runs = 1};
        if (!t.ok) {
            o->status = TRIAL_FAILED;
            o->objective = NAN;
            cons[n] = NAN;
        } else if (!isfinite(t.ppl)) {
            o->status = TRIAL_INFEASIBLE;
            o->objective = NAN;
            cons[n] = INFINITY;
        } else {
            o->status = TRIAL_OK;
            o->objective = t.tps * (1.0 + 0.02 * gsl_ran_gaussian(rng, 1.0));
            cons[n] = t.ppl * (1.0 + 0.001 * gsl_ran_gaussian(rng, 1.0));
        }
        n++;

        /* The pick after n evaluations. */
        int pick = -1;
        if (ops->rank) {
            if (ops->rank(st, obs, n, &b->rc, 1, order) > 0) pick = order[0];
        } else {
            for (int i = 0; i < n; i++)
                if (observation_feasible(&obs[i], &b->rc, 1) &&
                    (pick < 0 || obs[i].objective > obs[pick].objective))
                    pick = i;
        }
        truth pt = pick >= 0 ? eval_levels(s, b, obs[pick].levels) : (truth){0, NAN, NAN};
        int feasible = pick >= 0 && pt.ok && pt.ppl <= s->bound;
        if (res.reach < 0 && feasible && pt.tps >= 0.99 * opt) res.reach = n;
        if (getenv("BENCH_TRACE"))
            fprintf(stderr, "  %3d: (%ld,%d,%ld,%s) tps %.1f ppl %.4f | pick %d true %.4f%s\n", n,
                    b->params[0].min + lv[0] * b->params[0].step, 1 + lv[1],
                    b->params[2].min + lv[2] * b->params[2].step, keep_values[lv[3]], o->objective,
                    cons[n - 1], pick, pick >= 0 ? pt.tps / opt : 0.0,
                    feasible ? "" : " (infeasible)");
        if (n == budget) {
            res.violated = pick >= 0 && !feasible; /* no pick at all: no manifest, no violation */
            res.final_ratio = feasible ? pt.tps / opt : 0.0;
        }
    }
    if (res.violated < 0) { /* the strategy stopped before the budget (lattice exhausted) */
        res.violated = 0;
        res.final_ratio = 0.0;
    }
    res.seconds = now_seconds() - t0;
    ops->destroy(st);
    gsl_rng_free(rng);
    free(levels);
    free(cons);
    free(obs);
    free(order);
    return res;
}

/* ---- main ---- */

static void usage(void) {
    fprintf(stderr, "usage: bench_search [--seeds N] [--cap C] [--budget B] "
                    "[--strategies bayes,sobol,grid] [--surfaces ABCDE]\n");
    exit(2);
}

int main(int argc, char **argv) {
    util_progname = "bench_search";
    int n_seeds = 20, cap = 200, budget = 50;
    const char *strategies = "bayes,sobol,grid", *which = "ABCDE";
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--seeds"))
            n_seeds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cap"))
            cap = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--budget"))
            budget = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--strategies"))
            strategies = argv[++i];
        else if (!strcmp(argv[i], "--surfaces"))
            which = argv[++i];
        else
            usage();
    }
    if (n_seeds < 1 || cap < 1 || budget < 1 || budget > cap) usage();

    printf("| surface | points | feasible | within 99 %% | optimum (W, k, top-k, keepset) -> tps "
           "| strategy | median evals to 99 %% | reached | violations at %d | median final "
           "tps/opt | s/run |\n",
           budget);
    printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int si = 0; si < N_SURFACES; si++) {
        const surface *s = &surfaces[si];
        if (!strchr(which, s->name[0])) continue;
        bench_space b;
        bench_space_init(&b, s);
        int best[N_PARAMS];
        long n_feasible, n_near;
        double opt = true_optimum(s, &b, best, &n_feasible, &n_near);
        char *list = xstrdup(strategies);
        for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
            const strategy_ops *ops = strategy_find(tok);
            if (!ops) die("unknown strategy '%s'", tok);
            double *reach = xmalloc((size_t)n_seeds * sizeof(double));
            double *ratio = xmalloc((size_t)n_seeds * sizeof(double));
            int reached = 0, violations = 0;
            double secs = 0.0;
            for (int seed = 1; seed <= n_seeds; seed++) {
                run_result r = run_one(s, &b, ops, (uint64_t)seed, opt, cap, budget);
                reach[seed - 1] = r.reach < 0 ? INFINITY : r.reach;
                ratio[seed - 1] = r.final_ratio;
                reached += r.reach >= 0;
                violations += r.violated;
                secs += r.seconds;
                fprintf(stderr, "%s %s seed %d: reach %d, final %.4f%s (%.1f s)\n", s->name, tok,
                        seed, r.reach, r.final_ratio, r.violated ? " VIOLATES" : "", r.seconds);
            }
            gsl_sort(reach, 1, (size_t)n_seeds);
            gsl_sort(ratio, 1, (size_t)n_seeds);
            double med = gsl_stats_median_from_sorted_data(reach, 1, (size_t)n_seeds);
            char medbuf[32];
            if (isfinite(med))
                snprintf(medbuf, sizeof medbuf, "%g", med);
            else
                snprintf(medbuf, sizeof medbuf, ">%d", cap);
            printf(
                "| %s | %ld | %ld | %ld | (%ld, %d, %ld, %s) -> %.2f | %s | %s | %d/%d | %d/%d | "
                "%.4f | %.2f |\n",
                s->name, space_n_points(&b.sp), n_feasible, n_near,
                b.params[0].min + best[0] * b.params[0].step, 1 + best[1],
                b.params[2].min + best[2] * b.params[2].step, keep_values[best[3]], opt, tok,
                medbuf, reached, n_seeds, violations, n_seeds,
                gsl_stats_median_from_sorted_data(ratio, 1, (size_t)n_seeds), secs / n_seeds);
            fflush(stdout);
            free(reach);
            free(ratio);
        }
        free(list);
    }
    return 0;
}
