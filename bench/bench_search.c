/* bench_search.c: how many evaluations each search strategy needs on synthetic surfaces
 * shaped like the record's space. Runs the strategies in-process
 * through strategy.h, exactly as the sweep driver calls them, with no child processes.
 *
 * The space (per surface): SLIDING_WINDOW 128..256 (step 1 or 2), NUM_SPECULATIVE_TOKENS
 * 1..8, CENTROID_TOP_K (44..49, or 32..64 step 2), LM_HEAD_KEEPSET one of {0, 8192, 12288,
 * 16384, 24576} (categorical): about 31,000, 44,000 or 88,000 points.
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
 * Two surfaces reproduce search failures: F has three infinite keepsets that would be the
 * fastest (a large lm-head share) under a tight budget, so the objective's model keeps
 * promising them; G has two peaks in (k, top-k), the broad one of the model at k 6, top-k 50
 * and a narrow global one at k 4, top-k 42 (a spike on a small hill), where the broad one
 * reaches 0.955 of the optimum and only the spike's own (k, top-k) is within 99 %.
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
 * once it has both figures. Output: a markdown table, one row per surface and strategy, with
 * how many runs got there within --by evaluations (default 60) and the proposals per run of a
 * keepset already measured infinite at two or more settings and never finite
 * ("certain-infinite"); one line per run on stderr, and with BENCH_TRACE=1 one line per
 * evaluation (point, measured figures, the pick and its true quality). --timing T adds one
 * bayes run of the first chosen surface to T evaluations and a table of the seconds each
 * proposal took, by decade of trials observed. The strategy is told the measurement noise
 * through set_noise, as the sweep driver does after its baseline repeats.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_statistics_double.h>
#include <gsl/gsl_sort.h>

#include "strategy.h"
#include "util.h"

enum { N_PARAMS = 4, N_KEEP = 5 };

static const long keepsets[N_KEEP] = {0, 8192, 12288, 16384, 24576};
static char *keep_values[N_KEEP] = {"0", "8192", "12288", "16384", "24576"};
#define VOCAB     262144.0
#define TPS_NOISE 0.02 /* relative sd of a tps measurement */

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
    int peak_k, peak_t;      /* a second peak at k = peak_k, top-k = peak_t: tps x (1 + */
    double hill_h, hill_w;   /* hill_h exp(-r^2 / (2 hill_w^2)) + spike_h exp(-r^2 / (2 */
    double spike_h, spike_w; /* spike_w^2))), r the lattice distance in (k, top-k); 0: none */
} surface;

/* One surface per row reads better than one number per line. */
// clang-format off
static const surface surfaces[] = {
    /* name                                   step topk       a0    q     t*  c     wcost head  t0   p0    amp   tau  keepset ppl penalties            cliff bound crash */
    {"A: record-like",                          1, 44, 49, 1, 0.80, 0.30, 47, 0.10, 0.30, 0.25, 120, 2.30, 0.60, 30, {0, 0.012, 0.008, 0.005, 0.003}, 1, 2.42, 0, 0, 0, 0, 0, 0, 0},
    {"B: tight budget, crash corner",           1, 44, 49, 1, 0.75, 0.40, 45, 0.12, 0.35, 0.20, 100, 2.30, 0.50, 40, {0, 0.010, 0.006, 0.004, 0.002}, 2, 2.36, 1, 0, 0, 0, 0, 0, 0},
    {"C: loose budget, high acceptance",        1, 44, 49, 1, 0.86, 0.25, 48, 0.11, 0.25, 0.30, 140, 2.30, 0.80, 25, {0, 0.015, 0.010, 0.006, 0.003}, 1, 2.50, 0, 0, 0, 0, 0, 0, 0},
    {"D: wide top-k, window step 2",            2, 32, 64, 2, 0.82, 0.60, 52, 0.09, 0.30, 0.22, 110, 2.30, 0.60, 35, {0, 0.012, 0.008, 0.005, 0.003}, 1, 2.40, 0, 0, 0, 0, 0, 0, 0},
    {"E: low acceptance, steep cliff",          1, 44, 49, 1, 0.65, 0.35, 46, 0.15, 0.40, 0.28,  90, 2.30, 0.70, 30, {0, 0.020, 0.012, 0.007, 0.004}, 3, 2.45, 1, 0, 0, 0, 0, 0, 0},
    /* three infinite keepsets that would be the fastest (a large lm-head share), a tight budget */
    {"F: infinite keepsets, tight budget",      1, 44, 49, 1, 0.78, 0.30, 46, 0.10, 0.30, 0.30, 110, 2.30, 0.60, 30, {0, 0.020, 0.015, 0.012, 0.010}, 3, 2.37, 0, 0, 0, 0, 0, 0, 0},
    /* a broad local peak at k 6, top-k 50 (0.955 of the optimum) and a narrow global one at k 4,
     * top-k 42: a spike on a hill whose lattice neighbours measure 0.86-0.96 */
    {"G: two peaks in (k, top-k)",              1, 32, 64, 2, 0.80, 0.30, 50, 0.10, 0.30, 0.25, 120, 2.30, 0.60, 30, {0, 0.012, 0.008, 0.005, 0.003}, 1, 2.42, 0, 4, 42, 0.1207, 1.5, 0.0891, 0.5},
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
    if (s->hill_h > 0.0 || s->spike_h > 0.0) {
        double dk = (double)(k - s->peak_k), dtk = (double)(topk - s->peak_t) / s->topk_step;
        double r2 = dk * dk + dtk * dtk;
        tps *= 1.0 + s->hill_h * exp(-r2 / (2.0 * s->hill_w * s->hill_w)) +
               s->spike_h * exp(-r2 / (2.0 * s->spike_w * s->spike_w));
    }
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

/* CPU time of this process, all threads: on an idle machine a proposal's wall time is at most
 * this (and about half of it where the work runs on two threads). */
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    int reach;          /* evaluations to a 99 % pick; -1 when not within the cap */
    int violated;       /* final pick's true ppl above the bound (or it crashes) */
    double final_ratio; /* final pick's true tps / optimum (0 without a pick) */
    int certain_inf; /* proposals of a keepset already measured infinite >= 2 times, never finite */
    double seconds;
    double *propose_s;   /* [cap] seconds of each proposal (NAN where none was made) */
    double *propose_cpu; /* [cap] CPU seconds of this process (all threads) in each proposal */
} run_result;

/* Is the keepset of lv certain to give ppl = infinity: measured at least twice among the n
 * observations, infinite every time? */
static int certain_infinite(const observation *obs, int n, const int *lv) {
    int n_inf = 0;
    for (int i = 0; i < n; i++) {
        if (obs[i].levels[N_PARAMS - 1] != lv[N_PARAMS - 1]) continue;
        if (obs[i].status != TRIAL_INFEASIBLE || isfinite(obs[i].cons[0])) return 0;
        n_inf++;
    }
    return n_inf >= 2;
}

/* One run; full = 1 goes on to cap evaluations even after both figures are known. */
static run_result run_one(const surface *s, const bench_space *b, const strategy_ops *ops,
                          uint64_t seed, double opt, int cap, int budget, int full) {
    int d = N_PARAMS;
    int *levels = xmalloc((size_t)cap * d * sizeof(int));
    double *cons = xmalloc((size_t)cap * sizeof(double));
    observation *obs = xmalloc((size_t)cap * sizeof(observation));
    int *order = xmalloc((size_t)cap * sizeof(int));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)(seed * 1000003ULL + 17));
    strategy *st = ops->create(&b->sp, seed);
    if (ops->set_noise) ops->set_noise(st, TPS_NOISE); /* as the sweep driver measures it */
    run_result res = {.reach = -1, .violated = -1};
    res.propose_s = xmalloc((size_t)cap * sizeof(double));
    res.propose_cpu = xmalloc((size_t)cap * sizeof(double));
    for (int i = 0; i < cap; i++)
        res.propose_s[i] = res.propose_cpu[i] = NAN;
    double t0 = now_seconds();
    int n = 0;
    while (n < cap && (full || res.reach < 0 || res.violated < 0)) {
        int *lv = levels + (size_t)n * d;
        double tp = now_seconds(), cp = cpu_seconds();
        if (!ops->propose(st, obs, n, &b->rc, 1, NULL, 0, lv)) break;
        res.propose_s[n] = now_seconds() - tp;
        res.propose_cpu[n] = cpu_seconds() - cp;
        res.certain_inf += certain_infinite(obs, n, lv);
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
            o->objective = t.tps * (1.0 + TPS_NOISE * gsl_ran_gaussian(rng, 1.0));
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
    fprintf(stderr, "usage: bench_search [--seeds N] [--cap C] [--budget B] [--by E] "
                    "[--strategies bayes,sobol,grid] [--surfaces ABCDEFG] [--timing T]\n");
    exit(2);
}

/* One bayes run of the first chosen surface to T evaluations: the proposal times by decade of
 * trials already observed. */
static void timing_table(const surface *s, int t_cap) {
    bench_space b;
    bench_space_init(&b, s);
    int best[N_PARAMS];
    long n_feasible, n_near;
    double opt = true_optimum(s, &b, best, &n_feasible, &n_near);
    run_result r = run_one(s, &b, strategy_find("bayes"), 1, opt, t_cap, t_cap, 1);
    printf("\nProposal time of bayes on surface %s (seed 1, one run to %d evaluations):\n\n",
           s->name, t_cap);
    printf("| trials observed | mean s/proposal | max s/proposal | mean CPU s/proposal | max CPU "
           "s/proposal |\n|---|---|---|---|---|\n");
    for (int lo = 0; lo < t_cap; lo += 10) {
        double sum = 0.0, max = 0.0, csum = 0.0, cmax = 0.0;
        int cnt = 0;
        for (int i = lo; i < lo + 10 && i < t_cap; i++)
            if (isfinite(r.propose_s[i])) {
                sum += r.propose_s[i];
                max = fmax(max, r.propose_s[i]);
                csum += r.propose_cpu[i];
                cmax = fmax(cmax, r.propose_cpu[i]);
                cnt++;
            }
        if (cnt)
            printf("| %d-%d | %.3f | %.3f | %.3f | %.3f |\n", lo, lo + 9, sum / cnt, max,
                   csum / cnt, cmax);
    }
    free(r.propose_s);
    free(r.propose_cpu);
}

int main(int argc, char **argv) {
    util_progname = "bench_search";
    int n_seeds = 20, cap = 200, budget = 50, by = 60, t_cap = 0;
    const char *strategies = "bayes,sobol,grid", *which = "ABCDEFG";
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) usage();
        if (!strcmp(argv[i], "--seeds"))
            n_seeds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cap"))
            cap = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--budget"))
            budget = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--by"))
            by = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--timing"))
            t_cap = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--strategies"))
            strategies = argv[++i];
        else if (!strcmp(argv[i], "--surfaces"))
            which = argv[++i];
        else
            usage();
    }
    if (n_seeds < 0 || cap < 1 || budget < 1 || budget > cap || by < 1 || t_cap < 0) usage();

    if (n_seeds > 0) {
        printf("| surface | points | feasible | within 99 %% | optimum (W, k, top-k, keepset) -> "
               "tps | strategy | median evals to 99 %% | reached | within %d | violations at %d "
               "| median final tps/opt | certain-infinite proposals / run (max) | s/run |\n",
               by, budget);
        printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    }
    for (int si = 0; si < N_SURFACES && n_seeds > 0; si++) {
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
            int reached = 0, within = 0, violations = 0, inf_total = 0, inf_max = 0;
            double secs = 0.0;
            for (int seed = 1; seed <= n_seeds; seed++) {
                run_result r = run_one(s, &b, ops, (uint64_t)seed, opt, cap, budget, 0);
                reach[seed - 1] = r.reach < 0 ? INFINITY : r.reach;
                ratio[seed - 1] = r.final_ratio;
                reached += r.reach >= 0;
                within += r.reach >= 0 && r.reach <= by;
                violations += r.violated;
                inf_total += r.certain_inf;
                inf_max = r.certain_inf > inf_max ? r.certain_inf : inf_max;
                secs += r.seconds;
                fprintf(stderr,
                        "%s %s seed %d: reach %d, final %.4f%s, %d certain-infinite (%.1f s)\n",
                        s->name, tok, seed, r.reach, r.final_ratio, r.violated ? " VIOLATES" : "",
                        r.certain_inf, r.seconds);
                free(r.propose_s);
                free(r.propose_cpu);
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
                "%d/%d | %.4f | %.2f (%d) | %.2f |\n",
                s->name, space_n_points(&b.sp), n_feasible, n_near,
                b.params[0].min + best[0] * b.params[0].step, 1 + best[1],
                b.params[2].min + best[2] * b.params[2].step, keep_values[best[3]], opt, tok,
                medbuf, reached, n_seeds, within, n_seeds, violations, n_seeds,
                gsl_stats_median_from_sorted_data(ratio, 1, (size_t)n_seeds),
                (double)inf_total / n_seeds, inf_max, secs / n_seeds);
            fflush(stdout);
            free(reach);
            free(ratio);
        }
        free(list);
    }
    if (t_cap > 0)
        for (int si = 0; si < N_SURFACES; si++)
            if (strchr(which, surfaces[si].name[0])) {
                timing_table(&surfaces[si], t_cap);
                break;
            }
    return 0;
}
