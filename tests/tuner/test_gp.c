/* test_gp.c: the Gaussian process of the Bayesian strategy (tuner/gp.c) against figures
 * computed independently of it.
 *
 * The reference numbers for the two data sets below come from a pure-Python script (no
 * GSL, no numpy: Gaussian elimination with partial pivoting for K^-1 y, K^-1 k* and
 * det K) that standardises y exactly as gp.c documents (mean, sample sd), builds
 * K = k(X, X) + noise I with the Matern-5/2 formula of gp.h, and prints
 *   lml  = -1/2 ys' K^-1 ys - 1/2 log det K - n/2 log 2 pi      (standardised ys)
 *   mean = y_mean + y_sd * k*' K^-1 ys,  var = y_sd^2 (sf2 - k*' K^-1 k*).
 * The script is tests/tuner/gp_reference.py (run it with python3 to see the numbers): one
 * call case(X, Y, ls, sf2, noise, cat, Xs) per data set with the values used in the test,
 * printing lml and (mean, var) at each x*. gp.c adds a 1e-9 * sf2 jitter to the
 * diagonal, hence the 1e-6 tolerances.
 *
 * The one-point case is by hand: y = [2] standardises to mean 2, sd 2 (a single value
 * has no spread; gp.c then uses max(|mean|, 1)), ys = 0, so the mean is 2 everywhere and
 * the variance at the data point is sd^2 (sf2 - sf2^2 / (sf2 + noise)) = 4 (1 - 1/1.01)
 * = 0.0396039604 for sf2 = 1, noise = 0.01.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <omp.h>

#include "gp.h"
#include "../test_util.h"

static void test_kernel(void) {
    int cat[1] = {0};
    gp *g = gp_create(1, cat);
    double ls = log(1.0);
    gp_set_hyper(g, &ls, log(1.0), log(1e-2));
    double a = 0.0, b = 1.0, c = 0.5;
    EXPECT_NEAR(gp_kernel(g, &a, &a), 1.0, 1e-15);
    /* r = 1: (1 + sqrt5 + 5/3) e^-sqrt5 */
    EXPECT_NEAR(gp_kernel(g, &a, &b), 0.523994108832, 1e-11);
    gp_set_hyper(g, &ls, log(2.0), log(1e-2));
    /* r = 0.5, sf2 = 2 */
    EXPECT_NEAR(gp_kernel(g, &a, &c), 1.657298284836, 1e-11);
    gp_free(g);

    /* Categorical: every pair of different categories is at distance 1/l, whatever the
     * indices (unordered). */
    int catc[1] = {1};
    gp *h = gp_create(1, catc);
    gp_set_hyper(h, &ls, 0.0, log(1e-2));
    double c0 = 0, c1 = 1, c2 = 2;
    EXPECT_NEAR(gp_kernel(h, &c0, &c1), 0.523994108832, 1e-11);
    EXPECT_NEAR(gp_kernel(h, &c0, &c2), 0.523994108832, 1e-11);
    EXPECT_NEAR(gp_kernel(h, &c2, &c2), 1.0, 1e-15);
    gp_free(h);
}

static void test_posterior_1d(void) {
    int cat[1] = {0};
    gp *g = gp_create(1, cat);
    double x[3] = {0.0, 0.3, 1.0}, y[3] = {1.0, 2.0, 0.5};
    gp_set_data(g, x, y, NULL, 3);
    double ls = log(0.5);
    gp_set_hyper(g, &ls, log(1.5), log(0.01));
    EXPECT_NEAR(gp_log_marginal(g, NULL), -4.991757460916, 1e-6);
    double xs[2] = {0.5, 0.0}, mean[2], var[2];
    gp_predict(g, xs, 2, mean, var);
    EXPECT_NEAR(mean[0], 1.924596894107, 1e-6);
    EXPECT_NEAR(var[0], 0.108363624274, 1e-6);
    EXPECT_NEAR(mean[1], 1.015019589642, 1e-6);
    EXPECT_NEAR(var[1], 0.005737607584, 1e-6);
    gp_free(g);
}

static void test_posterior_categorical(void) {
    int cat[2] = {0, 1};
    gp *g = gp_create(2, cat);
    double x[8] = {0.2, 0, 0.4, 1, 0.9, 2, 0.5, 0}, y[4] = {3.0, 1.0, 2.5, 2.0};
    gp_set_data(g, x, y, NULL, 4);
    double ls[2] = {log(0.4), log(0.7)};
    gp_set_hyper(g, ls, log(0.8), log(0.05));
    EXPECT_NEAR(gp_log_marginal(g, NULL), -5.878356921359, 1e-6);
    double xs[6] = {0.3, 0, 0.3, 2, 0.3, 1}, mean[3], var[3];
    gp_predict(g, xs, 3, mean, var);
    EXPECT_NEAR(mean[0], 2.649302196850, 1e-6);
    EXPECT_NEAR(var[0], 0.040506054874, 1e-6);
    EXPECT_NEAR(mean[1], 2.146167465320, 1e-6);
    EXPECT_NEAR(var[1], 0.474084210865, 1e-6);
    EXPECT_NEAR(mean[2], 1.192048987663, 1e-6);
    EXPECT_NEAR(var[2], 0.084364711854, 1e-6);

    /* Relabelling the categories (0 <-> 2) must not change anything: unordered. */
    gp *h = gp_create(2, cat);
    double xr[8] = {0.2, 2, 0.4, 1, 0.9, 0, 0.5, 2};
    gp_set_data(h, xr, y, NULL, 4);
    gp_set_hyper(h, ls, log(0.8), log(0.05));
    gp_factor(h);
    double xsr[6] = {0.3, 2, 0.3, 0, 0.3, 1}, mr[3], vr[3];
    gp_predict(h, xsr, 3, mr, vr);
    for (int i = 0; i < 3; i++) {
        EXPECT_NEAR(mr[i], mean[i], 1e-12);
        EXPECT_NEAR(vr[i], var[i], 1e-12);
    }
    gp_free(g);
    gp_free(h);
}

static void test_one_point(void) {
    int cat[1] = {0};
    gp *g = gp_create(1, cat);
    double x = 0.25, y = 2.0, ls = log(0.3);
    gp_set_data(g, &x, &y, NULL, 1);
    gp_set_hyper(g, &ls, 0.0, log(0.01));
    gp_factor(g);
    double xs[2] = {0.25, 0.9}, mean[2], var[2];
    gp_predict(g, xs, 2, mean, var);
    EXPECT_NEAR(mean[0], 2.0, 1e-12);
    EXPECT_NEAR(mean[1], 2.0, 1e-12);
    EXPECT_NEAR(var[0], 4.0 * (1.0 - 1.0 / 1.01), 1e-7);
    EXPECT(var[1] > var[0] && var[1] <= 4.0 + 1e-12);
    gp_free(g);

    /* No data at all: the prior. */
    gp *e = gp_create(1, cat);
    double m0, v0;
    gp_predict(e, xs, 1, &m0, &v0);
    EXPECT_NEAR(m0, 0.0, 0.0);
    EXPECT(v0 > 0.0);
    gp_free(e);
}

/* The analytic gradient against central differences, with repeats-weighted noise and a
 * categorical dimension so that every term is exercised. */
static void test_gradient(void) {
    int cat[3] = {0, 0, 1};
    gp *g = gp_create(3, cat);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 7);
    enum { N = 15 };
    double x[N * 3], y[N], w[N];
    for (int i = 0; i < N; i++) {
        x[3 * i] = gsl_rng_uniform(rng);
        x[3 * i + 1] = gsl_rng_uniform(rng);
        x[3 * i + 2] = (double)(i % 3);
        y[i] = sin(5 * x[3 * i]) + x[3 * i + 1] * x[3 * i + 2] + 0.1 * gsl_ran_gaussian(rng, 1);
        w[i] = 1 + i % 2;
    }
    gp_set_data(g, x, y, w, N);
    double th[5] = {log(0.3), log(0.8), log(1.3), log(1.2), log(0.05)};
    gp_set_hyper(g, th, th[3], th[4]);
    double grad[5];
    gp_log_marginal(g, grad);
    for (int k = 0; k < 5; k++) {
        double h = 1e-5, tp[5], tm[5];
        memcpy(tp, th, sizeof th);
        memcpy(tm, th, sizeof th);
        tp[k] += h;
        tm[k] -= h;
        gp_set_hyper(g, tp, tp[3], tp[4]);
        double fp = gp_log_marginal(g, NULL);
        gp_set_hyper(g, tm, tm[3], tm[4]);
        double fm = gp_log_marginal(g, NULL);
        EXPECT_NEAR(grad[k], (fp - fm) / (2 * h), 1e-5 * (1 + fabs(grad[k])));
    }
    gsl_rng_free(rng);
    gp_free(g);
}

/* Fitting: the likelihood must go up from the default start, the fitted model must
 * interpolate a smooth function, the noise must be learnt, and a seed fixes the result. */
static void test_fit(void) {
    int cat[1] = {0};
    gp *g = gp_create(1, cat);
    enum { N = 12 };
    double x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = i / (N - 1.0);
        y[i] = 10.0 + 3.0 * sin(6.0 * x[i]);
    }
    gp_set_data(g, x, y, NULL, N);
    double ls0 = log(0.3);
    gp_set_hyper(g, &ls0, 0.0, log(1e-2));
    double lml0 = gp_log_marginal(g, NULL);
    double lml = gp_fit(g, 3, 1);
    EXPECT(lml > lml0);
    EXPECT_NEAR(gp_log_marginal(g, NULL), lml, 1e-9);
    EXPECT(exp(g->log_noise) < 1e-3); /* noise-free data */
    double xs[N - 1], mean[N - 1], var[N - 1];
    for (int i = 0; i < N - 1; i++)
        xs[i] = (i + 0.5) / (N - 1.0);
    gp_predict(g, xs, N - 1, mean, var);
    for (int i = 0; i < N - 1; i++)
        EXPECT_NEAR(mean[i], 10.0 + 3.0 * sin(6.0 * xs[i]), 0.05);

    /* Same data, same seed: bit-identical hyperparameters. */
    gp *h = gp_create(1, cat);
    gp_set_data(h, x, y, NULL, N);
    gp_fit(h, 3, 1);
    EXPECT(h->log_ls[0] == g->log_ls[0] && h->log_sf2 == g->log_sf2 &&
           h->log_noise == g->log_noise);
    gp_free(h);
    gp_free(g);

    /* Noisy constant: the learnt noise variance (in the caller's units) should be near the
     * truth (sd 0.2 -> 0.04) and the length scale long. */
    gp *q = gp_create(1, cat);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    enum { M = 60 };
    double xq[M], yq[M];
    for (int i = 0; i < M; i++) {
        xq[i] = gsl_rng_uniform(rng);
        yq[i] = 5.0 + 0.2 * gsl_ran_gaussian(rng, 1.0);
    }
    gp_set_data(q, xq, yq, NULL, M);
    gp_fit(q, 3, 9);
    double noise = exp(q->log_noise) * q->y_sd * q->y_sd;
    EXPECT(noise > 0.02 && noise < 0.08);
    gsl_rng_free(rng);
    gp_free(q);
}

/* Prediction is a pure function of the point: the thread count changes no bit. The copy
 * predicts the same; the believer update (gp_add_data) collapses the variance where the
 * new point is. */
static void test_threads_copy_believer(void) {
    int cat[2] = {0, 0};
    gp *g = gp_create(2, cat);
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 11);
    enum { N = 40, M = 1000 };
    double x[2 * N], y[N], xs[2 * M];
    for (int i = 0; i < N; i++) {
        x[2 * i] = gsl_rng_uniform(rng);
        x[2 * i + 1] = gsl_rng_uniform(rng);
        y[i] = x[2 * i] * x[2 * i] - x[2 * i + 1];
    }
    for (int i = 0; i < 2 * M; i++)
        xs[i] = gsl_rng_uniform(rng);
    gp_set_data(g, x, y, NULL, N);
    gp_fit(g, 2, 5);
    static double m1[M], v1[M], m2[M], v2[M];
    int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    gp_predict(g, xs, M, m1, v1);
    omp_set_num_threads(threads > 1 ? threads : 2);
    gp_predict(g, xs, M, m2, v2);
    EXPECT(memcmp(m1, m2, sizeof m1) == 0 && memcmp(v1, v2, sizeof v1) == 0);
    omp_set_num_threads(threads);

    gp *c = gp_copy(g);
    gp_predict(c, xs, M, m2, v2);
    EXPECT(memcmp(m1, m2, sizeof m1) == 0 && memcmp(v1, v2, sizeof v1) == 0);
    double p[2] = {0.5, 0.5}, pm, pv, pm2, pv2;
    gp_predict(c, p, 1, &pm, &pv);
    gp_add_data(c, p, &pm, 1);
    gp_predict(c, p, 1, &pm2, &pv2);
    EXPECT_NEAR(pm2, pm, 1e-6 * (1 + fabs(pm)));
    EXPECT(pv2 < pv);
    EXPECT(c->n == N + 1 && g->n == N);
    gp_free(c);
    gsl_rng_free(rng);
    gp_free(g);
}

/* The noise prior: on a noisy constant the free fit learns sd ~0.2; a tight prior at sd 0.05
 * pulls the fitted noise to it. A fit on a subset of the data still conditions on all of it. */
static void test_noise_prior_and_subset(void) {
    int cat[1] = {0};
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(rng, 3);
    enum { M = 60 };
    double xq[M], yq[M];
    for (int i = 0; i < M; i++) {
        xq[i] = gsl_rng_uniform(rng);
        yq[i] = 5.0 + 0.2 * gsl_ran_gaussian(rng, 1.0);
    }
    gp *q = gp_create(1, cat);
    gp_set_data(q, xq, yq, NULL, M);
    gp_set_noise_prior(q, 0.05 * 0.05, 0.05);
    gp_fit(q, 3, 9);
    double noise = gp_noise_var(q);
    EXPECT(noise > 0.0015 && noise < 0.004);
    gp_set_noise_prior(q, -1.0, 1.0); /* removed */
    EXPECT(q->prior_noise_var == 0.0);
    gp_free(q);

    gp *g = gp_create(1, cat);
    enum { N = 40 };
    double x[N], y[N];
    int idx[N / 2];
    for (int i = 0; i < N; i++) {
        x[i] = i / (N - 1.0);
        y[i] = sin(6.0 * x[i]);
    }
    for (int i = 0; i < N / 2; i++)
        idx[i] = 2 * i;
    gp_set_data(g, x, y, NULL, N);
    gp_fit_subset(g, idx, N / 2, 2, 1);
    EXPECT(g->n == N && g->factored);
    double mean, var;
    gp_predict(g, &x[1], 1, &mean, &var); /* a point left out of the likelihood */
    EXPECT_NEAR(mean, y[1], 1e-2);
    gp_free(g);
    gsl_rng_free(rng);
}

int main(void) {
    test_noise_prior_and_subset();
    test_kernel();
    test_posterior_1d();
    test_posterior_categorical();
    test_one_point();
    test_gradient();
    test_fit();
    test_threads_copy_believer();
    return test_exit("test_gp");
}
