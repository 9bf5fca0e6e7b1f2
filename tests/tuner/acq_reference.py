#!/usr/bin/env python3
# acq_reference.py: expected log h(z) = log(z Phi(z) + phi(z)) for test_acquisition.c,
# computed independently of tuner/acquisition.c and of GSL, with 60-digit decimals:
# for z >= -3 directly, Phi from the Taylor series of erf; below, from the identity
# h(z) = phi(z) (1 - t R(t)), t = -z, with the Mills ratio R(t) = Q(t)/phi(t) from its
# Laplace continued fraction R(t) = 1/(t + 1/(t + 2/(t + 3/(t + ...)))) (fast for t >= 3).
# Run: python3 tests/tuner/acq_reference.py
from decimal import Decimal as D, getcontext
getcontext().prec = 60
PI = D("3.14159265358979323846264338327950288419716939937510582097494")
def erf_series(x):  # erf(x) = 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n+1))
    s, term, n = D(0), x, 0
    while True:
        t = term / (2 * n + 1)
        s += t
        if abs(t) < D(10) ** -58: break
        n += 1
        term = -term * x * x / n
    return 2 / PI.sqrt() * s
def log_h(z):
    z = D(z)
    log_phi = -z * z / 2 - (2 * PI).ln() / 2
    if z >= -3:
        cdf = (1 + erf_series(z / D(2).sqrt())) / 2
        return (z * cdf + log_phi.exp()).ln()
    t = -z
    r = D(0)
    for k in range(2000, 0, -1):
        r = k / (t + r)
    mills = 1 / (t + r)
    return log_phi + (1 - t * mills).ln()
for z in ["3", "1", "0", "-1", "-3", "-5.5", "-10", "-20", "-29.9", "-30.1", "-40", "-100", "-10000"]:
    print("%8s %.15e" % (z, log_h(z)))
