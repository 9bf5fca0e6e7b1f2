/* acquisition.h: how promising a candidate is, from the GP posteriors at that point.
 *
 * The Bayesian strategy maximises
 *
 *   log EI(objective) + sum over constraints of log P(constraint met)
 *
 * while a feasible point is known, and the log probability of feasibility alone before.
 * Everything is in logs because far from the incumbent EI underflows to 0 in doubles
 * (z = -40 gives EI ~ 1e-350) and a plain EI would leave thousands of candidates tied at
 * zero; the log stays finite and ordered for any z.
 *
 * Conventions: the objective is maximised (the strategy negates a minimised one); a
 * constraint is written g(x) <= 0 and met with probability Phi(-mu_g / sigma_g).
 */
#ifndef ACQUISITION_H
#define ACQUISITION_H

/* log h(z), h(z) = z Phi(z) + phi(z) = E[max(Z + z, 0)] for Z ~ N(0,1); finite for every
 * finite z (direct for z > -5, Mills ratio to -30, asymptotic series below). */
double acq_log_h(double z);

/* log of Phi(z), stable in both tails (log erfc below 0, log1p(-Q) above). */
double acq_log_cdf(double z);

/* log expected improvement over best of N(mu, sigma^2): log sigma + log h((mu-best)/sigma).
 * sigma == 0 gives log(max(mu - best, 0)) (so -INFINITY when not better). */
double acq_log_ei(double mu, double sigma, double best);

/* log P(g <= 0) for g ~ N(mu, sigma^2); sigma == 0 gives 0 or -INFINITY. */
double acq_log_pf(double mu, double sigma);

#endif
