/* membw.c: this machine's memory read bandwidth, the denominator of the engine's bandwidth floor.
 *
 * Decoding one token of a single stream reads every weight once, so no CPU decoder can beat
 * (measured read bandwidth) / (bytes read per token) tokens/s. This measures the first number
 * the way the decoder reads: all threads streaming through one large array, each over its own
 * contiguous slice (first touched by the same thread, so pages sit near it), summing floats. The
 * array is far larger than any cache; the best of several passes is kept (the least disturbed).
 *
 *   membw [MIB [PASSES]]     default 1024 MiB, 10 passes; threads from OMP_NUM_THREADS
 *
 * Prints a human line on stderr and, last on stdout, {"read_gbps": ..., "mib": ..., ...}. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

static long arg_long(const char *s, const char *what, long min) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || end == s || v < min) {
        fprintf(stderr, "membw: %s must be an integer >= %ld, got \"%s\"\n", what, min, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    util_progname = "membw";
    long mib = argc > 1 ? arg_long(argv[1], "MIB", 16) : 1024;
    long passes = argc > 2 ? arg_long(argv[2], "PASSES", 1) : 10;
    size_t n = (size_t)mib << 20 >> 2; /* floats */
    float *a = xmalloc(n * sizeof *a);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        a[i] = (float)(i & 7) * 0.125f;

    double best = 1e30, sum_all = 0;
    for (long p = 0; p < passes; p++) {
        double t0 = now_seconds(), s = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : s)
        for (size_t i = 0; i < n; i++)
            s += a[i];
        double dt = now_seconds() - t0;
        if (dt < best) best = dt;
        sum_all += s; /* keeps the sums alive */
    }
    double gbps = (double)n * sizeof *a / best / 1e9;
    int threads = omp_get_max_threads();
    fprintf(stderr,
            "membw: read %.2f GB/s (best of %ld passes over %ld MiB, %d threads; check %g)\n", gbps,
            passes, mib, threads, sum_all);
    printf("{\"read_gbps\":%.3f,\"mib\":%ld,\"passes\":%ld,\"threads\":%d}\n", gbps, mib, passes,
           threads);
    free(a);
    return 0;
}
