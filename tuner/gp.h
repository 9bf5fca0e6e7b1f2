/* gp.h: Gaussian-process regression for the Bayesian strategy (GSL linear algebra).
 *
 * One gp models one scalar function of a point (the objective, or one constraint's metric)
 * from noisy observations. The model:
 *
 *   f ~ GP(0, k),  y_i = f(x_i) + e_i,  e_i ~ N(0, noise / w_i)
 *   k(x, x') = sf2 * (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)            (Matern 5/2)
 *   r^2 = sum_j ((x_j - x'_j) / l_j)^2   over ordinary dimensions, plus
 *         sum_j [x_j != x'_j] / l_j^2    over categorical dimensions,
 *
 * one length scale l_j per dimension (ARD). Ordinary inputs are expected in [0,1] (the
 * strategy maps lattice levels there); a categorical input is its level index, and two
 * different categories are at distance 1 / l_j whatever their indices, which is what a
 * one-hot encoding with a shared length scale gives (up to a constant folded into l_j):
 * categories are unordered. Outputs are standardised (mean 0, sd 1) inside the gp; every
 * value going in or out of the API is in the caller's units. w_i (default 1) is the
 * number of repeats behind observation i: a median of several runs is less noisy.
 *
 * Hyperparameters theta = (log l_1..d, log sf2, log noise) maximise the log marginal
 * likelihood
 *
 *   log p(y | theta) = -1/2 y' K^-1 y - sum_i log L_ii - n/2 log(2 pi),  K = L L'
 *
 * with its analytic gradient, from several starts (GSL's BFGS over an unbounded
 * reparametrisation that keeps each theta inside a box, see gp.c). The Cholesky factor is
 * GSL's gsl_linalg_cholesky_decomp1.
 */
#ifndef GP_H
#define GP_H

#include <stdint.h>

#include <gsl/gsl_matrix.h>
#include <gsl/gsl_vector.h>

typedef struct {
    int d;               /* input dimensions */
    int *categorical;    /* [d] 1 when dimension j is unordered (compared by equality) */
    int n, cap;          /* observations held, and room for them */
    double *x;           /* [cap][d] inputs */
    double *y;           /* [cap] outputs, standardised */
    double *w;           /* [cap] noise weights (repeats behind each output), >= 1 */
    double y_mean, y_sd; /* standardisation: y_std = (y - y_mean) / y_sd */

    double *log_ls;   /* [d] log length scales */
    double log_sf2;   /* log signal variance (standardised units) */
    double log_noise; /* log noise variance of one run (standardised units) */

    double prior_noise_var;    /* > 0: log-normal prior on the noise of one run (caller's units) */
    double prior_noise_log_sd; /* its sd in log units */

    gsl_matrix *L;     /* [n][n] lower Cholesky factor of K + diag(noise / w) */
    gsl_vector *alpha; /* [n] (K + diag(noise / w))^-1 y */
    int factored;      /* L and alpha match the data and hyperparameters */
} gp;

gp *gp_create(int d, const int *categorical);
void gp_free(gp *g);
/* A deep copy (data, standardisation, hyperparameters, factor). */
gp *gp_copy(const gp *g);

/* Replace the data: x is [n][d], y is [n] in the caller's units, w is [n] or NULL (all 1).
 * Standardises y (sd 1 when y is constant). Leaves the hyperparameters as they are. */
void gp_set_data(gp *g, const double *x, const double *y, const double *w, int n);

/* Append observations without touching the standardisation or the hyperparameters, and
 * refactor (the Kriging believer adds pending points this way). */
void gp_add_data(gp *g, const double *x, const double *y, int n);

/* Set the hyperparameters (log l[d], log sf2, log noise, all standardised units). */
void gp_set_hyper(gp *g, const double *log_ls, double log_sf2, double log_noise);

/* Factor K with the current hyperparameters. Returns 0, or -1 when K is not positive
 * definite even with jitter (the gp then predicts its prior). */
int gp_factor(gp *g);

/* Log marginal likelihood at the current hyperparameters (standardised outputs), and its
 * gradient with respect to (log l[d], log sf2, log noise) into grad[d+2] when not NULL.
 * Refactors. Returns -INFINITY when K cannot be factored. */
double gp_log_marginal(gp *g, double *grad);

/* Fit the hyperparameters by maximising the log marginal likelihood from n_starts starts
 * (the first a fixed default, the others drawn from a generator seeded with seed), then
 * factor. Deterministic for a seed. Returns the best log marginal likelihood (plus the log
 * noise prior, without its constant, when gp_set_noise_prior set one). */
double gp_fit(gp *g, int n_starts, uint64_t seed);

/* A prior on the noise variance of one run: log noise ~ N(log noise_var, log_sd^2), noise_var
 * in the caller's units (e.g. (0.02 * mean tps)^2 for 2 % measured noise). gp_fit then
 * maximises the log marginal likelihood plus this log prior (a MAP estimate), so that a
 * known measurement noise is neither explained away as signal nor inflated to smooth over a
 * real narrow feature. noise_var <= 0 or not finite removes the prior. */
void gp_set_noise_prior(gp *g, double noise_var, double log_sd);

/* gp_fit with the hyperparameters learnt from the observations idx[m] only (indices into the
 * data), then the factor taken over all of them: the likelihood costs O(m^3) per evaluation
 * instead of O(n^3). idx == NULL or m >= n: gp_fit. */
double gp_fit_subset(gp *g, const int *idx, int m, int n_starts, uint64_t seed);

/* Posterior of the latent f at m points xs[m][d]: mean[m] and var[m] (noise excluded), in
 * the caller's units. Uses the last factorisation (gp_factor, gp_fit, gp_log_marginal,
 * gp_add_data); without one (or with no data) it returns the prior. Runs over blocks of points in
 * parallel (OpenMP); each point's figures do not depend on the number of threads. */
void gp_predict(const gp *g, const double *xs, int m, double *mean, double *var);

/* Variance of one new measurement's noise (a single run), in the caller's units. */
double gp_noise_var(const gp *g);

/* The kernel itself (standardised units), exposed for tests. */
double gp_kernel(const gp *g, const double *a, const double *b);

#endif
