/* bench_matmul.c: the CPU backend's matmul (engine/backend_cpu.c), the op that bounds decoding
 * speed, measured against this machine's memory bandwidth.
 *
 * A set of bf16 weight matrices far larger than the caches (E4B's MLP shape by default,
 * 2560 x 10240, 2 bytes per weight) is multiplied by n input rows, for every kernel variant
 * the CPU runs (GEMMA_CPU_ISA: portable, avx2, avx512) and n = 1 (decode), 8 (a speculative
 * verify), 64 (a prefill chunk). For n = 1 the figure that matters is GB/s of weights read,
 * next to membw's read bandwidth; for larger n it is GFLOP/s. The best of several passes is
 * kept (the least disturbed by other work on the machine).
 *
 *   bench_matmul [MIB [PASSES]]     default 768 MiB of weights, 5 passes; threads from
 *                                   OMP_NUM_THREADS
 *
 * Prints one line per (variant, n) on stdout: variant n ms_per_pass weight_GBps GFLOPs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "util.h"

static long arg_long(const char *s, const char *what, long min) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < min) {
        fprintf(stderr, "bench_matmul: %s must be an integer >= %ld, got \"%s\"\n", what, min, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    util_progname = "bench_matmul";
    const long mib = argc > 1 ? arg_long(argv[1], "MIB", 16) : 768;
    const int passes = argc > 2 ? (int)arg_long(argv[2], "PASSES", 1) : 5;
    const int rows = 10240, cols = 2560; /* E4B's gate/up projection */
    const size_t per = (size_t)rows * cols;
    int mats = (int)((size_t)mib * 1048576 / (per * 2)); /* whole matrices in MIB */
    if (mats < 1) mats = 1;

    tensor *w = xcalloc((size_t)mats, sizeof *w);
    for (int m = 0; m < mats; m++) {
        uint16_t *d = xmalloc(per * 2);
        for (size_t i = 0; i < per; i++) /* small varied values, never all zero */
            d[i] = f32_to_bf16((float)((i * 2654435761u + (unsigned)m) % 2001u) / 1000.0f - 1.0f);
        w[m] = (tensor){.data = d, .dtype = DT_BF16, .rows = rows, .cols = cols};
    }
    const int ns[] = {1, 8, 64};
    float *x = xmalloc((size_t)64 * cols * sizeof(float));
    for (size_t i = 0; i < (size_t)64 * cols; i++)
        x[i] = (float)(i % 13) / 6.0f - 1.0f;

    const char *isas[] = {"portable", "avx2", "avx512"};
    printf("# %d matrices of %d x %d bf16 (%.0f MiB)\n", mats, rows, cols,
           (double)mats * per * 2 / 1048576);
    printf("# variant n ms_per_pass weight_GBps GFLOPs\n");
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        setenv("GEMMA_CPU_ISA", isas[k], 1);
        backend *b = backend_cpu_new(0);
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            const int n = ns[ni];
            float *out = b->alloc(b, (size_t)n * rows);
            double best = 1e30;
            for (int p = 0; p <= passes; p++) { /* pass 0 warms up */
                double t0 = now_seconds();
                for (int m = 0; m < mats; m++)
                    b->matmul(b, out, &w[m], x, n);
                double t = now_seconds() - t0;
                if (p > 0 && t < best) best = t;
            }
            double bytes = (double)mats * per * 2, flops = 2.0 * mats * per * n;
            printf("%s %d %.3f %.2f %.1f\n", isas[k], n, best * 1e3, bytes / best / 1e9,
                   flops / best / 1e9);
            fflush(stdout);
            b->release(b, out);
        }
        b->destroy(b);
    }
    for (int m = 0; m < mats; m++)
        free((void *)w[m].data);
    free(w);
    free(x);
    return 0;
}
