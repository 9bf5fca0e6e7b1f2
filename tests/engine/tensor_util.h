/* tensor_util.h: random weight tensors with their exact values and the double-precision
 * reference of their products, for the CPU backend's op tests (test_backend_cpu,
 * test_backend_cpu_chunk; ../test_util.h's close_all compares against it). Static inline:
 * include it after the engine headers and ../test_util.h (its generator). */
#ifndef TENSOR_UTIL_H
#define TENSOR_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "backend.h"
#include "util.h"

/* A random tensor [rows, cols] of the given dtype; its exact fp32 values go to *ref. */
static inline tensor rand_tensor(int rows, int cols, weight_dtype dt, double **ref) {
    size_t n = (size_t)rows * cols;
    tensor t = {.dtype = dt, .rows = rows, .cols = cols};
    *ref = xmalloc(n * sizeof(double));
    if (dt == DT_F32) {
        float *d = rand_vec(n);
        for (size_t i = 0; i < n; i++)
            (*ref)[i] = d[i];
        t.data = d;
    } else {
        uint16_t *d = xmalloc(n * 2);
        for (size_t i = 0; i < n; i++) {
            float v = rng_val();
            d[i] = dt == DT_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
            (*ref)[i] = dt == DT_BF16 ? bf16_to_f32(d[i]) : f16_to_f32(d[i]);
        }
        t.data = d;
    }
    return t;
}

/* want[t][r] = sum_c w[r][c] x[t][c] in double: the reference of a matmul of n inputs, w being
 * rand_tensor's exact values [rows][cols] and x [n][cols]. Caller frees. */
static inline double *ref_matmul(const double *w, const float *x, int n, int rows, int cols) {
    double *want = xmalloc((size_t)n * rows * sizeof(double));
    for (int t = 0; t < n; t++)
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int c = 0; c < cols; c++)
                s += w[(size_t)r * cols + c] * x[(size_t)t * cols + c];
            want[(size_t)t * rows + r] = s;
        }
    return want;
}

#endif
