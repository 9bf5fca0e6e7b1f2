/* strategy_bayes.c: constrained Bayesian optimisation over the lattice (strategy "bayes").
 *
 * How a proposal is made, given the observations and the points still running:
 *
 * 1. Initial design. Until max(5, 2d) points are observed, walk a Sobol sequence (GSL's
 *    gsl_qrng_sobol; Halton beyond its 40 dimensions), shifted by a seed-dependent random
 *    offset modulo 1 (a Cranley-Patterson rotation, so seeds differ), map each point onto
 *    the lattice (level floor(u * n_levels)) and propose the first one not observed or
 *    pending.
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
 *    search learns to stay away from what crashes.
 * 3. Pending points (parallel workers): Kriging believer. Each GP is conditioned, with its
 *    hyperparameters kept, on the pending points at their posterior means. That collapses
 *    the variance there and nearby, so the next worker's expected improvement moves away
 *    from what is already running; pending points are also excluded outright.
 * 4. Candidates: every lattice point when the lattice has at most 200,000 points; otherwise
 *    20,000 shifted Sobol points mapped onto the lattice plus the neighbours (one and two
 *    levels along each axis, and one level along each pair of axes) of the ten best
 *    observed points. Observed and pending points are never candidates.
 * 5. Score (acquisition.h): log EI of the objective over the incumbent (the current
 *    pick, see rank() below; before there is one, the best posterior mean among observed
 *    points that measured feasible) plus the log probability that every constraint is met
 *    on a re-measurement; while no observed point is feasible, that log probability
 *    alone. Both use the same rule as the pick, so the search improves what would be
 *    reported rather than points the pick would reject as too close to the bound. Scores go into an
 * array in parallel (OpenMP); the argmax is taken serially with the lowest candidate index winning
 * ties, so the thread count never changes a proposal.
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
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_qrng.h>
#include <gsl/gsl_rng.h>

#include "acquisition.h"
#include "gp.h"
#include "strategy.h"
#include "util.h"
#include "visited.h"

#define BAYES_LATTICE_MAX       200000L /* candidates = whole lattice up to this many points */
#define BAYES_SOBOL_CANDIDATES  20000
#define BAYES_NEIGHBOUR_SOURCES 10     /* best observed points whose neighbours are candidates */
#define BAYES_FIT_STARTS        3      /* hyperparameter fits: default start + 2 random */
#define BAYES_PICK_PF           0.95   /* rank(): minimum probability of feasibility */
#define BAYES_INIT_WALK         100000 /* Sobol draws tried for one initial-design point */

/* The surrogates fitted on one set of observations. */
typedef struct {
    gp *obj;  /* objective (maximised: sign applied), NULL without an OK observation */
    gp **con; /* [n_con] constraint GPs on g <= 0 */
    int n_con;
    double sign; /* +1 maximise, -1 minimise */
    double best; /* incumbent: best posterior mean (signed) among measured-feasible points */
    int feasible_known;
} bayes_models;

struct strategy {
    const space *sp;
    uint64_t seed;
    int d;
    int *categorical; /* [d] */
    long n_points;    /* lattice size (saturated) */
    int lattice;      /* 1: candidates are the whole lattice */
    double *lat_x;    /* [n_points][d] GP inputs of every lattice point (lattice mode) */
    double *shift;    /* [d] Cranley-Patterson rotation of the Sobol sequences */
    int n_init;       /* initial-design size */

    uint64_t memo_key; /* hash of the observations the memoised models were fitted on */
    int memo_valid;
    bayes_models memo;
};

/* ---- small helpers ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

static void point_features(const strategy *s, const int *levels, double *x) {
    for (int j = 0; j < s->d; j++) {
        const param_def *p = &s->sp->params[j];
        x[j] = s->categorical[j] ? (double)levels[j] : space_param_unit(p, levels[j]);
    }
}

/* Mixed-radix index of a point (first parameter slowest); lattice mode only. */
static long point_index(const strategy *s, const int *levels) {
    long idx = 0;
    for (int j = 0; j < s->d; j++)
        idx = idx * s->sp->params[j].n_levels + levels[j];
    return idx;
}

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

/* The next rotated quasi-random point mapped onto the lattice. */
static void qrng_point(const strategy *s, gsl_qrng *q, int *levels) {
    double u[s->d];
    gsl_qrng_get(q, u);
    for (int j = 0; j < s->d; j++) {
        double v = u[j] + s->shift[j];
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
    s->n_init = 2 * s->d > 5 ? 2 * s->d : 5;
    if (s->n_init > s->n_points) s->n_init = (int)s->n_points;

    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)(seed ^ (seed >> 32)) + 12345UL);
    s->shift = xmalloc((size_t)s->d * sizeof(double));
    for (int j = 0; j < s->d; j++)
        s->shift[j] = gsl_rng_uniform(rng);
    gsl_rng_free(rng);

    s->lattice = s->n_points <= BAYES_LATTICE_MAX;
    if (s->lattice) {
        s->lat_x = xmalloc((size_t)s->n_points * (size_t)s->d * sizeof(double));
        int levels[s->d];
        for (long i = 0; i < s->n_points; i++) {
            index_point(s, i, levels);
            point_features(s, levels, s->lat_x + i * s->d);
        }
    }
    return s;
}

static void models_free(bayes_models *m) {
    gp_free(m->obj);
    for (int c = 0; c < m->n_con; c++)
        gp_free(m->con[c]);
    free(m->con);
    memset(m, 0, sizeof *m);
}

static void bayes_destroy(strategy *s) {
    if (!s) return;
    if (s->memo_valid) models_free(&s->memo);
    free(s->categorical);
    free(s->shift);
    free(s->lat_x);
    free(s);
}

/* ---- fitting the surrogates ---- */

/* g <= 0 form of constraint c at one observation; NAN when not finite. */
static double constraint_g(const resolved_constraint *rc, double value) {
    if (!isfinite(value)) return NAN;
    int upper = rc->def->op == OP_LE || rc->def->op == OP_LT;
    return upper ? value - rc->bound : rc->bound - value;
}

static uint64_t observations_key(const observation *obs, int n_obs, const resolved_constraint *rc,
                                 int n_rc, int d) {
    uint64_t h = fnv(1469598103934665603ULL, &n_obs, sizeof n_obs);
    h = fnv(h, &n_rc, sizeof n_rc);
    for (int c = 0; c < n_rc; c++) {
        h = fnv(h, &rc[c].bound, sizeof(double));
        h = fnv(h, &rc[c].def->op, sizeof(rc[c].def->op));
    }
    for (int i = 0; i < n_obs; i++) {
        const observation *o = &obs[i];
        h = fnv(h, o->levels, (size_t)d * sizeof(int));
        h = fnv(h, &o->status, sizeof o->status);
        h = fnv(h, &o->objective, sizeof(double));
        h = fnv(h, &o->n_runs, sizeof(int));
        if (n_rc) h = fnv(h, o->cons, (size_t)n_rc * sizeof(double));
    }
    return h;
}

/* Fit one GP on g values with pessimistic imputation of the missing ones. */
static gp *fit_constraint(const strategy *s, const double *x, double *g, const double *w, int n,
                          double bound, uint64_t seed) {
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(g[i])) {
            lo = fmin(lo, g[i]);
            hi = fmax(hi, g[i]);
        }
    if (!isfinite(lo)) lo = hi = 0.0;
    double spread = fmax(fmax(hi - lo, 0.1 * fabs(bound)), 1e-6);
    double imputed = fmax(hi, 0.0) + spread;
    for (int i = 0; i < n; i++)
        if (!isfinite(g[i])) g[i] = imputed;
    gp *m = gp_create(s->d, s->categorical);
    gp_set_data(m, x, g, w, n);
    gp_fit(m, BAYES_FIT_STARTS, seed);
    return m;
}

static void models_log_pf(const bayes_models *m, const double *xs, int n, int noisy, double *lpf);

static void models_fit(const strategy *s, const observation *obs, int n_obs,
                       const resolved_constraint *rc, int n_rc, bayes_models *m) {
    int d = s->d;
    memset(m, 0, sizeof *m);
    m->sign = s->sp->maximize ? 1.0 : -1.0;
    double *x = xmalloc((size_t)(n_obs ? n_obs : 1) * (size_t)d * sizeof(double));
    double *y = xmalloc((size_t)(n_obs ? n_obs : 1) * sizeof(double));
    double *w = xmalloc((size_t)(n_obs ? n_obs : 1) * sizeof(double));
    double *xo = xmalloc((size_t)(n_obs ? n_obs : 1) * (size_t)d * sizeof(double));
    uint64_t seed = s->seed ^ ((uint64_t)n_obs * 0x9E3779B97F4A7C15ULL);

    /* Objective: the OK observations. */
    int n_ok = 0, any_failed = 0;
    for (int i = 0; i < n_obs; i++) {
        point_features(s, obs[i].levels, x + (size_t)i * d);
        if (obs[i].status == TRIAL_FAILED) any_failed = 1;
        if (obs[i].status != TRIAL_OK || !isfinite(obs[i].objective)) continue;
        memcpy(xo + (size_t)n_ok * d, x + (size_t)i * d, (size_t)d * sizeof(double));
        y[n_ok] = m->sign * obs[i].objective;
        w[n_ok] = obs[i].n_runs > 1 ? obs[i].n_runs : 1;
        n_ok++;
    }
    /* Failed trials join the objective at the worst value seen (after the OK points, so
     * indices below n_ok stay the OK ones): no expected improvement where things crash. */
    int n_y = n_ok;
    if (n_ok) {
        double worst = y[0];
        for (int i = 1; i < n_ok; i++)
            worst = fmin(worst, y[i]);
        for (int i = 0; i < n_obs; i++) {
            if (obs[i].status != TRIAL_FAILED) continue;
            memcpy(xo + (size_t)n_y * d, x + (size_t)i * d, (size_t)d * sizeof(double));
            y[n_y] = worst;
            w[n_y++] = 1;
        }
        m->obj = gp_create(d, s->categorical);
        gp_set_data(m->obj, xo, y, w, n_y);
        gp_fit(m->obj, BAYES_FIT_STARTS, seed);
    }

    /* Constraints (or the failure pseudo-constraint). */
    for (int i = 0; i < n_obs; i++)
        w[i] = obs[i].n_runs > 1 ? obs[i].n_runs : 1;
    m->n_con = n_rc ? n_rc : (any_failed ? 1 : 0);
    m->con = m->n_con ? xcalloc((size_t)m->n_con, sizeof(gp *)) : NULL;
    for (int c = 0; c < m->n_con; c++) {
        for (int i = 0; i < n_obs; i++)
            y[i] = n_rc ? constraint_g(&rc[c], obs[i].status == TRIAL_FAILED ? NAN : obs[i].cons[c])
                        : (obs[i].status == TRIAL_FAILED ? 1.0 : -1.0);
        m->con[c] = fit_constraint(s, x, y, w, n_obs, n_rc ? rc[c].bound : 1.0,
                                   seed + 7919ULL * (uint64_t)(c + 1));
    }

    /* Incumbent: the current pick (rank's rule: best posterior mean among OK points with
     * P(feasible on re-measurement) >= 0.95), so that expected improvement is improvement
     * of what would be reported; while there is no such point, the best posterior mean
     * among the points that measured feasible. */
    m->best = -INFINITY;
    if (m->obj) {
        double mean[n_ok], var[n_ok], lpf[n_ok];
        gp_predict(m->obj, xo, n_ok, mean, var);
        models_log_pf(m, xo, n_ok, 1, lpf);
        double best_pick = -INFINITY;
        int k = 0;
        for (int i = 0; i < n_obs; i++) {
            if (obs[i].status != TRIAL_OK || !isfinite(obs[i].objective)) continue;
            if (observation_feasible(&obs[i], rc, n_rc)) {
                m->feasible_known = 1;
                m->best = fmax(m->best, mean[k]);
            }
            if (lpf[k] >= log(BAYES_PICK_PF)) best_pick = fmax(best_pick, mean[k]);
            k++;
        }
        if (isfinite(best_pick)) m->best = best_pick;
    }
    free(x);
    free(y);
    free(w);
    free(xo);
}

/* The memoised surrogates for these observations (fitted now when the memo is stale). */
static const bayes_models *models_get(strategy *s, const observation *obs, int n_obs,
                                      const resolved_constraint *rc, int n_rc) {
    uint64_t key = observations_key(obs, n_obs, rc, n_rc, s->d);
    if (s->memo_valid && s->memo_key == key) return &s->memo;
    if (s->memo_valid) models_free(&s->memo);
    models_fit(s, obs, n_obs, rc, n_rc, &s->memo);
    s->memo_key = key;
    s->memo_valid = 1;
    return &s->memo;
}

/* Log probability that every constraint is met, at m points, into lpf[m]: by the true
 * value (latent f), or with noisy = 1 by one new measurement (f plus the learnt noise). */
static void models_log_pf(const bayes_models *m, const double *xs, int n, int noisy, double *lpf) {
    for (int i = 0; i < n; i++)
        lpf[i] = 0.0;
    if (!m->n_con || !n) return;
    double *mean = xmalloc((size_t)n * sizeof(double)), *var = xmalloc((size_t)n * sizeof(double));
    for (int c = 0; c < m->n_con; c++) {
        gp_predict(m->con[c], xs, n, mean, var);
        double noise = noisy ? gp_noise_var(m->con[c]) : 0.0;
#pragma omp parallel for schedule(static)
        for (int i = 0; i < n; i++)
            lpf[i] += acq_log_pf(mean[i], sqrt(var[i] + noise));
    }
    free(mean);
    free(var);
}

/* ---- proposing ---- */

/* Candidate set outside lattice mode: rotated Sobol points plus neighbours of the best
 * observed points, without observed/pending ones (excl) and without duplicates. */
static visited_set candidates_sampled(const strategy *s, const bayes_models *m,
                                      const observation *obs, int n_obs, const visited_set *excl) {
    int d = s->d;
    visited_set cand;
    visited_init(&cand, d, (size_t)BAYES_SOBOL_CANDIDATES + 64 * (size_t)d * (size_t)d);
    int lv[d];
    gsl_qrng *q = qrng_new(d);
    for (int i = 0; i < BAYES_SOBOL_CANDIDATES; i++) {
        qrng_point(s, q, lv);
        if (!visited_has(excl, lv)) visited_add(&cand, lv);
    }
    gsl_qrng_free(q);

    /* The best observed points by posterior mean (OK ones; ties by index). */
    if (m->obj && n_obs) {
        double *x = xmalloc((size_t)n_obs * (size_t)d * sizeof(double));
        double *mean = xmalloc((size_t)n_obs * sizeof(double)),
               *var = xmalloc((size_t)n_obs * sizeof(double));
        for (int i = 0; i < n_obs; i++)
            point_features(s, obs[i].levels, x + (size_t)i * d);
        gp_predict(m->obj, x, n_obs, mean, var);
        int used[n_obs];
        memset(used, 0, sizeof used);
        for (int t = 0; t < BAYES_NEIGHBOUR_SOURCES; t++) {
            int bi = -1;
            for (int i = 0; i < n_obs; i++)
                if (!used[i] && obs[i].status == TRIAL_OK && (bi < 0 || mean[i] > mean[bi])) bi = i;
            if (bi < 0) break;
            used[bi] = 1;
            for (int j = 0; j < d; j++) {
                for (int step = -2; step <= 2; step++) {
                    memcpy(lv, obs[bi].levels, sizeof lv);
                    lv[j] += step;
                    if (step && lv[j] >= 0 && lv[j] < s->sp->params[j].n_levels &&
                        !visited_has(excl, lv))
                        visited_add(&cand, lv);
                }
                for (int k = j + 1; k < d; k++)
                    for (int sj = -1; sj <= 1; sj += 2)
                        for (int sk = -1; sk <= 1; sk += 2) {
                            memcpy(lv, obs[bi].levels, sizeof lv);
                            lv[j] += sj;
                            lv[k] += sk;
                            if (lv[j] >= 0 && lv[j] < s->sp->params[j].n_levels && lv[k] >= 0 &&
                                lv[k] < s->sp->params[k].n_levels && !visited_has(excl, lv))
                                visited_add(&cand, lv);
                        }
            }
        }
        free(x);
        free(mean);
        free(var);
    }
    return cand;
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

    /* 1. Initial design. */
    if (n_obs < s->n_init) {
        gsl_qrng *q = qrng_new(d);
        int found = 0;
        for (int t = 0; t < BAYES_INIT_WALK && !found; t++) {
            qrng_point(s, q, levels);
            found = !visited_has(&excl, levels);
        }
        gsl_qrng_free(q);
        if (found) {
            visited_free(&excl);
            return 1;
        }
    }

    /* 2. Surrogates on the observations; 3. the believer on the pending points. */
    const bayes_models *fit = models_get(s, obs, n_obs, rc, n_rc);
    bayes_models bel = *fit; /* shallow: replaced member by member below when pending */
    gp *bel_con[fit->n_con ? fit->n_con : 1];
    if (n_pending) {
        double *xp = xmalloc((size_t)n_pending * (size_t)d * sizeof(double));
        double *mean = xmalloc((size_t)n_pending * sizeof(double)),
               *var = xmalloc((size_t)n_pending * sizeof(double));
        for (int i = 0; i < n_pending; i++)
            point_features(s, pending[i], xp + (size_t)i * d);
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

    /* 4. Candidates. */
    visited_set cand = {0};
    const double *xs;
    double *xs_own = NULL;
    long n_cand;
    if (s->lattice) {
        xs = s->lat_x;
        n_cand = s->n_points;
    } else {
        cand = candidates_sampled(s, &bel, obs, n_obs, &excl);
        n_cand = (long)cand.count;
        xs_own = xmalloc((size_t)(n_cand ? n_cand : 1) * (size_t)d * sizeof(double));
        for (long i = 0; i < n_cand; i++)
            point_features(s, visited_point(&cand, (size_t)i), xs_own + i * d);
        xs = xs_own;
    }

    /* 5. Scores, then the serial argmax (lowest index wins ties). */
    double *score = xmalloc((size_t)(n_cand ? n_cand : 1) * sizeof(double));
    models_log_pf(&bel, xs, (int)n_cand, 1, score);
    if (bel.feasible_known && bel.obj) {
        double *mean = xmalloc((size_t)n_cand * sizeof(double)),
               *var = xmalloc((size_t)n_cand * sizeof(double));
        gp_predict(bel.obj, xs, (int)n_cand, mean, var);
#pragma omp parallel for schedule(static)
        for (long i = 0; i < n_cand; i++)
            score[i] += acq_log_ei(mean[i], sqrt(var[i]), bel.best);
        free(mean);
        free(var);
    }
    unsigned char *taken = NULL; /* lattice mode: [n_points] 1 where observed or pending */
    if (s->lattice) {
        taken = xcalloc((size_t)s->n_points, 1);
        for (size_t i = 0; i < excl.count; i++)
            taken[point_index(s, visited_point(&excl, i))] = 1;
    }
    long best_i = -1;
    for (long i = 0; i < n_cand; i++) {
        if (taken && taken[i]) continue;
        double sc = isnan(score[i]) ? -INFINITY : score[i];
        if (best_i < 0 || sc > score[best_i]) {
            best_i = i;
            score[i] = sc;
        }
    }
    if (best_i >= 0) {
        if (s->lattice)
            index_point(s, best_i, levels);
        else
            memcpy(levels, visited_point(&cand, (size_t)best_i), (size_t)d * sizeof(int));
    }
    free(taken);

    free(score);
    free(xs_own);
    if (!s->lattice) visited_free(&cand);
    if (n_pending) {
        if (fit->obj) gp_free(bel.obj);
        for (int c = 0; c < fit->n_con; c++)
            gp_free(bel_con[c]);
    }
    visited_free(&excl);
    return best_i >= 0;
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
    const bayes_models *m = models_get(s, obs, n_obs, rc, n_rc);
    if (!m->obj) return 0;
    double *x = xmalloc((size_t)n_obs * (size_t)d * sizeof(double));
    double *mean = xmalloc((size_t)n_obs * sizeof(double)),
           *var = xmalloc((size_t)n_obs * sizeof(double)),
           *lpf = xmalloc((size_t)n_obs * sizeof(double));
    for (int i = 0; i < n_obs; i++)
        point_features(s, obs[i].levels, x + (size_t)i * d);
    gp_predict(m->obj, x, n_obs, mean, var);
    models_log_pf(m, x, n_obs, 1, lpf);
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

const strategy_ops bayes_ops = {
    .name = "bayes",
    .create = bayes_create,
    .propose = bayes_propose,
    .rank = bayes_rank,
    .destroy = bayes_destroy,
};
