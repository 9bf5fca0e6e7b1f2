/* gp.c: Gaussian-process regression with a Matern-5/2 ARD kernel (see gp.h).
 *
 * The heavy parts are GSL's: gsl_linalg_cholesky_decomp1 factors K, the triangular solves
 * and gsl_blas_dtrsm give alpha and the predictive variances, gsl_linalg_cholesky_invert
 * gives K^-1 for the likelihood gradient, and gsl_multimin's vector BFGS climbs the
 * likelihood. Sizes here are small (n <= a few hundred): a fit (a few BFGS starts, run in
 * parallel, each evaluation O(n^3)) and scoring tens of thousands of candidates (O(n^2)
 * each, in parallel blocks) cost about the same, well under a second at n = 100.
 *
 * Hyperparameter boxes (standardised outputs, inputs in [0,1]): length scales 0.01..20,
 * signal variance 0.01..100, noise variance 1e-6..1. The optimiser works on unbounded u
 * with theta = lo + (hi - lo) * sigmoid(u), so it can never leave the box, and the chain
 * rule d theta / d u = (theta - lo)(hi - theta) / (hi - lo) carries the gradient through.
 * An optional log-normal prior on the noise (gp_set_noise_prior) adds -z^2/2 to the objective
 * and -z / sd to its noise gradient, z = (log noise - mu) / sd. gp_fit_subset climbs on a copy
 * holding only some of the observations, so a fit's cost stops growing with n.
 */
#include "gp.h"

#include <math.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_multimin.h>
#include <gsl/gsl_rng.h>

#include "util.h"

#define SQRT5 2.23606797749978969641

/* Boxes on (log l, log sf2, log noise). */
static const double LOG_LS_LO = -4.605170185988091;     /* log 0.01 */
static const double LOG_LS_HI = 2.995732273553991;      /* log 20 */
static const double LOG_SF2_LO = -4.605170185988091;    /* log 0.01 */
static const double LOG_SF2_HI = 4.605170185988092;     /* log 100 */
static const double LOG_NOISE_LO = -13.815510557964274; /* log 1e-6 */
static const double LOG_NOISE_HI = 0.0;                 /* log 1 */

/* BFGS stops after this many iterations, or when the gradient of the log likelihood (in
 * the unbounded coordinates) is this small: hyperparameters only need to be good, not
 * exact, and the fit is the O(n^3) part of every proposal. */
#define GP_FIT_MAX_ITER 40
#define GP_FIT_GRAD_TOL 1e-2

/* Predictions are computed over blocks of this many points (one dtrsm each). */
#define PREDICT_BLOCK 64

gp *gp_create(int d, const int *categorical) {
    CHECK(d >= 1);
    gp *g = xcalloc(1, sizeof(gp));
    g->d = d;
    g->categorical = xcalloc((size_t)d, sizeof(int));
    if (categorical) memcpy(g->categorical, categorical, (size_t)d * sizeof(int));
    g->log_ls = xmalloc((size_t)d * sizeof(double));
    for (int j = 0; j < d; j++)
        g->log_ls[j] = log(0.3);
    g->log_sf2 = 0.0;
    g->log_noise = log(1e-2);
    g->y_sd = 1.0;
    return g;
}

void gp_free(gp *g) {
    if (!g) return;
    free(g->categorical);
    free(g->x);
    free(g->y);
    free(g->w);
    free(g->log_ls);
    if (g->L) gsl_matrix_free(g->L);
    if (g->alpha) gsl_vector_free(g->alpha);
    free(g);
}

gp *gp_copy(const gp *g) {
    gp *c = gp_create(g->d, g->categorical);
    gp_set_data(c, g->x, g->y, g->w, g->n); /* standardised values in, restored below */
    c->y_mean = g->y_mean;
    c->y_sd = g->y_sd;
    if (g->n) memcpy(c->y, g->y, (size_t)g->n * sizeof(double));
    gp_set_hyper(c, g->log_ls, g->log_sf2, g->log_noise);
    c->prior_noise_var = g->prior_noise_var;
    c->prior_noise_log_sd = g->prior_noise_log_sd;
    if (g->factored) {
        c->L = gsl_matrix_alloc((size_t)g->n, (size_t)g->n);
        c->alpha = gsl_vector_alloc((size_t)g->n);
        gsl_matrix_memcpy(c->L, g->L);
        gsl_vector_memcpy(c->alpha, g->alpha);
        c->factored = 1;
    }
    return c;
}

static void gp_reserve(gp *g, int n) {
    if (n <= g->cap) return;
    int cap = g->cap ? g->cap : 16;
    while (cap < n)
        cap *= 2;
    g->x = xrealloc(g->x, (size_t)cap * (size_t)g->d * sizeof(double));
    g->y = xrealloc(g->y, (size_t)cap * sizeof(double));
    g->w = xrealloc(g->w, (size_t)cap * sizeof(double));
    g->cap = cap;
}

void gp_set_data(gp *g, const double *x, const double *y, const double *w, int n) {
    CHECK(n >= 0);
    gp_reserve(g, n);
    g->n = n;
    double mean = 0.0;
    for (int i = 0; i < n; i++)
        mean += y[i];
    mean = n ? mean / n : 0.0;
    double ss = 0.0;
    for (int i = 0; i < n; i++)
        ss += (y[i] - mean) * (y[i] - mean);
    double sd = n > 1 ? sqrt(ss / (n - 1)) : 0.0;
    if (!(sd > 1e-12 * (fabs(mean) + 1e-300))) sd = n ? fmax(fabs(mean), 1.0) : 1.0;
    g->y_mean = mean;
    g->y_sd = sd;
    if (n) memcpy(g->x, x, (size_t)n * (size_t)g->d * sizeof(double));
    for (int i = 0; i < n; i++) {
        g->y[i] = (y[i] - mean) / sd;
        g->w[i] = w ? fmax(w[i], 1.0) : 1.0;
    }
    g->factored = 0;
}

void gp_add_data(gp *g, const double *x, const double *y, int n) {
    if (n <= 0) return;
    gp_reserve(g, g->n + n);
    memcpy(g->x + (size_t)g->n * (size_t)g->d, x, (size_t)n * (size_t)g->d * sizeof(double));
    for (int i = 0; i < n; i++) {
        g->y[g->n + i] = (y[i] - g->y_mean) / g->y_sd;
        g->w[g->n + i] = 1.0;
    }
    g->n += n;
    gp_factor(g);
}

void gp_set_hyper(gp *g, const double *log_ls, double log_sf2, double log_noise) {
    memcpy(g->log_ls, log_ls, (size_t)g->d * sizeof(double));
    g->log_sf2 = log_sf2;
    g->log_noise = log_noise;
    g->factored = 0;
}

/* Squared scaled distance r^2 between a and b, given 1 / l_j^2 per dimension. */
static double gp_r2(const gp *g, const double *a, const double *b, const double *inv_ls2) {
    double r2 = 0.0;
    for (int j = 0; j < g->d; j++) {
        double t = g->categorical[j] ? (a[j] != b[j] ? 1.0 : 0.0) : a[j] - b[j];
        r2 += t * t * inv_ls2[j];
    }
    return r2;
}

static double matern52(double sf2, double r2) {
    double r = sqrt(r2);
    return sf2 * (1.0 + SQRT5 * r + (5.0 / 3.0) * r2) * exp(-SQRT5 * r);
}

static void gp_inv_ls2(const gp *g, double *inv_ls2) {
    for (int j = 0; j < g->d; j++)
        inv_ls2[j] = exp(-2.0 * g->log_ls[j]);
}

double gp_noise_var(const gp *g) {
    return exp(g->log_noise) * g->y_sd * g->y_sd;
}

double gp_kernel(const gp *g, const double *a, const double *b) {
    double inv_ls2[g->d];
    gp_inv_ls2(g, inv_ls2);
    return matern52(exp(g->log_sf2), gp_r2(g, a, b, inv_ls2));
}

/* Fill K + diag(noise / w + jitter) into m (full, symmetric). */
static void gp_fill_cov(const gp *g, gsl_matrix *m, double jitter) {
    int n = g->n, d = g->d;
    double inv_ls2[d];
    gp_inv_ls2(g, inv_ls2);
    double sf2 = exp(g->log_sf2), noise = exp(g->log_noise);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < i; k++) {
            double v = matern52(sf2, gp_r2(g, g->x + (size_t)i * d, g->x + (size_t)k * d, inv_ls2));
            gsl_matrix_set(m, i, k, v);
            gsl_matrix_set(m, k, i, v);
        }
        gsl_matrix_set(m, i, i, sf2 + noise / g->w[i] + jitter);
    }
}

/* GSL reports a matrix that is not positive definite through its error handler, which
 * aborts by default; we want the status instead. The handler is process-global, so the
 * public entry points switch it off around the work, and the internal functions (called
 * from the parallel hyperparameter starts) never touch it. */
static int factor_quiet(gp *g) {
    g->factored = 0;
    if (g->L) gsl_matrix_free(g->L);
    if (g->alpha) gsl_vector_free(g->alpha);
    g->L = NULL;
    g->alpha = NULL;
    if (g->n == 0) return -1;
    g->L = gsl_matrix_alloc((size_t)g->n, (size_t)g->n);
    g->alpha = gsl_vector_alloc((size_t)g->n);
    double sf2 = exp(g->log_sf2);
    int status = GSL_EDOM;
    for (double jitter = 1e-9 * sf2; jitter < sf2 && status; jitter *= 100.0) {
        gp_fill_cov(g, g->L, jitter);
        status = gsl_linalg_cholesky_decomp1(g->L);
    }
    if (!status) {
        gsl_vector_const_view y = gsl_vector_const_view_array(g->y, (size_t)g->n);
        status = gsl_linalg_cholesky_solve(g->L, &y.vector, g->alpha);
    }
    if (status) return -1;
    g->factored = 1;
    return 0;
}

int gp_factor(gp *g) {
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    int r = factor_quiet(g);
    gsl_set_error_handler(old);
    return r;
}

static double log_marginal_quiet(gp *g, double *grad) {
    int n = g->n, d = g->d;
    if (factor_quiet(g) != 0) return -INFINITY;
    double quad = 0.0, logdet = 0.0;
    for (int i = 0; i < n; i++) {
        quad += g->y[i] * gsl_vector_get(g->alpha, i);
        logdet += log(gsl_matrix_get(g->L, i, i));
    }
    double lml = -0.5 * quad - logdet - 0.5 * n * log(2.0 * M_PI);
    if (!grad) return lml;

    /* d lml / d theta = 1/2 tr((alpha alpha' - K^-1) dK/dtheta). */
    gsl_matrix *kinv = gsl_matrix_alloc((size_t)n, (size_t)n);
    gsl_matrix_memcpy(kinv, g->L);
    if (gsl_linalg_cholesky_invert(kinv)) {
        gsl_matrix_free(kinv);
        return -INFINITY;
    }
    double inv_ls2[d];
    gp_inv_ls2(g, inv_ls2);
    double sf2 = exp(g->log_sf2), noise = exp(g->log_noise);
    for (int j = 0; j < d + 2; j++)
        grad[j] = 0.0;
    for (int i = 0; i < n; i++) {
        const double *xi = g->x + (size_t)i * d;
        double ai = gsl_vector_get(g->alpha, i);
        for (int k = 0; k <= i; k++) {
            const double *xk = g->x + (size_t)k * d;
            double wik = ai * gsl_vector_get(g->alpha, k) - gsl_matrix_get(kinv, i, k);
            double c = i == k ? 0.5 : 1.0; /* off-diagonal pairs appear twice in the trace */
            double r2 = gp_r2(g, xi, xk, inv_ls2), r = sqrt(r2);
            double e = exp(-SQRT5 * r);
            /* dk/dlog l_j = sf2 * 5/3 * (1 + sqrt5 r) e^{-sqrt5 r} * s_j, s_j the scaled
             * squared difference in dimension j; dk/dlog sf2 = k. */
            double common = sf2 * (5.0 / 3.0) * (1.0 + SQRT5 * r) * e;
            for (int j = 0; j < d; j++) {
                double t = g->categorical[j] ? (xi[j] != xk[j] ? 1.0 : 0.0) : xi[j] - xk[j];
                grad[j] += c * wik * common * t * t * inv_ls2[j];
            }
            grad[d] += c * wik * sf2 * (1.0 + SQRT5 * r + (5.0 / 3.0) * r2) * e;
            if (i == k) grad[d + 1] += c * wik * noise / g->w[i];
        }
    }
    gsl_matrix_free(kinv);
    return lml;
}

double gp_log_marginal(gp *g, double *grad) {
    gsl_error_handler_t *old = gsl_set_error_handler_off();
    double r = log_marginal_quiet(g, grad);
    gsl_set_error_handler(old);
    return r;
}

/* ---- the fit ---- */

typedef struct {
    gp *g;
    const double *plo, *phi; /* [d+2] the box of each hyperparameter */
    int prior;               /* 1: add the log-normal noise prior (standardised units) */
    double prior_mu, prior_sd;
} fit_ctx;

void gp_set_noise_prior(gp *g, double noise_var, double log_sd) {
    int on = isfinite(noise_var) && noise_var > 0.0 && isfinite(log_sd) && log_sd > 0.0;
    g->prior_noise_var = on ? noise_var : 0.0;
    g->prior_noise_log_sd = on ? log_sd : 0.0;
}

static double sigmoid(double u) {
    return 1.0 / (1.0 + exp(-u));
}

static void fit_theta(const fit_ctx *c, const gsl_vector *u, double *theta) {
    int p = c->g->d + 2;
    for (int j = 0; j < p; j++)
        theta[j] = c->plo[j] + (c->phi[j] - c->plo[j]) * sigmoid(gsl_vector_get(u, j));
}

static double fit_apply(fit_ctx *c, const gsl_vector *u, double *grad_theta, double *theta) {
    int d = c->g->d;
    fit_theta(c, u, theta);
    gp_set_hyper(c->g, theta, theta[d], theta[d + 1]);
    double lml = log_marginal_quiet(c->g, grad_theta);
    if (c->prior && isfinite(lml)) {
        double z = (theta[d + 1] - c->prior_mu) / c->prior_sd;
        lml -= 0.5 * z * z;
        if (grad_theta) grad_theta[d + 1] -= z / c->prior_sd;
    }
    return lml;
}

static double fit_f(const gsl_vector *u, void *params) {
    fit_ctx *c = params;
    int p = c->g->d + 2;
    double theta[p];
    double lml = fit_apply(c, u, NULL, theta);
    return isfinite(lml) ? -lml : 1e300;
}

static void fit_fdf(const gsl_vector *u, void *params, double *f, gsl_vector *df) {
    fit_ctx *c = params;
    int p = c->g->d + 2;
    double theta[p], gt[p];
    double lml = fit_apply(c, u, gt, theta);
    if (!isfinite(lml)) {
        *f = 1e300;
        gsl_vector_set_zero(df);
        return;
    }
    *f = -lml;
    for (int j = 0; j < p; j++) {
        double dtheta_du =
            (theta[j] - c->plo[j]) * (c->phi[j] - theta[j]) / (c->phi[j] - c->plo[j]);
        gsl_vector_set(df, j, -gt[j] * dtheta_du);
    }
}

static void fit_df(const gsl_vector *u, void *params, gsl_vector *df) {
    double f;
    fit_fdf(u, params, &f, df);
}

/* u such that theta(u) = t (clamped just inside the box). */
static double fit_u_of(double t, double lo, double hi) {
    double s = (t - lo) / (hi - lo);
    s = fmin(fmax(s, 1e-6), 1.0 - 1e-6);
    return log(s / (1.0 - s));
}

/* One start of the fit: climb from u0 (on the working copy c->g); the best theta seen
 * (the start itself included) into theta, its log likelihood returned. */
static double fit_one_start(fit_ctx *c, const gsl_vector *u0, double *theta) {
    int p = c->g->d + 2;
    double t[p];
    double best = fit_apply(c, u0, NULL, theta);
    if (!isfinite(best)) return best;
    gsl_multimin_function_fdf fn = {
        .n = (size_t)p, .f = fit_f, .df = fit_df, .fdf = fit_fdf, .params = c};
    gsl_multimin_fdfminimizer *mz =
        gsl_multimin_fdfminimizer_alloc(gsl_multimin_fdfminimizer_vector_bfgs2, (size_t)p);
    gsl_multimin_fdfminimizer_set(mz, &fn, u0, 0.5, 0.1);
    for (int it = 0; it < GP_FIT_MAX_ITER; it++) {
        if (gsl_multimin_fdfminimizer_iterate(mz)) break;
        if (gsl_multimin_test_gradient(mz->gradient, GP_FIT_GRAD_TOL) == GSL_SUCCESS) break;
    }
    double lml = -gsl_multimin_fdfminimizer_minimum(mz);
    if (lml > best && lml < 1e299) {
        fit_theta(c, gsl_multimin_fdfminimizer_x(mz), t);
        best = lml;
        memcpy(theta, t, sizeof t);
    }
    gsl_multimin_fdfminimizer_free(mz);
    return best;
}

double gp_fit(gp *g, int n_starts, uint64_t seed) {
    return gp_fit_subset(g, NULL, g->n, n_starts, seed);
}

double gp_fit_subset(gp *g, const int *idx, int m, int n_starts, uint64_t seed) {
    int d = g->d, p = d + 2;
    if (n_starts < 1) n_starts = 1;
    if (g->n < 2) { /* nothing to learn from: keep the defaults */
        gp_factor(g);
        return g->n ? gp_log_marginal(g, NULL) : 0.0;
    }
    /* The data the likelihood is taken on: all of it, or the subset (standardised values
     * copied as they are, so the hyperparameters mean the same on both). */
    gp *src = g;
    if (idx && m < g->n && m >= 2) {
        src = gp_copy(g);
        for (int i = 0; i < m; i++) {
            CHECK(idx[i] >= 0 && idx[i] < g->n);
            memcpy(src->x + (size_t)i * d, g->x + (size_t)idx[i] * d, (size_t)d * sizeof(double));
            src->y[i] = g->y[idx[i]];
            src->w[i] = g->w[idx[i]];
        }
        src->n = m;
        src->factored = 0;
    }
    int prior = g->prior_noise_var > 0.0;
    double prior_mu = prior ? log(g->prior_noise_var) - 2.0 * log(g->y_sd) : 0.0;
    double plo[p], phi[p];
    for (int j = 0; j < d; j++) {
        plo[j] = LOG_LS_LO;
        phi[j] = LOG_LS_HI;
    }
    plo[d] = LOG_SF2_LO;
    phi[d] = LOG_SF2_HI;
    plo[d + 1] = LOG_NOISE_LO;
    phi[d + 1] = LOG_NOISE_HI;

    /* Starts, drawn serially so they do not depend on the thread count. Start 0: length
     * scales 0.3, unit signal, small noise; the others uniform in u in [-2, 2]. */
    double *u0 = xmalloc((size_t)n_starts * (size_t)p * sizeof(double));
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, (unsigned long)(seed ^ (seed >> 32)) + 1);
    for (int s = 0; s < n_starts; s++)
        for (int j = 0; j < p; j++) {
            double def = j < d ? log(0.3) : j == d ? 0.0 : log(1e-2);
            if (j == d + 1 && prior) def = fmin(fmax(prior_mu, plo[j] + 0.01), phi[j] - 0.01);
            u0[s * p + j] =
                s == 0 ? fit_u_of(def, plo[j], phi[j]) : 4.0 * gsl_rng_uniform(rng) - 2.0;
        }
    gsl_rng_free(rng);

    /* Each start climbs on its own copy of the gp, in parallel; the best is then picked
     * serially (the earliest start wins ties), so the result is the same on any number of
     * threads. */
    double *theta = xmalloc((size_t)n_starts * (size_t)p * sizeof(double));
    double *lml = xmalloc((size_t)n_starts * sizeof(double));
    gsl_error_handler_t *old = gsl_set_error_handler_off();
#pragma omp parallel for schedule(dynamic, 1)
    for (int s = 0; s < n_starts; s++) {
        gp *work = gp_copy(src);
        fit_ctx ctx = {.g = work,
                       .plo = plo,
                       .phi = phi,
                       .prior = prior,
                       .prior_mu = prior_mu,
                       .prior_sd = g->prior_noise_log_sd};
        gsl_vector_view u = gsl_vector_view_array(u0 + s * p, (size_t)p);
        lml[s] = fit_one_start(&ctx, &u.vector, theta + s * p);
        gp_free(work);
    }
    gsl_set_error_handler(old);
    int best = 0;
    for (int s = 1; s < n_starts; s++)
        if (lml[s] > lml[best] || (!isfinite(lml[best]) && isfinite(lml[s]))) best = s;
    double result = lml[best];
    if (isfinite(result))
        gp_set_hyper(g, theta + best * p, theta[best * p + d], theta[best * p + d + 1]);
    gp_factor(g);
    if (src != g) gp_free(src);
    free(u0);
    free(theta);
    free(lml);
    return result;
}

/* ---- prediction ---- */

void gp_predict(const gp *g, const double *xs, int m, double *mean, double *var) {
    int n = g->n, d = g->d;
    double sf2 = exp(g->log_sf2);
    if (!g->factored) {
        for (int b = 0; b < m; b++) {
            mean[b] = g->y_mean;
            var[b] = sf2 * g->y_sd * g->y_sd;
        }
        return;
    }
    double inv_ls2[d];
    gp_inv_ls2(g, inv_ls2);
    int n_blocks = (m + PREDICT_BLOCK - 1) / PREDICT_BLOCK;
#pragma omp parallel
    {
        double *ks = xmalloc((size_t)n * PREDICT_BLOCK * sizeof(double)); /* [n][block] */
#pragma omp for schedule(static)
        for (int blk = 0; blk < n_blocks; blk++) {
            int b0 = blk * PREDICT_BLOCK;
            int nb = m - b0 < PREDICT_BLOCK ? m - b0 : PREDICT_BLOCK;
            for (int i = 0; i < n; i++)
                for (int b = 0; b < nb; b++)
                    ks[(size_t)i * nb + b] = matern52(
                        sf2, gp_r2(g, g->x + (size_t)i * d, xs + (size_t)(b0 + b) * d, inv_ls2));
            for (int b = 0; b < nb; b++) {
                double mu = 0.0;
                for (int i = 0; i < n; i++)
                    mu += ks[(size_t)i * nb + b] * gsl_vector_get(g->alpha, i);
                mean[b0 + b] = g->y_mean + g->y_sd * mu;
            }
            /* V = L^-1 Ks; the latent variance is sf2 - |V_b|^2. */
            gsl_matrix_view v = gsl_matrix_view_array(ks, (size_t)n, (size_t)nb);
            gsl_blas_dtrsm(CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, 1.0, g->L, &v.matrix);
            for (int b = 0; b < nb; b++) {
                double s = 0.0;
                for (int i = 0; i < n; i++)
                    s += ks[(size_t)i * nb + b] * ks[(size_t)i * nb + b];
                double vv = sf2 - s;
                if (vv < 1e-12 * sf2) vv = 1e-12 * sf2;
                var[b0 + b] = vv * g->y_sd * g->y_sd;
            }
        }
        free(ks);
    }
}
