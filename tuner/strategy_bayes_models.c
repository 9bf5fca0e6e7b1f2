/* strategy_bayes_models.c: the surrogates of the bayes strategy (strategy_bayes.c, points 2
 * and 5 of its design comment): fitted on the observations, memoised, and asked at points.
 *
 * One GP for the objective (failed trials imputed at the worst value seen, the measured
 * noise as its noise prior) and one per constraint on g <= 0 (missing values imputed on the
 * wrong side of the bound), with hyperparameters learnt on at most BAYES_FIT_SUBSET points;
 * the incumbent that expected improvement is measured against; the probability that every
 * constraint holds; and the acquisition score of candidate points. It stands apart from
 * strategy_bayes.c, which decides where to look (initial design, candidates, local and
 * global steps, condemned levels) and fits nothing itself: everything here depends only on
 * the observations, which is what lets one memo serve propose() and rank() alike.
 */
#include "strategy_bayes.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "acquisition.h"
#include "util.h"

#define BAYES_FIT_STARTS   3   /* hyperparameter fits: default start + 2 random */
#define BAYES_FIT_SUBSET   64  /* hyperparameters learnt on at most this many points */
#define BAYES_NOISE_LOG_SD 1.0 /* sd of log noise variance around the measured noise */

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

void bayes_point_features(const strategy *s, const int *levels, double *x) {
    for (int j = 0; j < s->d; j++) {
        const param_def *p = &s->sp->params[j];
        x[j] = s->categorical[j] ? (double)levels[j] : space_param_unit(p, levels[j]);
    }
}

void bayes_models_free(bayes_models *m) {
    gp_free(m->obj);
    for (int c = 0; c < m->n_con; c++)
        gp_free(m->con[c]);
    free(m->con);
    memset(m, 0, sizeof *m);
}

/* g <= 0 form of constraint c at one observation; NAN when not finite. */
static double constraint_g(const resolved_constraint *rc, double value) {
    if (!isfinite(value)) return NAN;
    int upper = rc->def->op == OP_LE || rc->def->op == OP_LT;
    return upper ? value - rc->bound : rc->bound - value;
}

static uint64_t observations_key(const observation *obs, int n_obs, const resolved_constraint *rc,
                                 int n_rc, int d, double rel_noise) {
    uint64_t h = fnv(1469598103934665603ULL, &n_obs, sizeof n_obs);
    h = fnv(h, &rel_noise, sizeof rel_noise);
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

/* Fit m's hyperparameters. Past BAYES_FIT_SUBSET observations they are learnt on a subset:
 * the half with the smallest key (the caller's "most telling": the best objective values, the
 * constraint values nearest the bound; ties by index) and an even spread of the rest in journal
 * order, so a proposal's cost stops growing as n^3 while the region that decides the pick stays
 * in the fit. */
static void fit_model(gp *m, const double *key, int n, uint64_t seed) {
    if (n <= BAYES_FIT_SUBSET) {
        gp_fit(m, BAYES_FIT_STARTS, seed);
        return;
    }
    int *order = xmalloc((size_t)n * sizeof(int)), *idx = xmalloc(BAYES_FIT_SUBSET * sizeof(int));
    unsigned char *in = xcalloc((size_t)n, 1);
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = 1; i < n; i++) { /* insertion sort: stable, n is a few hundred */
        int v = order[i], k = i;
        for (; k > 0 && key[order[k - 1]] > key[v]; k--)
            order[k] = order[k - 1];
        order[k] = v;
    }
    int half = BAYES_FIT_SUBSET / 2, m_idx = 0;
    for (int i = 0; i < half; i++)
        in[order[i]] = 1;
    int rest = n - half, want = BAYES_FIT_SUBSET - half, seen = 0;
    for (int i = 0; i < n; i++) {
        if (in[i]) {
            idx[m_idx++] = i;
            continue;
        }
        /* the seen-th of the rest is taken when it crosses the next multiple of rest/want */
        if ((long)(seen + 1) * want / rest > (long)seen * want / rest) idx[m_idx++] = i;
        seen++;
    }
    gp_fit_subset(m, idx, m_idx, BAYES_FIT_STARTS, seed);
    free(order);
    free(idx);
    free(in);
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
    double *key = xmalloc((size_t)(n ? n : 1) * sizeof(double));
    for (int i = 0; i < n; i++)
        key[i] = fabs(g[i]);
    fit_model(m, key, n, seed);
    free(key);
    return m;
}

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
        bayes_point_features(s, obs[i].levels, x + (size_t)i * d);
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
        if (s->rel_noise > 0.0) { /* the measured noise, at the mean level of the objective */
            double level = 0.0;
            for (int i = 0; i < n_ok; i++)
                level += fabs(y[i]) / n_ok;
            double sd = s->rel_noise * level;
            gp_set_noise_prior(m->obj, sd * sd, BAYES_NOISE_LOG_SD);
        }
        double *key = xmalloc((size_t)n_y * sizeof(double));
        for (int i = 0; i < n_y; i++)
            key[i] = -y[i];
        fit_model(m->obj, key, n_y, seed);
        free(key);
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
        bayes_models_log_pf(m, xo, n_ok, 1, lpf);
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
const bayes_models *bayes_models_get(strategy *s, const observation *obs, int n_obs,
                                     const resolved_constraint *rc, int n_rc) {
    uint64_t key = observations_key(obs, n_obs, rc, n_rc, s->d, s->rel_noise);
    if (s->memo_valid && s->memo_key == key) return &s->memo;
    if (s->memo_valid) bayes_models_free(&s->memo);
    models_fit(s, obs, n_obs, rc, n_rc, &s->memo);
    s->memo_key = key;
    s->memo_valid = 1;
    return &s->memo;
}

/* Log probability that every constraint is met, at m points, into lpf[m]: by the true
 * value (latent f), or with noisy = 1 by one new measurement (f plus the learnt noise). */
void bayes_models_log_pf(const bayes_models *m, const double *xs, int n, int noisy, double *lpf) {
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

/* Acquisition scores of n points xs[n][d] into score[n] (strategy_bayes.c, 5). */
void bayes_models_score(const bayes_models *m, const double *xs, long n, double *score) {
    bayes_models_log_pf(m, xs, (int)n, 1, score);
    if (!m->feasible_known || !m->obj || !n) return;
    double *mean = xmalloc((size_t)n * sizeof(double)), *var = xmalloc((size_t)n * sizeof(double));
    gp_predict(m->obj, xs, (int)n, mean, var);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
        score[i] += acq_log_ei(mean[i], sqrt(var[i]), m->best);
    free(mean);
    free(var);
}
