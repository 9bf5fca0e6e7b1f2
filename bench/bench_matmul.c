/* bench_matmul.c: the CPU backend's matmul (engine/backend_cpu.c), the op that bounds decoding
 * speed, measured against this machine's memory bandwidth.
 *
 * A set of bf16 weight matrices far larger than the caches (E4B's MLP shape by default,
 * 2560 x 10240, 2 bytes per weight) is multiplied by n input rows, for every kernel variant
 * the CPU runs (GEMMA_CPU_ISA: portable, avx2, avx512) and n = 1 (decode), 8 (a speculative
 * verify), 64 (prefill-sized; the decoder's chunks are 256). For n = 1 the figure that matters is
 * GB/s of weights read, next to the bandwidth of a plain read of the same bytes (every thread
 * summing its share of the 16-bit words, as bench/membw does), timed in passes interleaved with the
 * matmul passes so that both see the same machine (on a shared machine the load moves from one
 * second to the next); for larger n it is GFLOP/s. The best of several passes of each is kept.
 *
 *   bench_matmul [MIB [PASSES]]     default 768 MiB of weights, 5 passes; threads from
 *                                   OMP_NUM_THREADS
 *
 * Prints one line per (variant, n) on stdout:
 *   variant n ms_per_pass weight_GBps read_GBps GFLOPs */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "util.h"

/* A plain read of every weight word, split over the threads like the matvec's rows. */
static unsigned long stream_read(const tensor *w, int mats) {
    unsigned long total = 0;
    for (int m = 0; m < mats; m++) {
        const uint16_t *d = w[m].data;
        const long n = (long)w[m].rows * w[m].cols;
#pragma omp parallel for schedule(static) reduction(+ : total)
        for (long c = 0; c < n; c += 4096) {
            unsigned int s = 0;
            const long end = c + 4096 < n ? c + 4096 : n;
#pragma omp simd reduction(+ : s)
            for (long i = c; i < end; i++)
                s += d[i];
            total += s;
        }
    }
    return total;
}

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
    unsigned long checksum = 0; /* keeps the plain reads from being optimised away */
    printf("# %d matrices of %d x %d bf16 (%.0f MiB)\n", mats, rows, cols,
           (double)mats * per * 2 / 1048576);
    printf("# variant n ms_per_pass weight_GBps read_GBps GFLOPs\n");
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        setenv("GEMMA_CPU_ISA", isas[k], 1);
        backend *b = backend_cpu_new(0);
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            const int n = ns[ni];
            float *out = b->alloc(b, (size_t)n * rows);
            double best = 1e30, best_read = 1e30;
            for (int p = 0; p <= passes; p++) { /* pass 0 warms up */
                double t0 = now_seconds();
                checksum += stream_read(w, mats);
                double t1 = now_seconds();
                for (int m = 0; m < mats; m++)
                    b->matmul(b, out, &w[m], x, n);
                double t2 = now_seconds();
                if (p > 0 && t2 - t1 < best) best = t2 - t1;
                if (p > 0 && t1 - t0 < best_read) best_read = t1 - t0;
            }
            double bytes = (double)mats * per * 2, flops = 2.0 * mats * per * n;
            printf("%s %d %.3f %.2f %.2f %.1f\n", isas[k], n, best * 1e3, bytes / best / 1e9,
                   bytes / best_read / 1e9, flops / best / 1e9);
            fflush(stdout);
            b->release(b, out);
        }
        b->destroy(b);
    }
    fprintf(stderr, "bench_matmul: read checksum %lu\n", checksum);
    for (int m = 0; m < mats; m++)
        free((void *)w[m].data);
    free(w);
    free(x);
    return 0;
}
