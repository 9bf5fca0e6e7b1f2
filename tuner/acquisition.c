/* acquisition.c: log expected improvement and log probability of feasibility (see
 * acquisition.h). The normal cdf and pdf are GSL's (gsl_cdf_ugaussian_P,
 * gsl_ran_ugaussian_pdf, and gsl_sf_log_erfc for the far lower tail of the cdf).
 *
 * log h(z) in three regions, each accurate to ~1e-12 relative where it is used:
 *   z >= -5:        h = z Phi(z) + phi(z) directly (cancellation costs < 2 digits);
 *   -30 <= z < -5:  h = phi(z) (1 + z Phi(z)/phi(z)), the Mills ratio Phi(z)/phi(z)
 *                   from GSL's cdf and pdf (both still normal numbers there);
 *   z < -30:        h = phi(z) / z^2 (1 - 3/z^2 + 15/z^4 - 105/z^6 + 945/z^8 - ...),
 *                   the asymptotic series of 1 + z R, R the Mills ratio, whose first
 *                   omitted term is below 1e-11 relative at z = -30;
 * and log phi(z) = -z^2/2 - log(2 pi)/2 is taken analytically, so nothing underflows.
 */
#include "acquisition.h"

#include <math.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sf_erf.h>

#define LOG_SQRT_2PI 0.91893853320467274178

double acq_log_h(double z) {
    if (z >= -5.0) return log(z * gsl_cdf_ugaussian_P(z) + gsl_ran_ugaussian_pdf(z));
    double log_phi = -0.5 * z * z - LOG_SQRT_2PI;
    if (z >= -30.0) {
        double mills = gsl_cdf_ugaussian_P(z) / gsl_ran_ugaussian_pdf(z);
        return log_phi + log1p(z * mills);
    }
    double t = 1.0 / (z * z);
    /* 1 + z R(z) = t (1 - 3t + 15t^2 - 105t^3 + 945t^4 - 10395t^5) + O(t^7) */
    double series = 1.0 + t * (-3.0 + t * (15.0 + t * (-105.0 + t * (945.0 + t * -10395.0))));
    return log_phi + log(t) + log(series);
}

double acq_log_cdf(double z) {
    if (z < 0.0) return log(0.5) + gsl_sf_log_erfc(-z / M_SQRT2);
    return log1p(-gsl_cdf_ugaussian_Q(z));
}

double acq_log_ei(double mu, double sigma, double best) {
    if (!(sigma > 0.0)) return mu > best ? log(mu - best) : -INFINITY;
    return log(sigma) + acq_log_h((mu - best) / sigma);
}

double acq_log_pf(double mu, double sigma) {
    if (!(sigma > 0.0)) return mu <= 0.0 ? 0.0 : -INFINITY;
    return acq_log_cdf(-mu / sigma);
}
