#!/usr/bin/env python3
# gp_reference.py: expected numbers for test_gp.c, computed independently of tuner/gp.c.
# Run: python3 tests/tuner/gp_reference.py
# Independent GP reference: pure Python, Gaussian elimination (no GSL, no numpy).
import math
def matern(r2, sf2):
    r = math.sqrt(r2); return sf2*(1+math.sqrt(5)*r+5/3*r2)*math.exp(-math.sqrt(5)*r)
def r2(a, b, ls, cat):
    s = 0
    for j in range(len(a)):
        t = (1.0 if a[j] != b[j] else 0.0) if cat[j] else a[j]-b[j]
        s += t*t/ls[j]**2
    return s
def solve(A, b):
    n = len(A); M = [row[:] + [b[i]] for i, row in enumerate(A)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(M[k][i])); M[i], M[p] = M[p], M[i]
        for k in range(i+1, n):
            f = M[k][i]/M[i][i]
            for j in range(i, n+1): M[k][j] -= f*M[i][j]
    x = [0]*n
    for i in reversed(range(n)):
        x[i] = (M[i][n] - sum(M[i][j]*x[j] for j in range(i+1, n)))/M[i][i]
    return x
def det(A):
    n = len(A); M = [r[:] for r in A]; d = 1
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(M[k][i]))
        if p != i: M[i], M[p] = M[p], M[i]; d = -d
        d *= M[i][i]
        for k in range(i+1, n):
            f = M[k][i]/M[i][i]
            for j in range(i, n): M[k][j] -= f*M[i][j]
    return d
def case(X, Y, ls, sf2, noise, cat, Xs):
    n = len(Y); mean = sum(Y)/n; sd = math.sqrt(sum((y-mean)**2 for y in Y)/(n-1))
    ys = [(y-mean)/sd for y in Y]
    K = [[matern(r2(X[i], X[k], ls, cat), sf2) + (noise if i == k else 0) for k in range(n)] for i in range(n)]
    a = solve(K, ys)
    lml = -0.5*sum(ys[i]*a[i] for i in range(n)) - 0.5*math.log(det(K)) - n/2*math.log(2*math.pi)
    print("lml %.12f" % lml)
    for xs in Xs:
        k = [matern(r2(X[i], xs, ls, cat), sf2) for i in range(n)]
        v = solve(K, k)
        mu = sum(k[i]*a[i] for i in range(n)); var = sf2 - sum(k[i]*v[i] for i in range(n))
        print("x*=%s mean %.12f var %.12f" % (xs, mean+sd*mu, var*sd*sd))
case([[0.0],[0.3],[1.0]], [1.0,2.0,0.5], [0.5], 1.5, 0.01, [0], [[0.5],[0.0]])
case([[0.2,0],[0.4,1],[0.9,2],[0.5,0]], [3.0,1.0,2.5,2.0], [0.4,0.7], 0.8, 0.05, [0,1], [[0.3,0],[0.3,2],[0.3,1]])
