/* test_acquisition.c: log EI and log probability of feasibility (tuner/acquisition.c).
 *
 * Reference values of log h(z), h(z) = z Phi(z) + phi(z), come from
 * tests/tuner/acq_reference.py (60-digit decimal arithmetic, no GSL: an erf series and the
 * Laplace continued fraction of the Mills ratio). Beyond them: agreement with the direct
 * formula where it is accurate, the tail asymptotics log h(z) ~ -z^2/2 - log sqrt(2 pi)
 * - 2 log|z|, continuity across the region boundaries, monotonicity, and the log cdf.
 */
#include <math.h>
#include <stdio.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

#include "acquisition.h"
#include "../test_util.h"

static void test_reference(void) {
    static const struct {
        double z, log_h;
    } ref[] = {
        {3, 1.098739665327708e+00},       {1, 8.002621884930694e-02},
        {0, -9.189385332046728e-01},      {-1, -2.485121025712641e+00},
        {-3, -7.869686059603029e+00},     {-5.5, -1.954307145282410e+01},
        {-10, -5.555312203612235e+01},    {-20, -2.069178385094251e+02},
        {-29.9, -4.547229981194963e+02},  {-30.1, -4.607362873987430e+02},
        {-40, -8.082985683566200e+02},    {-100, -5.010129578800250e+03},
        {-10000, -5.000001933961931e+07},
    };
    for (size_t i = 0; i < sizeof ref / sizeof ref[0]; i++)
        EXPECT_REL(acq_log_h(ref[i].z), ref[i].log_h, 1e-11);
}

static void test_direct_and_asymptotic(void) {
    /* Where the direct formula loses nothing, it must agree. */
    for (double z = -4.0; z <= 6.0; z += 0.25) {
        double h = z * gsl_cdf_ugaussian_P(z) + gsl_ran_ugaussian_pdf(z);
        EXPECT_REL(acq_log_h(z), log(h), 1e-12);
    }
    /* Tail: log h(z) + z^2/2 + log sqrt(2 pi) + 2 log|z| = log(1 - 3/z^2 + 15/z^4 - ...)
     * = -3/z^2 + O(z^-4); the sum itself is only good to a few ulps of z^2/2. */
    for (double z = -50.0; z >= -1e6; z *= 4.0) {
        double rest = acq_log_h(z) + 0.5 * z * z + 0.5 * log(2 * M_PI) + 2.0 * log(-z);
        EXPECT(fabs(rest + 3.0 / (z * z)) < 20.0 / (z * z * z * z) + 4e-16 * z * z);
    }
    /* Finite, continuous and increasing across the region boundaries (-5 and -30) and
     * everywhere sampled. */
    double prev = acq_log_h(-1e8);
    EXPECT(isfinite(prev));
    for (double z = -200.0; z <= 10.0; z += 0.01) {
        double v = acq_log_h(z);
        EXPECT(isfinite(v) && v > prev);
        prev = v;
    }
    for (int b = 0; b < 2; b++) {
        double zb = b ? -30.0 : -5.0, e = 1e-12; /* slope there is about |z| */
        EXPECT(fabs(acq_log_h(zb - e) - acq_log_h(zb + e)) < 1e-9);
    }
}

static void test_ei_and_pf(void) {
    /* EI = sigma h((mu - best)/sigma) */
    EXPECT_REL(acq_log_ei(1.0, 2.0, 0.0), log(2.0) + acq_log_h(0.5), 1e-15);
    EXPECT_REL(acq_log_ei(-100.0, 1.0, 0.0), acq_log_h(-100.0), 1e-15);
    EXPECT(acq_log_ei(2.0, 0.0, 1.0) == 0.0); /* log(2 - 1) */
    EXPECT(acq_log_ei(0.5, 0.0, 1.0) == -INFINITY);
    /* Larger sigma, same mean below best: more expected improvement. */
    EXPECT(acq_log_ei(0.0, 2.0, 1.0) > acq_log_ei(0.0, 1.0, 1.0));

    /* log P(g <= 0), g ~ N(mu, sigma^2) = log Phi(-mu/sigma). */
    EXPECT_REL(acq_log_pf(0.0, 1.0), log(0.5), 1e-15);
    EXPECT_REL(acq_log_pf(1.0, 2.0), log(gsl_cdf_ugaussian_P(-0.5)), 1e-14);
    EXPECT_REL(acq_log_pf(-1.0, 2.0), log(gsl_cdf_ugaussian_P(0.5)), 1e-14);
    EXPECT_REL(acq_log_pf(-10.0, 1.0), log1p(-gsl_cdf_ugaussian_Q(10.0)), 1e-12);
    /* Deep lower tail stays finite: log Phi(-40) ~ -40^2/2 - log(40 sqrt(2 pi)). */
    double lp = acq_log_pf(40.0, 1.0);
    EXPECT(isfinite(lp) && fabs(lp - (-800.0 - log(40.0 * sqrt(2 * M_PI)))) < 1e-3);
    EXPECT(acq_log_pf(-1.0, 0.0) == 0.0);
    EXPECT(acq_log_pf(1.0, 0.0) == -INFINITY);
    EXPECT_REL(acq_log_cdf(-3.0), log(gsl_cdf_ugaussian_P(-3.0)), 1e-13);
}

int main(void) {
    test_reference();
    test_direct_and_asymptotic();
    test_ei_and_pf();
    return test_exit("test_acquisition");
}
