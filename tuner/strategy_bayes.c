/* strategy_bayes.c: constrained Bayesian optimisation over the lattice (strategy "bayes").
 *
 * How a proposal is made, given the observations and the points still running:
 *
 * 1. Initial design. Until max(5, 2d) points are observed, walk a Sobol sequence (GSL's
 *    gsl_qrng_sobol; Halton beyond its 40 dimensions), shifted by a seed-dependent random
 *    offset modulo 1 (a Cranley-Patterson rotation, so seeds differ), map each point onto
 *    the lattice (level floor(u * n_levels)) and propose the first one not observed, pending
 *    or condemned (below).
 * 2. Surrogates (gp.h), refitted from scratch on the observations (so the proposal depends
 *    only on the journal, never on this process's history): one GP for the objective
 *    (points with status OK; a minimised objective is negated; failed trials enter at the
 *    worst objective seen, the usual imputation, so that a region that crashes offers no
 *    expected improvement; measured-infeasible points, whose objective the engine did not
 *    report, are left to the constraint GPs) and one per constraint,
 *    written g(x) = value - bound <= 0 (bound - value for >= constraints). Failed trials and
 *    infinite metrics count as infeasible: their g is imputed pessimistically as
 *    max(largest finite g, 0) + spread, spread = max(range of finite g, 0.1 |bound|, 1e-6),
 *    i.e. clearly on the wrong side of the bound, by as much as the data vary, without the
 *    unbounded values that would wreck the standardisation. A space with no constraint but
 *    with failed trials gets one pseudo-constraint instead (g = +1 failed, -1 not), so the
 *    search learns to stay away from what crashes. When the driver measured the noise
 *    (set_noise: relative sd r of one run), the objective GP gets a log-normal prior on its
 *    noise variance centred at (r * mean |objective|)^2, so a real narrow feature is not
 *    explained away as noise nor noise fitted as signal. Past 64 observations the
 *    hyperparameters are learnt on 64 of them (the 32 best, or nearest the bound, and an
 *    even spread of the rest) and the GP conditions on all: the cost of a fit stops growing.
 * 3. Pending points (parallel workers): Kriging believer. Each GP is conditioned, with its
 *    hyperparameters kept, on the pending points at their posterior means. That collapses
 *    the variance there and nearby, so the next worker's expected improvement moves away
 *    from what is already running; pending points are also excluded outright.
 * 4. Candidates: every lattice point when the lattice has at most 8,192 points; otherwise
 *    8,192 Sobol points mapped onto the lattice (rotated afresh for each number of
 *    observations, so successive proposals see different parts of it) plus the neighbours
 *    (one and two levels along each axis, and one level along each pair of axes) of the ten
 *    best observed points. Observed and pending points are never candidates. Every third
 *    proposal after the initial design is a local step: the candidates are then only the
 *    unmeasured lattice neighbours of the five best measured-feasible points (by posterior
 *    mean; one step along each ordinal knob, a step being 1/16 of its range for knobs of more
 *    than 32 levels, and every other level of each categorical one), so the region that
 *    decides the pick is measured, not only modelled.
 * 5. Score (acquisition.h): log EI of the objective over the incumbent (the current
 *    pick, see rank() below; before there is one, the best posterior mean among observed
 *    points that measured feasible) plus the log probability that every constraint is met
 *    on a re-measurement; while no observed point is feasible, that log probability
 *    alone. Both use the same rule as the pick, so the search improves what would be
 *    reported rather than points the pick would reject as too close to the bound. Scores go
 *    into an array in parallel (OpenMP); the argmax is taken serially with the lowest
 *    candidate index winning ties, so the thread count never changes a proposal.
 * 6. Hard evidence: a level of a knob measured infinite (TRIAL_INFEASIBLE) at two or more
 *    settings, never finite, and not explained by another such level (dead_levels) is
 *    condemned: no point with it is proposed while any other point is left. An infinite
 *    perplexity from a keepset that misses a target is a fact about the keepset, not a noisy
 *    figure for the GP to smooth over.
 *
 * Inputs of the GPs: int parameters at space_param_unit (their position in [0,1], log-
 * scaled where the space asks); categorical parameters as their level index, compared by
 * equality (gp.h: unordered, like a one-hot encoding).
 *
 * rank(): the pick is the best posterior mean of the objective among observed points whose
 * probability of meeting every constraint is at least 0.95, not the luckiest measurement.
 * That probability is taken for a re-measurement (posterior variance plus the learnt
 * noise), not for the noise-free value: the pick is what gets verified and reported, and
 * a point whose true ppl sits a hair inside the bound fails half of its re-runs.
 *
 * The fitted surrogates are memoised under a hash of the observations, so rank() after
 * propose() (or the reverse) on the same journal does not fit twice; a memo hit returns
 * exactly what a fresh fit would.
 *
 * Files: this one decides where to look (1, 3, 4, 6) and makes the pick; the surrogates
 * (2, the memo, and the scores of 5) are in strategy_bayes_models.c; the state both share
 * is in strategy_bayes.h.
 */
#include "strategy_bayes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_qrng.h>
#include <gsl/gsl_rng.h>

#include "gp.h"
#include "util.h"
#include "visited.h"

#define BAYES_LATTICE_MAX       8192L  /* candidates = whole lattice up to this many points */
#define BAYES_SOBOL_CANDIDATES  8192   /* otherwise this many Sobol points, plus neighbours */
#define BAYES_NEIGHBOUR_SOURCES 10     /* best observed points whose neighbours are candidates */
#define BAYES_INIT_WALK         100000 /* Sobol draws tried for one initial-design point */
#define BAYES_DEAD_MIN          2      /* unexplained infinite results that condemn a level */
#define BAYES_LOCAL_EVERY       3      /* every third proposal after the design is a local one */
#define BAYES_LOCAL_SOURCES     5      /* near-best points whose neighbours a local step tries */

/* ---- small helpers ---- */

/* The point of mixed-radix index idx (first parameter slowest); lattice mode only. */
static void index_point(const strategy *s, long idx, int *levels) {
    for (int j = s->d - 1; j >= 0; j--) {
        int n = s->sp->params[j].n_levels;
        levels[j] = (int)(idx % n);
        idx /= n;
    }
}

/* A low-discrepancy generator of dimension d: Sobol where GSL has it, else Halton. */
static gsl_qrng *qrng_new(int d) {
    return gsl_qrng_alloc(d <= 40 ? gsl_qrng_sobol : gsl_qrng_halton, (unsigned)d);
}

/* The next quasi-random point, rotated by shift[d], mapped onto the lattice. */
static void qrng_point(const strategy *s, const double *shift, gsl_qrng *q, int *levels) {
    double u[s->d];
    gsl_qrng_get(q, u);
    for (int j = 0; j < s->d; j++) {
        double v = u[j] + shift[j];
        v -= floor(v);
        int n = s->sp->params[j].n_levels;
        int l = (int)(v * n);
        levels[j] = l < n ? l : n - 1;
    }
}

/* ---- create / destroy ---- */

static strategy *bayes_create(const space *sp, uint64_t seed) {
    CHECK(sp->n_params >= 1);
    strategy *s = xcalloc(1, sizeof(strategy));
    s->sp = sp;
    s->seed = seed;
    s->d = sp->n_params;
    s->categorical = xcalloc((size_t)s->d, sizeof(int));
    for (int j = 0; j < s->d; j++)
        s->categorical[j] = sp->params[j].kind == PARAM_CATEGORICAL;
    s->n_points = space_n_points(sp);
    s->level_off = xmalloc((size_t)(s->d + 1) * sizeof(int));
    s->level_off[0] = 0;
    for (int j = 0; j < s->d; j++)
        s->level_off[j + 1] = s->level_off[j] + sp->params[j].n_levels;
    s->n_init = 2 * s->d > 5 ? 2 * s->d : 5;
    if (s->n_init > s->n_points) s->n_init = (int)s->n_points;

    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)(seed ^ (seed >> 32)) + 12345UL);
    s->shift = xmalloc((size_t)s->d * sizeof(double));
    for (int j = 0; j < s->d; j++)
        s->shift[j] = gsl_rng_uniform(rng);
    gsl_rng_free(rng);

    s->lattice = s->n_points <= BAYES_LATTICE_MAX;
    return s;
}

static void bayes_destroy(strategy *s) {
    if (!s) return;
    if (s->memo_valid) bayes_models_free(&s->memo);
    free(s->categorical);
    free(s->level_off);
    free(s->shift);
    free(s);
}

/* ---- hard evidence: levels that always give an infinite metric ---- */

/* dead[level_off[j] + l] = 1 when level l of parameter j is condemned: at least BAYES_DEAD_MIN
 * observations there, every one of them infinite (TRIAL_INFEASIBLE: the engine reported a
 * metric as null or infinite), and at least BAYES_DEAD_MIN of them not explained by a level
 * condemned before it. Levels are judged in order of their count of infinite results (ties:
 * categorical knobs first, then parameter and level order), so a knob that only met a bad
 * keepset twice is not condemned along with it. Failed trials are no evidence here (a crash
 * may be transient). */
static void dead_levels(const strategy *s, const observation *obs, int n_obs, unsigned char *dead) {
    int d = s->d, n_lv = s->level_off[d];
    int *all = xcalloc((size_t)n_lv, sizeof(int)), *inf = xcalloc((size_t)n_lv, sizeof(int));
    int *param = xmalloc((size_t)n_lv * sizeof(int));
    for (int j = 0; j < d; j++)
        for (int k = s->level_off[j]; k < s->level_off[j + 1]; k++)
            param[k] = j;
    memset(dead, 0, (size_t)n_lv);
    for (int i = 0; i < n_obs; i++)
        for (int j = 0; j < d; j++) {
            int k = s->level_off[j] + obs[i].levels[j];
            all[k]++;
            inf[k] += obs[i].status == TRIAL_INFEASIBLE;
        }
    for (;;) {
        int next = -1; /* the strongest candidate not judged yet */
        for (int k = 0; k < n_lv; k++) {
            if (all[k] < BAYES_DEAD_MIN || inf[k] != all[k]) continue;
            if (next < 0 || inf[k] > inf[next] ||
                (inf[k] == inf[next] && s->categorical[param[k]] > s->categorical[param[next]]))
                next = k;
        }
        if (next < 0) break;
        int j = param[next], l = next - s->level_off[j], unexplained = 0;
        for (int i = 0; i < n_obs; i++) {
            if (obs[i].levels[j] != l) continue;
            int explained = 0;
            for (int q = 0; q < d && !explained; q++)
                explained = q != j && dead[s->level_off[q] + obs[i].levels[q]];
            unexplained += !explained;
        }
        dead[next] = unexplained >= BAYES_DEAD_MIN;
        all[next] = -1; /* judged */
    }
    free(all);
    free(inf);
    free(param);
}

static int point_dead(const strategy *s, const unsigned char *dead, const int *levels) {
    for (int j = 0; j < s->d; j++)
        if (dead[s->level_off[j] + levels[j]]) return 1;
    return 0;
}

/* ---- proposing ---- */

/* Add to cand the lattice neighbours of lv that are not in excl: one and two levels along each
 * axis and one level along each pair of axes (local = 0), or for a local step one level along
 * each ordinal axis and every other level of each categorical one (local = 1). */
static void add_neighbours(const strategy *s, const int *src, const visited_set *excl,
                           visited_set *cand, int local) {
    int d = s->d, lv[d];
    for (int j = 0; j < d; j++) {
        int n_j = s->sp->params[j].n_levels;
        int lo = local && s->categorical[j] ? -n_j : local ? -1 : -2;
        int unit = local && !s->categorical[j] && n_j / 16 > 1 ? n_j / 16 : 1;
        for (int step = lo; step <= -lo; step++) {
            memcpy(lv, src, sizeof lv);
            lv[j] += step * unit;
            if (step && lv[j] >= 0 && lv[j] < n_j && !visited_has(excl, lv)) visited_add(cand, lv);
        }
        for (int k = j + 1; k < d && !local; k++)
            for (int sj = -1; sj <= 1; sj += 2)
                for (int sk = -1; sk <= 1; sk += 2) {
                    memcpy(lv, src, sizeof lv);
                    lv[j] += sj;
                    lv[k] += sk;
                    if (lv[j] >= 0 && lv[j] < n_j && lv[k] >= 0 &&
                        lv[k] < s->sp->params[k].n_levels && !visited_has(excl, lv))
                        visited_add(cand, lv);
                }
    }
}

/* Observed OK points ordered by posterior mean of the objective, best first (ties by index),
 * into order[]; with feasible_only, only points that measured feasible. Returns the count. */
static int best_observed(const strategy *s, const bayes_models *m, const observation *obs,
                         int n_obs, const resolved_constraint *rc, int n_rc, int feasible_only,
                         int max, double within, int *order) {
    if (!m->obj || !n_obs) return 0;
    int d = s->d;
    double *x = xmalloc((size_t)n_obs * (size_t)d * sizeof(double));
    double *mean = xmalloc((size_t)n_obs * sizeof(double)),
           *var = xmalloc((size_t)n_obs * sizeof(double));
    for (int i = 0; i < n_obs; i++)
        bayes_point_features(s, obs[i].levels, x + (size_t)i * d);
    gp_predict(m->obj, x, n_obs, mean, var);
    unsigned char *used = xcalloc((size_t)n_obs, 1);
    int n = 0;
    for (; n < max; n++) {
        int bi = -1;
        for (int i = 0; i < n_obs; i++)
            if (!used[i] && obs[i].status == TRIAL_OK &&
                (!feasible_only || observation_feasible(&obs[i], rc, n_rc)) &&
                (bi < 0 || mean[i] > mean[bi]))
                bi = i;
        if (bi < 0 || (n && mean[bi] < mean[order[0]] - within)) break;
        used[bi] = 1;
        order[n] = bi;
    }
    free(used);
    free(x);
    free(mean);
    free(var);
    return n;
}

/* Candidate set outside lattice mode: Sobol points (rotated afresh for each number of
 * observations, so successive proposals look at different parts of the lattice) plus the
 * neighbours of the best observed points, without observed/pending ones (excl). */
static void candidates_sampled(const strategy *s, const bayes_models *m, const observation *obs,
                               int n_obs, const visited_set *excl, visited_set *cand) {
    int d = s->d, lv[d];
    double shift[d];
    for (int j = 0; j < d; j++) { /* an additive recurrence on the rotation (golden ratios) */
        double v = s->shift[j] + (double)n_obs * (0.6180339887498949 + 0.1 * j);
        shift[j] = v - floor(v);
    }
    gsl_qrng *q = qrng_new(d);
    for (int i = 0; i < BAYES_SOBOL_CANDIDATES; i++) {
        qrng_point(s, shift, q, lv);
        if (!visited_has(excl, lv)) visited_add(cand, lv);
    }
    gsl_qrng_free(q);
    int order[BAYES_NEIGHBOUR_SOURCES];
    int n = best_observed(s, m, obs, n_obs, NULL, 0, 0, BAYES_NEIGHBOUR_SOURCES, INFINITY, order);
    for (int t = 0; t < n; t++)
        add_neighbours(s, obs[order[t]].levels, excl, cand, 0);
}

/* The best-scoring point of cand not condemned by dead (lowest index wins ties), into levels;
 * when every one is condemned, the best of them. Returns 0 when cand is empty. */
static int argmax_points(const strategy *s, const bayes_models *m, const visited_set *cand,
                         const unsigned char *dead, int *levels) {
    int d = s->d;
    long n = (long)cand->count;
    if (!n) return 0;
    double *xs = xmalloc((size_t)n * (size_t)d * sizeof(double));
    double *score = xmalloc((size_t)n * sizeof(double));
    for (long i = 0; i < n; i++)
        bayes_point_features(s, visited_point(cand, (size_t)i), xs + i * d);
    bayes_models_score(m, xs, n, score);
    long best = -1;
    for (int allow_dead = 0; allow_dead <= 1 && best < 0; allow_dead++)
        for (long i = 0; i < n; i++) {
            if (!allow_dead && point_dead(s, dead, visited_point(cand, (size_t)i))) continue;
            double sc = isnan(score[i]) ? -INFINITY : score[i];
            if (best < 0 || sc > score[best]) {
                best = i;
                score[i] = sc;
            }
        }
    memcpy(levels, visited_point(cand, (size_t)best), (size_t)d * sizeof(int));
    free(xs);
    free(score);
    return 1;
}

static int bayes_propose(strategy *s, const observation *obs, int n_obs,
                         const resolved_constraint *rc, int n_rc, const int *const *pending,
                         int n_pending, int *levels) {
    int d = s->d;
    visited_set excl;
    visited_build(&excl, s->sp, obs, n_obs, pending, n_pending);
    if ((long)excl.count >= s->n_points) {
        visited_free(&excl);
        return 0; /* every lattice point is observed or running */
    }
    unsigned char *dead = xcalloc((size_t)s->level_off[d], 1);
    dead_levels(s, obs, n_obs, dead);
    int found = 0;

    /* 1. Initial design. */
    if (n_obs < s->n_init) {
        gsl_qrng *q = qrng_new(d);
        for (int t = 0; t < BAYES_INIT_WALK && !found; t++) {
            qrng_point(s, s->shift, q, levels);
            found = !visited_has(&excl, levels) && !point_dead(s, dead, levels);
        }
        gsl_qrng_free(q);
    }

    /* 2. Surrogates on the observations; 3. the believer on the pending points. */
    const bayes_models *fit = found ? NULL : bayes_models_get(s, obs, n_obs, rc, n_rc);
    bayes_models bel = fit ? *fit : (bayes_models){0}; /* shallow: replaced below when pending */
    gp *bel_con[fit && fit->n_con ? fit->n_con : 1];
    if (fit && n_pending) {
        double *xp = xmalloc((size_t)n_pending * (size_t)d * sizeof(double));
        double *mean = xmalloc((size_t)n_pending * sizeof(double)),
               *var = xmalloc((size_t)n_pending * sizeof(double));
        for (int i = 0; i < n_pending; i++)
            bayes_point_features(s, pending[i], xp + (size_t)i * d);
        if (fit->obj) {
            bel.obj = gp_copy(fit->obj);
            gp_predict(fit->obj, xp, n_pending, mean, var);
            gp_add_data(bel.obj, xp, mean, n_pending);
        }
        for (int c = 0; c < fit->n_con; c++) {
            bel_con[c] = gp_copy(fit->con[c]);
            gp_predict(fit->con[c], xp, n_pending, mean, var);
            gp_add_data(bel_con[c], xp, mean, n_pending);
        }
        bel.con = bel_con;
        free(xp);
        free(mean);
        free(var);
    }

    /* 4a. A local step: the unmeasured neighbours of the near-best points. */
    int n_after = n_obs + n_pending - s->n_init;
    if (!found && bel.feasible_known && BAYES_LOCAL_EVERY > 0 &&
        n_after % BAYES_LOCAL_EVERY == BAYES_LOCAL_EVERY - 1) {
        visited_set cand;
        visited_init(&cand, d, 64);
        int order[BAYES_LOCAL_SOURCES];
        int n =
            best_observed(s, &bel, obs, n_obs, rc, n_rc, 1, BAYES_LOCAL_SOURCES, INFINITY, order);
        for (int t = 0; t < n; t++)
            add_neighbours(s, obs[order[t]].levels, &excl, &cand, 1);
        /* a local step never spends a run on a condemned level */
        visited_set live;
        visited_init(&live, d, cand.count + 1);
        for (size_t i = 0; i < cand.count; i++)
            if (!point_dead(s, dead, visited_point(&cand, i)))
                visited_add(&live, visited_point(&cand, i));
        found = argmax_points(s, &bel, &live, dead, levels);
        visited_free(&live);
        visited_free(&cand);
    }

    /* 4b. A global step: every lattice point, or a sample of them. */
    if (!found) {
        visited_set cand;
        if (s->lattice) {
            visited_init(&cand, d, (size_t)s->n_points);
            int lv[d];
            for (long i = 0; i < s->n_points; i++) {
                index_point(s, i, lv);
                if (!visited_has(&excl, lv)) visited_add(&cand, lv);
            }
        } else {
            visited_init(&cand, d, (size_t)BAYES_SOBOL_CANDIDATES + 64 * (size_t)d * (size_t)d);
            candidates_sampled(s, &bel, obs, n_obs, &excl, &cand);
        }
        found = argmax_points(s, &bel, &cand, dead, levels);
        visited_free(&cand);
    }

    if (fit && n_pending) {
        if (fit->obj) gp_free(bel.obj);
        for (int c = 0; c < fit->n_con; c++)
            gp_free(bel_con[c]);
    }
    free(dead);
    visited_free(&excl);
    return found;
}

/* ---- the pick ---- */

typedef struct {
    int index;
    double mean;
} ranked;

static int ranked_cmp(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    if (x->mean != y->mean) return x->mean > y->mean ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int bayes_rank(strategy *s, const observation *obs, int n_obs, const resolved_constraint *rc,
                      int n_rc, int *order) {
    int d = s->d;
    if (n_obs == 0) return 0;
    const bayes_models *m = bayes_models_get(s, obs, n_obs, rc, n_rc);
    if (!m->obj) return 0;
    double *x = xmalloc((size_t)n_obs * (size_t)d * sizeof(double));
    double *mean = xmalloc((size_t)n_obs * sizeof(double)),
           *var = xmalloc((size_t)n_obs * sizeof(double)),
           *lpf = xmalloc((size_t)n_obs * sizeof(double));
    for (int i = 0; i < n_obs; i++)
        bayes_point_features(s, obs[i].levels, x + (size_t)i * d);
    gp_predict(m->obj, x, n_obs, mean, var);
    bayes_models_log_pf(m, x, n_obs, 1, lpf);
    ranked *r = xmalloc((size_t)n_obs * sizeof(ranked));
    int n = 0;
    for (int i = 0; i < n_obs; i++) {
        if (obs[i].status != TRIAL_OK || !isfinite(obs[i].objective)) continue;
        if (lpf[i] < log(BAYES_PICK_PF)) continue;
        r[n++] = (ranked){i, mean[i]};
    }
    qsort(r, (size_t)n, sizeof(ranked), ranked_cmp);
    for (int i = 0; i < n; i++)
        order[i] = r[i].index;
    free(r);
    free(x);
    free(mean);
    free(var);
    free(lpf);
    return n;
}

/* The driver's measured noise: the objective GP's noise prior (strategy_bayes_models.c). */
static void bayes_set_noise(strategy *s, double rel_noise) {
    s->rel_noise = isfinite(rel_noise) && rel_noise > 0.0 ? rel_noise : 0.0;
}

const strategy_ops bayes_ops = {
    .name = "bayes",
    .create = bayes_create,
    .propose = bayes_propose,
    .rank = bayes_rank,
    .destroy = bayes_destroy,
    .set_noise = bayes_set_noise,
};
