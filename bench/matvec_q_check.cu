/* matvec_q_check: checks and times kernels/matvec_q.cu (k_matvec_q) on Gemma 4 E4B's decode
 * shapes, int4 with groups of 32, 64 and 128 and int8 with groups of 128, n = 1 .. 9 inputs;
 * int4 twice, on the tensor cores (tc, matvec_q_mma.cu) and on the CUDA cores (cc).
 *
 * For every shape and format: random weights, scales and inputs; the n = 1 outputs of each input
 * against a CPU double-precision reference (|y - ref| <= 1e-4 * sum_c |w x|); the outputs of every
 * launch of n = 2 .. 9 inputs against the n = 1 outputs, bit for bit; then the time of a launch at
 * n = 1, 2, 4 and 8 (cudaEvents over many launches, programmatic dependent launch on as in the
 * backend, rotating through enough copies of the matrix to exceed twice the L2 size, so that the
 * weights come from DRAM), the bytes it moves (weights + scales + x + y), GB/s and the share of
 * the device-to-device cudaMemcpy bandwidth measured here (bytes read + written a second).
 * And the dequantizations of a prefill chunk's product: k_dequant_q_bf16x2, the weights as bf16
 * hi + lo (hi + lo must be q * s bit for bit, hi the top 16 bits of q * s), and at int4
 * k_dequant_q4_f16, one fp16 matrix of q * s 2^e with quant_f16_exponent's e (each value must be
 * q * s 2^e bit for bit); then their time and GB/s (the weights and scales read, 4 or 2 bytes a
 * weight written).
 *
 *   matvec_q_check              everything above; prints PASS or FAIL last
 *   matvec_q_check --sanitize   small shapes, checks only (for compute-sanitizer)
 *   matvec_q_check --sweep [SHAPE]  also times every form (rows a warp, warps a block, row
 *                               sets a block, x staged or read through L1) for int4 g32 and
 *                               int8 g128; with SHAPE (q, k/v, o, gate/up, down, head, keepset)
 *                               that shape alone, checked and timed
 *   matvec_q_check --nopdl      times without programmatic dependent launch
 *   matvec_q_check --one S F N  five launches of shape S, format F (indices), n inputs, unchecked
 *                               (--one-tc: int4 on the tensor cores)
 *
 * Build (from the repository root):
 *   nvcc -O3 -std=c++17 -arch=sm_90 -Xcompiler=-Wall,-Wextra,-fopenmp -Werror=all-warnings
 *        -Ikernels -Iengine -Icommon bench/matvec_q_check.cu kernels/matvec_q.cu
 *        kernels/matvec_q_mma.cu kernels/kcommon.cu engine/quant.c common/util.c -o matvec_q_check
 *        -lgomp
 * (CMake builds it with the rest on a CUDA build.) */
#include <cuda_runtime.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_check.cuh"
#include "kernels.h"
#include "matvec_q.h"
extern "C" {
#include "float16.h"
#include "quant.h"
}

struct shape {
    const char *name;
    int rows, cols;
};

struct format {
    int dtype, group;
};

/* q[r][c] of the matvec_q.h layout. */
static int weight_at(const uint8_t *q, int dtype, size_t row_bytes, int r, int c) {
    const uint8_t *p = q + (size_t)r * row_bytes;
    if (dtype == KQ_INT8) return (int8_t)p[c];
    const int b = p[c / 2];
    return ((c & 1) ? b >> 4 : b & 15) - 8;
}

struct problem {
    shape sh;
    format f;
    size_t qbytes, sbytes, row_bytes;
    uint8_t *hq;
    uint16_t *hs;
    float *hx;
    void *dq;
    uint16_t *ds;
    float *dx, *dy1, *dyn;
};

static void make(problem *p, shape sh, format f, uint64_t seed) {
    p->sh = sh;
    p->f = f;
    p->row_bytes = (size_t)sh.cols * f.dtype / 8;
    p->qbytes = p->row_bytes * sh.rows;
    p->sbytes = (size_t)sh.rows * (sh.cols / f.group) * 2;
    p->hq = (uint8_t *)malloc(p->qbytes);
    p->hs = (uint16_t *)malloc(p->sbytes);
    p->hx = (float *)malloc((size_t)K_MATVEC_Q_MAX_N * sh.cols * 4);
    const size_t words = p->qbytes / 8, ns = p->sbytes / 2;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < words; i++) {
        const uint64_t v = mix(seed * 31 + i);
        memcpy(p->hq + 8 * i, &v, 8);
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < ns; i++) {
        const float u = uniform(seed + 1, i);
        p->hs[i] = f32_to_bf16((u < 0 ? -1.0f : 1.0f) * (0.002f + 0.02f * fabsf(u)));
    }
    for (size_t i = 0; i < (size_t)K_MATVEC_Q_MAX_N * sh.cols; i++)
        p->hx[i] = uniform(seed + 2, i);
    CK(cudaMalloc(&p->dq, p->qbytes));
    CK(cudaMalloc(&p->ds, p->sbytes));
    CK(cudaMalloc(&p->dx, (size_t)K_MATVEC_Q_MAX_N * sh.cols * 4));
    CK(cudaMalloc(&p->dy1, (size_t)K_MATVEC_Q_MAX_N * sh.rows * 4));
    CK(cudaMalloc(&p->dyn, (size_t)K_MATVEC_Q_MAX_N * sh.rows * 4));
    CK(cudaMemcpy(p->dq, p->hq, p->qbytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p->ds, p->hs, p->sbytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p->dx, p->hx, (size_t)K_MATVEC_Q_MAX_N * sh.cols * 4, cudaMemcpyHostToDevice));
}

static void drop(problem *p) {
    free(p->hq);
    free(p->hs);
    free(p->hx);
    CK(cudaFree(p->dq));
    CK(cudaFree(p->ds));
    CK(cudaFree(p->dx));
    CK(cudaFree(p->dy1));
    CK(cudaFree(p->dyn));
}

static k_qmat qmat(const problem *p, const void *q, const uint16_t *s) {
    k_qmat m;
    m.dtype = p->f.dtype;
    m.rows = p->sh.rows;
    m.cols = p->sh.cols;
    m.group = p->f.group;
    m.q = q;
    m.scales = s;
    return m;
}

/* The checks of one problem; returns the failures. */
static int check(problem *p, double *worst_rel) {
    const int rows = p->sh.rows, cols = p->sh.cols, N = K_MATVEC_Q_MAX_N;
    const k_qmat m = qmat(p, p->dq, p->ds);
    int fails = 0;
    /* n = 1, each input alone (over NaNs: a row left unwritten fails the reference) */
    CK(cudaMemset(p->dy1, 0xFF, (size_t)N * rows * 4));
    for (int t = 0; t < N; t++)
        if (k_matvec_q(0, &m, p->dx + (size_t)t * cols, p->dy1 + (size_t)t * rows, 1)) {
            printf("  k_matvec_q refused n = 1\n");
            return 1;
        }
    CK(cudaDeviceSynchronize());
    float *y1 = (float *)malloc((size_t)N * rows * 4), *yn = (float *)malloc((size_t)N * rows * 4);
    CK(cudaMemcpy(y1, p->dy1, (size_t)N * rows * 4, cudaMemcpyDeviceToHost));
    /* n = 2 .. 9 against n = 1, bit for bit */
    for (int n = 2; n <= N; n++) {
        CK(cudaMemset(p->dyn, 0xFF, (size_t)N * rows * 4));
        if (k_matvec_q(0, &m, p->dx, p->dyn, n)) {
            printf("  k_matvec_q refused n = %d\n", n);
            fails++;
            continue;
        }
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(yn, p->dyn, (size_t)n * rows * 4, cudaMemcpyDeviceToHost));
        if (memcmp(yn, y1, (size_t)n * rows * 4)) {
            long bad = 0, first = -1;
            for (long i = 0; i < (long)n * rows; i++)
                if (memcmp(yn + i, y1 + i, 4)) {
                    if (first < 0) first = i;
                    bad++;
                }
            printf("  n = %d: %ld outputs differ from n = 1 (first: input %ld row %ld: %.9g vs "
                   "%.9g)\n",
                   n, bad, first / rows, first % rows, yn[first], y1[first]);
            fails++;
        }
    }
    /* n = 1 against the double-precision reference */
    long bad = 0;
    double worst = 0.0;
    const int ng = cols / p->f.group;
#pragma omp parallel reduction(+ : bad) reduction(max : worst)
    {
        double *w = (double *)malloc((size_t)cols * sizeof(double));
#pragma omp for schedule(dynamic, 64)
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++)
                w[c] = (double)weight_at(p->hq, p->f.dtype, p->row_bytes, r, c) *
                       bf16_to_f32(p->hs[(size_t)r * ng + c / p->f.group]);
            for (int t = 0; t < N; t++) {
                const float *x = p->hx + (size_t)t * cols;
                double s = 0.0, a = 0.0;
                for (int c = 0; c < cols; c++) {
                    s += w[c] * x[c];
                    a += fabs(w[c] * x[c]);
                }
                const double err = fabs((double)y1[(size_t)t * rows + r] - s);
                const double rel = a > 0 ? err / a : err;
                if (!(err <= 1e-4 * a + 1e-30)) bad++;
                if (rel > worst || rel != rel) worst = rel != rel ? INFINITY : rel;
            }
        }
        free(w);
    }
    if (bad) {
        printf("  %ld outputs off the reference by more than 1e-4 of sum |w x|\n", bad);
        fails++;
    }
    *worst_rel = worst;
    free(y1);
    free(yn);
    return fails;
}

/* k_dequant_q_bf16x2 against q * s in fp32 (exact): hi + lo equal to it (a zero's sign aside:
 * q = 0 with a negative scale is -0, whose hi + lo is +0), hi its top 16 bits. Returns the
 * failures. */
static int check_dequant(const problem *p, uint16_t *dout) {
    const int rows = p->sh.rows, cols = p->sh.cols, ng = cols / p->f.group;
    const size_t nw = (size_t)rows * cols;
    const k_qmat m = qmat(p, p->dq, p->ds);
    if (k_dequant_q_bf16x2(0, &m, dout)) {
        printf("  k_dequant_q_bf16x2 refused the matrix\n");
        return 1;
    }
    CK(cudaDeviceSynchronize());
    uint16_t *h = (uint16_t *)malloc(2 * nw * sizeof(uint16_t));
    CK(cudaMemcpy(h, dout, 2 * nw * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    long bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const size_t i = (size_t)r * cols + c;
            const float w = (float)weight_at(p->hq, p->f.dtype, p->row_bytes, r, c) *
                            bf16_to_f32(p->hs[(size_t)r * ng + c / p->f.group]);
            const float sum = bf16_to_f32(h[i]) + bf16_to_f32(h[nw + i]);
            uint32_t u;
            memcpy(&u, &w, 4);
            if (!(sum == w) || h[i] != (uint16_t)(u >> 16)) bad++; /* == : -0 + 0 is 0 */
        }
    free(h);
    if (bad) printf("  dequant: %ld weights where hi + lo is not q * s\n", bad);
    return bad != 0;
}

/* The int4 matrix's quant_f16_exponent (through a quant_matrix view of the host copy), or
 * INT32_MIN when it has none. */
static int f16_exponent(const problem *p) {
    quant_matrix qm = {QUANT_INT4, p->sh.rows, p->sh.cols, p->f.group, p->row_bytes, p->hq, p->hs};
    int e;
    return quant_f16_exponent(&qm, &e) ? INT32_MIN : e;
}

/* k_dequant_q4_f16 against q * s 2^e in fp32 (exact): every value its bits (-0 as +0, as
 * check_dequant). Returns the failures. */
static int check_dequant_f16(const problem *p, int e, uint16_t *dout) {
    const int rows = p->sh.rows, cols = p->sh.cols, ng = cols / p->f.group;
    const size_t nw = (size_t)rows * cols;
    const k_qmat m = qmat(p, p->dq, p->ds);
    if (e == INT32_MIN || k_dequant_q4_f16(0, &m, e, dout)) {
        printf("  no fp16 exponent, or k_dequant_q4_f16 refused the matrix\n");
        return 1;
    }
    CK(cudaDeviceSynchronize());
    uint16_t *h = (uint16_t *)malloc(nw * sizeof(uint16_t));
    CK(cudaMemcpy(h, dout, nw * sizeof(uint16_t), cudaMemcpyDeviceToHost));
    long bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            const size_t i = (size_t)r * cols + c;
            const float w = ldexpf((float)weight_at(p->hq, p->f.dtype, p->row_bytes, r, c) *
                                       bf16_to_f32(p->hs[(size_t)r * ng + c / p->f.group]),
                                   e);
            if (!(f16_to_f32(h[i]) == w)) bad++;
        }
    free(h);
    if (bad) printf("  dequant: %ld weights where the fp16 value is not q * s 2^%d\n", bad, e);
    return bad != 0;
}

/* Microseconds a dequantization launch (after a warm-up), into dout: k_dequant_q_bf16x2, or
 * k_dequant_q4_f16 with exponent e when f16. */
static double time_dequant(const problem *p, uint16_t *dout, int f16, int e) {
    const k_qmat m = qmat(p, p->dq, p->ds);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int reps = 20;
    for (int i = -1; i < reps; i++) {
        if (i == 0) CK(cudaEventRecord(e0));
        if (f16)
            k_dequant_q4_f16(0, &m, e, dout);
        else
            k_dequant_q_bf16x2(0, &m, dout);
    }
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms * 1e3 / reps;
}

/* Copies of the matrix, to rotate through: more bytes than twice the L2. */
struct pool {
    uint8_t *q;
    uint8_t *s;
    size_t qstride, sstride;
    int copies;
};

static pool make_pool(const problem *p, size_t l2) {
    pool o;
    o.qstride = (p->qbytes + 255) & ~(size_t)255;
    o.sstride = (p->sbytes + 255) & ~(size_t)255;
    const size_t per = o.qstride + o.sstride;
    o.copies = (int)((2 * l2 + per - 1) / per) + 1;
    if (o.copies < 2) o.copies = 2;
    if ((size_t)o.copies * per < 2 * l2 + per) o.copies++;
    CK(cudaMalloc(&o.q, o.qstride * o.copies));
    CK(cudaMalloc(&o.s, o.sstride * o.copies));
    for (int i = 0; i < o.copies; i++) {
        CK(cudaMemcpy(o.q + o.qstride * i, p->dq, p->qbytes, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy(o.s + o.sstride * i, p->ds, p->sbytes, cudaMemcpyDeviceToDevice));
    }
    return o;
}

static void drop_pool(pool *o) {
    CK(cudaFree(o->q));
    CK(cudaFree(o->s));
}

static double moved(const problem *p, int n) {
    return (double)p->qbytes + p->sbytes + 4.0 * n * (p->sh.cols + p->sh.rows);
}

/* Microseconds a launch of n inputs, rotating through the pool. */
static double time_launch(const problem *p, const pool *o, int n) {
    const double bytes = moved(p, n);
    int reps = (int)(4e9 / bytes);
    if (reps < 3 * o->copies) reps = 3 * o->copies;
    if (reps < 30) reps = 30;
    if (reps > 4000) reps = 4000;
    k_qmat *ms = (k_qmat *)malloc(sizeof(k_qmat) * o->copies);
    for (int i = 0; i < o->copies; i++)
        ms[i] = qmat(p, o->q + o->qstride * i, (const uint16_t *)(o->s + o->sstride * i));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < o->copies; i++)
        k_matvec_q(0, &ms[i], p->dx, p->dyn, n);
    CK(cudaEventRecord(e0));
    for (int i = 0; i < reps; i++)
        k_matvec_q(0, &ms[i % o->copies], p->dx, p->dyn, n);
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms_total;
    CK(cudaEventElapsedTime(&ms_total, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    free(ms);
    return ms_total * 1e3 / reps;
}

static const char *fmt_name(format f) {
    static char b[32];
    snprintf(b, sizeof b, "int%d g%d", f.dtype, f.group);
    return b;
}

int main(int argc, char **argv) {
    int sanitize = 0, sweep = 0, pdl = 1, one = -1, one_f = 0, one_n = 1;
    const char *only = NULL; /* --sweep SHAPE */
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "--one") || !strcmp(argv[i], "--one-tc")) && i + 3 < argc) {
            /* profiling: shape, format, n; --one-tc: int4 on the tensor cores */
            if (!strcmp(argv[i], "--one-tc")) k_matvec_q_set_mma(1);
            one = atoi(argv[i + 1]);
            one_f = atoi(argv[i + 2]);
            one_n = atoi(argv[i + 3]);
            i += 3;
        } else if (!strcmp(argv[i], "--sanitize"))
            sanitize = 1;
        else if (!strcmp(argv[i], "--sweep")) {
            sweep = 1;
            if (i + 1 < argc && argv[i + 1][0] != '-') only = argv[++i];
        } else if (!strcmp(argv[i], "--nopdl"))
            pdl = 0;
        else {
            fprintf(stderr,
                    "usage: %s [--sanitize] [--sweep [SHAPE]] [--nopdl] [--one|--one-tc S F N]\n",
                    argv[0]);
            return 2;
        }
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d multiprocessors, L2 %d MiB, sm_%d%d\n", prop.name,
           prop.multiProcessorCount, prop.l2CacheSize >> 20, prop.major, prop.minor);
    k_set_pdl(pdl && prop.major >= 9);

    const shape full[] = {{"q", 2048, 2560},        {"k/v", 512, 2560},    {"o", 2560, 2048},
                          {"gate/up", 10240, 2560}, {"down", 2560, 10240}, {"head", 262144, 2560},
                          {"keepset", 12000, 2560}};
    const shape small[] = {{"s64x256", 64, 256},
                           {"s40x384", 40, 384},
                           {"s3x128", 3, 128},
                           {"s300x1152", 300, 1152},
                           {"s45x2048", 45, 2048}};
    const format fmts[] = {{KQ_INT4, 32}, {KQ_INT4, 64}, {KQ_INT4, 128}, {KQ_INT8, 128}};
    const shape *shapes = sanitize ? small : full;
    const int n_shapes = sanitize ? 5 : 7;
    const int n_fmts = 4;

    if (one >= 0) { /* a few launches of one problem, nothing checked (for a profiler) */
        problem p;
        make(&p, full[one % 7], fmts[one_f % 4], 1);
        const k_qmat m = qmat(&p, p.dq, p.ds);
        for (int i = 0; i < 5; i++)
            k_matvec_q(0, &m, p.dx, p.dyn, one_n);
        CK(cudaDeviceSynchronize());
        drop(&p);
        return 0;
    }
    int fails = 0;
    /* refusals */
    {
        k_qmat m = {KQ_INT4, 8, 200, 32, (const void *)16, (const uint16_t *)16};
        const float *x = (const float *)16;
        float *y = (float *)16;
        if (k_matvec_q(0, &m, x, y, 1) != -1) {
            printf("cols 200 was not refused\n");
            fails++;
        }
        m.cols = 256;
        m.group = 16;
        if (k_matvec_q(0, &m, x, y, 1) != -1) {
            printf("group 16 was not refused\n");
            fails++;
        }
        m.group = 32;
        m.q = (const void *)8;
        if (k_matvec_q(0, &m, x, y, 1) != -1) {
            printf("unaligned weights were not refused\n");
            fails++;
        }
    }
    double copy_gbs = 0.0;
    if (!sanitize) {
        copy_gbs = copy_bandwidth();
        printf("cudaMemcpy device to device: %.0f GB/s (read + write)\n", copy_gbs);
        printf("timing: programmatic dependent launch %s\n\n", pdl ? "on" : "off");
        printf("%-8s %-10s %2s %9s %11s %8s %7s %9s %s\n", "shape", "format", "n", "us", "bytes",
               "GB/s", "%copy", "x n=1 t", "check");
    }
    int matched = 0;
    for (int si = 0; si < n_shapes; si++)
        for (int fi = 0; fi < n_fmts; fi++) {
            const int swept = fi == 0 || fi == 3; /* int4 g32 and int8 g128: what --sweep times */
            if (only && (strcmp(only, shapes[si].name) || !swept)) continue;
            matched = 1;
            problem p;
            make(&p, shapes[si], fmts[fi], 1000 * si + fi + 1);
            uint16_t *dout;
            CK(cudaMalloc(&dout, 4 * (size_t)shapes[si].rows * shapes[si].cols));
            int fd = check_dequant(&p, dout);
            const int e = p.f.dtype == KQ_INT4 ? f16_exponent(&p) : INT32_MIN;
            if (p.f.dtype == KQ_INT4) fd += check_dequant_f16(&p, e, dout);
            fails += fd;
            if (!sanitize)
                for (int f16 = 0; f16 <= (p.f.dtype == KQ_INT4); f16++) {
                    const double us = time_dequant(&p, dout, f16, e),
                                 bytes = (double)p.qbytes + p.sbytes +
                                         (f16 ? 2.0 : 4.0) * shapes[si].rows * shapes[si].cols;
                    printf(
                        "%-8s %-10s dequant to %-12s %9.2f us %11.0f bytes %8.0f GB/s %6.1f%% %s\n",
                        shapes[si].name, fmt_name(fmts[fi]), f16 ? "fp16" : "bf16 hi + lo", us,
                        bytes, bytes / us / 1e3, 100.0 * bytes / us / 1e3 / copy_gbs,
                        fd ? "FAIL" : "ok");
                }
            CK(cudaFree(dout));
            const int ns[] = {1, 2, 4, 8};
            pool o = {};
            if (!sanitize) o = make_pool(&p, (size_t)prop.l2CacheSize);
            /* int4: on the tensor cores, then on the CUDA cores */
            for (int tc = p.f.dtype == KQ_INT4; tc >= 0; tc--) {
                k_matvec_q_set_mma(tc);
                const char *kn = p.f.dtype != KQ_INT4 ? "" : tc ? " tc" : " cc";
                double worst = 0.0;
                const int f = check(&p, &worst);
                fails += f;
                char verdict[64];
                snprintf(verdict, sizeof verdict, "%s (worst rel err %.1e)", f ? "FAIL" : "ok",
                         worst);
                if (sanitize) {
                    printf("%-10s %-10s%s %s, dequant %s\n", shapes[si].name, fmt_name(fmts[fi]),
                           kn, verdict, fd ? "FAIL" : "ok");
                    continue;
                }
                double t1 = 0.0;
                for (int ni = 0; ni < 4; ni++) {
                    const int n = ns[ni];
                    const double us = time_launch(&p, &o, n), gbs = moved(&p, n) / us / 1e3;
                    if (n == 1) t1 = us;
                    printf("%-8s %-10s%s %2d %9.2f %11.0f %8.0f %6.1f%% %9.2f %s\n",
                           shapes[si].name, fmt_name(fmts[fi]), kn, n, us, moved(&p, n), gbs,
                           100.0 * gbs / copy_gbs, us / t1, n == 1 ? verdict : "");
                }
            }
            if (sanitize) {
                drop(&p);
                continue;
            }
            if (sweep && swept) {
                const int Rs[] = {1, 2, 4}, wbs[] = {2, 4, 8}, sets[] = {1, 2, 4};
                for (int ni = 0; ni < 4; ni++) {
                    const int n = ns[ni];
                    double best = 1e30;
                    int bR = 0, bW = 0, bS = 0, bX = 0;
                    const double def = time_launch(&p, &o, n);
                    for (int st = 1; st <= 2; st++)
                        for (int a = 0; a < 3; a++)
                            for (int b = 0; b < 3; b++)
                                for (int c = 0; c < 3; c++) {
                                    if (Rs[a] * n > 32) continue;
                                    k_matvec_q_set_form(Rs[a], wbs[b], sets[c], st);
                                    const double us = time_launch(&p, &o, n);
                                    printf("    sweep %-8s %-10s n=%d R=%d wb=%d sets=%d stage=%d "
                                           "%9.2f us\n",
                                           shapes[si].name, fmt_name(fmts[fi]), n, Rs[a], wbs[b],
                                           sets[c], st, us);
                                    if (us < best) {
                                        best = us;
                                        bR = Rs[a];
                                        bW = wbs[b];
                                        bS = sets[c];
                                        bX = st;
                                    }
                                }
                    k_matvec_q_set_form(0, 0, 0, 0);
                    printf("  best %-8s %-10s n=%d: R=%d wb=%d sets=%d stage=%d %.2f us (default "
                           "%.2f)\n",
                           shapes[si].name, fmt_name(fmts[fi]), n, bR, bW, bS, bX, best, def);
                }
            }
            drop_pool(&o);
            drop(&p);
        }
    if (only && !matched) {
        fprintf(stderr, "matvec_q_check: no shape named '%s'\n", only);
        return 2;
    }
    printf("\n%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
