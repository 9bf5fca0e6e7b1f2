/* test_quant_matmul.c: every build of the int8 / int4 product (engine/quant_matmul.c) that this
 * CPU runs - portable, AVX2+FMA, AVX-512F - against the scalar reference quant_matmul_ref.
 *
 * For int8 and int4 at groups 32, 64 and 128 and n = 1, 2, 5, 9, 13 inputs, on a matrix whose
 * row count is not a multiple of the 4-row tile and on one large enough to run on several
 * threads: each output is within a relative tolerance of the reference (scaled by the sum of
 * the magnitudes of its products, as a dot product's rounding is), the result is the same to
 * the bit on 1, 2 and 3 threads, and every input's outputs are the same to the bit as those of
 * a one-input call (a verify pass reproduces decode steps). Last, GEMMA_CPU_ISA caps
 * quant_isa_best. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"
#include "../test_util.h"

static void check_matrix(quant_isa isa, quant_dtype dt, int group, int rows, int cols) {
    float *w = rand_vec((size_t)rows * cols);
    quant_matrix m;
    char err[256];
    if (quant_from_f32(&m, "w", w, rows, cols, dt, group, err, sizeof err)) die("%s", err);
    float *deq = xmalloc((size_t)rows * cols * sizeof(float));
    for (int r = 0; r < rows; r++)
        quant_dequant_row(&m, r, deq + (size_t)r * cols);
    const int ns[] = {1, 2, 5, 9, 13};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
        const int n = ns[k];
        const size_t ny = (size_t)n * rows;
        float *x = rand_vec((size_t)n * cols);
        float *y1 = xmalloc(ny * sizeof(float)), *y2 = xmalloc(ny * sizeof(float));
        float *y3 = xmalloc(ny * sizeof(float)), *yr = xmalloc(ny * sizeof(float));
        float *one = xmalloc((size_t)rows * sizeof(float));
        quant_matmul_isa(&m, x, n, y1, 1, isa);
        quant_matmul_isa(&m, x, n, y2, 2, isa);
        quant_matmul_isa(&m, x, n, y3, 3, isa);
        quant_matmul_ref(&m, x, n, yr);
        int bad = 0, single = 0;
        double worst = 0;
        for (int t = 0; t < n; t++) {
            const float *xt = x + (size_t)t * cols;
            quant_matmul_isa(&m, xt, 1, one, 2, isa);
            if (memcmp(one, y1 + (size_t)t * rows, (size_t)rows * sizeof(float))) single++;
            for (int r = 0; r < rows; r++) {
                double mag = 0;
                for (int c = 0; c < cols; c++)
                    mag += fabs((double)deq[(size_t)r * cols + c] * xt[c]);
                const double d = fabs((double)y1[(size_t)t * rows + r] - yr[(size_t)t * rows + r]);
                if (d > 1e-5 * mag + 1e-6) bad++;
                if (mag > 0 && d / mag > worst) worst = d / mag;
            }
        }
        const char *name = quant_isa_name(isa), *dn = quant_dtype_name(dt);
        EXPECT(bad == 0, " %s %s g%d %dx%d n=%d: %d outputs off quant_matmul_ref (worst %.3g)",
               name, dn, group, rows, cols, n, bad, worst);
        EXPECT(!memcmp(y1, y2, ny * sizeof(float)) && !memcmp(y1, y3, ny * sizeof(float)),
               " %s %s g%d %dx%d n=%d: 1, 2 and 3 threads differ", name, dn, group, rows, cols, n);
        EXPECT(single == 0, " %s %s g%d %dx%d n=%d: %d inputs differ from a one-input call", name,
               dn, group, rows, cols, n, single);
        free(x);
        free(y1);
        free(y2);
        free(y3);
        free(yr);
        free(one);
    }
    free(deq);
    free(w);
    quant_free(&m);
}

static void test_isa_cap(void) {
    setenv("GEMMA_CPU_ISA", "portable", 1);
    EXPECT(quant_isa_best() == QUANT_ISA_PORTABLE);
    setenv("GEMMA_CPU_ISA", "avx2", 1);
    EXPECT(quant_isa_best() ==
           (quant_isa_supported(QUANT_ISA_AVX2) ? QUANT_ISA_AVX2 : QUANT_ISA_PORTABLE));
    unsetenv("GEMMA_CPU_ISA");
    EXPECT(quant_isa_supported(quant_isa_best()));
    if (quant_isa_supported(QUANT_ISA_AVX512)) EXPECT(quant_isa_best() == QUANT_ISA_AVX512);
}

int main(void) {
    uint64_t seed = rng_seed_from_env();
    printf("test_quant_matmul: seed %llu (TEST_SEED to replay)\n", (unsigned long long)seed);
    const quant_isa isas[] = {QUANT_ISA_PORTABLE, QUANT_ISA_AVX2, QUANT_ISA_AVX512};
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (!quant_isa_supported(isas[i])) {
            printf("test_quant_matmul: %s: not run by this CPU, skipped\n",
                   quant_isa_name(isas[i]));
            continue;
        }
        const quant_dtype dts[] = {QUANT_INT8, QUANT_INT4};
        const int groups[] = {32, 64, 128};
        for (int d = 0; d < 2; d++)
            for (int g = 0; g < 3; g++) {
                check_matrix(isas[i], dts[d], groups[g], 37, 384);
                check_matrix(isas[i], dts[d], groups[g], 518, 512); /* threaded at n = 1 */
            }
        printf("test_quant_matmul: %s checked\n", quant_isa_name(isas[i]));
    }
    test_isa_cap();
    return test_exit("test_quant_matmul");
}
