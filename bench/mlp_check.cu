/* mlp_check: checks and times the whole-MLP kernel (kernels/mlp.cu, k_mlp on the CUDA cores) on
 * Gemma 4 E4B's MLP (H 2560, I 10240), with bf16, int8 (groups 32 and 128) and int4 (groups 32
 * and 128) weights, for n = 1 .. 8 inputs.
 *
 * For every kind of weights: random weights (quantized by engine/quant.c, down transposed by
 * quant_transpose as the backend uploads it) and inputs; each input's n = 1 output and h against
 * a CPU double-precision reference from the same dequantized weights (worst error over the
 * largest magnitude, at most 1e-4); the outputs and h of launches of n = 2 .. 8 against n = 1,
 * bit for bit (a verify pass reproduces its decode steps); then the time of a launch at n = 1, 2,
 * 4 and 8 (cudaEvents over many launches, programmatic dependent launch on as in the backend,
 * rotating through copies of the weights that exceed twice the L2, so they come from DRAM), the
 * bytes it moves (weights and scales; x, h, u, the partials and the output), GB/s, the share of
 * the device-to-device copy bandwidth, and the time of the launches the backend runs without it
 * (GEMMA_CUDA_MLP=0: gate and up in one product launch, GELU times up, down), with the ratio.
 *
 *   mlp_check              everything above; prints PASS or FAIL last
 *   mlp_check --sanitize   H 1024, int8 and int4 g32, n 1, 2, 3, 6, checks only (for
 *                          compute-sanitizer; 80 indices a block, 240 rows in stages of
 *                          2 or 4, so that the rings of 48 stages wrap)
 *
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

#define NMAX 8

struct kind {
    int bits, group; /* 16 (bf16), 8, 4; group for 8 / 4 */
};

/* One matrix on the host: its dequantized values (for the reference) and its device layout. */
struct mat {
    int rows, cols;
    float *w;              /* [rows][cols] dequantized */
    uint8_t *bytes;        /* the device copy's bytes: values then scales */
    size_t vbytes, sbytes; /* of values, of scales */
};

/* A [rows][cols] matrix of random weights of kind k (fp32 values in [-0.05, 0.05) rounded to
 * bf16, or quantized), as the backend holds it: as it is, or transposed (down). */
static mat make_mat(int rows, int cols, kind k, uint64_t seed, int transposed) {
    mat m = {rows, cols, NULL, NULL, 0, 0};
    const size_t n = (size_t)rows * cols;
    float *f = (float *)malloc(n * sizeof(float));
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        f[i] = bf16_to_f32(f32_to_bf16(0.05f * uniform(seed, i)));
    m.w = (float *)malloc(n * sizeof(float));
    if (k.bits == 16) {
        memcpy(m.w, f, n * sizeof(float));
        m.vbytes = n * 2;
        m.bytes = (uint8_t *)malloc(m.vbytes);
        uint16_t *b = (uint16_t *)m.bytes;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) { /* [rows][cols], or [cols][rows] */
            const size_t r = i / cols, c = i % cols;
            b[transposed ? c * rows + r : i] = f32_to_bf16(f[i]);
        }
    } else {
        quant_matrix q;
        char err[256];
        if (quant_from_f32(&q, "w", f, rows, cols, k.bits == 8 ? QUANT_INT8 : QUANT_INT4, k.group,
                           err, sizeof err)) {
            fprintf(stderr, "mlp_check: %s\n", err);
            exit(2);
        }
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; r++)
            quant_dequant_row(&q, r, m.w + (size_t)r * cols);
        m.vbytes = (size_t)rows * q.row_bytes;
        m.sbytes = (size_t)rows * (cols / k.group) * 2;
        m.bytes = (uint8_t *)malloc(m.vbytes + m.sbytes);
        if (transposed) {
            quant_transpose(&q, m.bytes, (uint16_t *)(m.bytes + m.vbytes));
        } else {
            memcpy(m.bytes, q.q, m.vbytes);
            memcpy(m.bytes + m.vbytes, q.scales, m.sbytes);
        }
        quant_free(&q);
    }
    free(f);
    return m;
}

/* The device copies of one MLP's weights: copy i of `copies` at base + i * stride. */
struct mlp_dev {
    uint8_t *base;
    size_t stride, off[3], vbytes[3]; /* gate, up, down_t: offset and values' bytes in a copy */
    int copies;
};

static mlp_dev upload(const mat *m, int copies) {
    mlp_dev d;
    size_t o = 0;
    for (int i = 0; i < 3; i++) {
        d.off[i] = o;
        d.vbytes[i] = m[i].vbytes;
        o += (m[i].vbytes + m[i].sbytes + 255) & ~(size_t)255;
    }
    d.stride = o;
    d.copies = copies;
    CK(cudaMalloc(&d.base, d.stride * copies));
    for (int c = 0; c < copies; c++)
        for (int i = 0; i < 3; i++)
            CK(cudaMemcpy(d.base + c * d.stride + d.off[i], m[i].bytes, m[i].vbytes + m[i].sbytes,
                          cudaMemcpyHostToDevice));
    return d;
}

static k_mlp_weights weights_of(const mlp_dev *d, int c, kind k) {
    const uint8_t *b = d->base + c * d->stride;
    k_mlp_weights w;
    w.bits = k.bits;
    w.group = k.group;
    w.gate = b + d->off[0];
    w.up = b + d->off[1];
    w.down_t = b + d->off[2];
    const int q = k.bits < 16;
    w.gate_scales = q ? (const uint16_t *)(b + d->off[0] + d->vbytes[0]) : NULL;
    w.up_scales = q ? (const uint16_t *)(b + d->off[1] + d->vbytes[1]) : NULL;
    w.down_t_scales = q ? (const uint16_t *)(b + d->off[2] + d->vbytes[2]) : NULL;
    return w;
}

/* Device buffers of the activations, for NMAX inputs. */
struct acts {
    float *x, *h, *u, *out, *part, *h1, *out1;
};

static double gelu_tanh_d(double g) {
    return 0.5 * g * (1.0 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
}

/* The reference for input x: h[I] and out[H] in double. */
static void reference(const mat *m, const float *x, double *h, double *out) {
    const int H = m[0].cols, I = m[0].rows;
#pragma omp parallel for schedule(static)
    for (int k = 0; k < I; k++) {
        double g = 0, u = 0;
        for (int c = 0; c < H; c++)
            g += (double)m[0].w[(size_t)k * H + c] * x[c],
                u += (double)m[1].w[(size_t)k * H + c] * x[c];
        h[k] = gelu_tanh_d(g) * u;
    }
#pragma omp parallel for schedule(static)
    for (int r = 0; r < H; r++) {
        double o = 0;
        for (int k = 0; k < I; k++)
            o += (double)m[2].w[(size_t)r * I + k] * h[k];
        out[r] = o;
    }
}

/* Worst |got - want| over the largest |want|. */
static double rel_err(const float *got, const double *want, size_t n) {
    double e = 0, big = 0;
    for (size_t i = 0; i < n; i++) {
        e = fmax(e, fabs(got[i] - want[i]));
        big = fmax(big, fabs(want[i]));
    }
    return big > 0 ? e / big : e;
}

/* The checks of one kind; returns the failures. */
static int check(const mat *m, const mlp_dev *d, kind k, const acts *a, const int *ns, int nn) {
    const int H = m[0].cols, I = m[0].rows;
    const k_mlp_weights w = weights_of(d, 0, k);
    int fails = 0;
    float *hx = (float *)malloc(sizeof(float) * NMAX * H);
    CK(cudaMemcpy(hx, a->x, sizeof(float) * NMAX * H, cudaMemcpyDeviceToHost));
    /* n = 1, each input alone (over NaNs: anything left unwritten fails) */
    CK(cudaMemset(a->out1, 0xFF, sizeof(float) * NMAX * H));
    CK(cudaMemset(a->h1, 0xFF, sizeof(float) * NMAX * I));
    for (int t = 0; t < NMAX; t++)
        k_mlp(0, a->out1 + (size_t)t * H, a->h1 + (size_t)t * I, a->u, a->x + (size_t)t * H, &w,
              a->part, H, I, 1, K_MLP_CORES);
    CK(cudaDeviceSynchronize());
    float *o1 = (float *)malloc(sizeof(float) * NMAX * H),
          *h1 = (float *)malloc(sizeof(float) * NMAX * I);
    float *on = (float *)malloc(sizeof(float) * NMAX * H),
          *hn = (float *)malloc(sizeof(float) * NMAX * I);
    CK(cudaMemcpy(o1, a->out1, sizeof(float) * NMAX * H, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h1, a->h1, sizeof(float) * NMAX * I, cudaMemcpyDeviceToHost));
    double *rh = (double *)malloc(sizeof(double) * I), *ro = (double *)malloc(sizeof(double) * H);
    double worst_o = 0, worst_h = 0;
    for (int t = 0; t < NMAX; t++) {
        reference(m, hx + (size_t)t * H, rh, ro);
        worst_o = fmax(worst_o, rel_err(o1 + (size_t)t * H, ro, H));
        worst_h = fmax(worst_h, rel_err(h1 + (size_t)t * I, rh, I));
    }
    const int ok_ref = worst_o <= 1e-4 && worst_h <= 1e-4; /* also false on a NaN */
    printf("  n = 1 against the reference: worst error %.2e (out), %.2e (h) of the largest: %s\n",
           worst_o, worst_h, ok_ref ? "ok" : "FAIL");
    fails += !ok_ref;
    for (int i = 0; i < nn; i++) { /* n inputs against n = 1, bit for bit */
        const int n = ns[i];
        if (n == 1) continue;
        CK(cudaMemset(a->out, 0xFF, sizeof(float) * NMAX * H));
        CK(cudaMemset(a->h, 0xFF, sizeof(float) * NMAX * I));
        k_mlp(0, a->out, a->h, a->u, a->x, &w, a->part, H, I, n, K_MLP_CORES);
        CK(cudaDeviceSynchronize());
        CK(cudaMemcpy(on, a->out, sizeof(float) * n * H, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(hn, a->h, sizeof(float) * n * I, cudaMemcpyDeviceToHost));
        const int same =
            !memcmp(on, o1, sizeof(float) * n * H) && !memcmp(hn, h1, sizeof(float) * n * I);
        if (!same) printf("  n = %d: not the bits of n = 1: FAIL\n", n);
        fails += !same;
    }
    free(hx), free(o1), free(h1), free(on), free(hn), free(rh), free(ro);
    return fails;
}

/* Bytes a launch of n inputs moves: the weights and scales once; x read, h and u written, the
 * partials written and read, the output written. */
static double moved(const mat *m, int n) {
    const int H = m[0].cols, I = m[0].rows;
    int sms;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    double b = 0;
    for (int i = 0; i < 3; i++)
        b += (double)m[i].vbytes + m[i].sbytes;
    return b + 4.0 * n * (H + 2.0 * I + H) + 8.0 * n * sms * H;
}

/* What GEMMA_CUDA_MLP=0 runs for one MLP of copy c (p: the weights uploaded with down in its
 * plain layout): gate and up in one launch (bf16: with the GELU product as its epilogue), GELU
 * times up (int8 / int4), down. */
static void run_plain(const mlp_dev *p, int c, const mat *m, kind k, const acts *a, int n) {
    const int H = m[0].cols, I = m[0].rows;
    const uint8_t *b = p->base + c * p->stride;
    if (k.bits == 16) {
        k_mv_seg s = {};
        s.out = a->h;
        s.w = b + p->off[0];
        s.rows = I;
        s.epilogue = K_MV_GELU_PAIR;
        s.w_up = b + p->off[1];
        s.out_up = a->u;
        k_matvec_multi(0, &s, 1, KDT_BF16, a->x, H, n);
        k_matvec(0, a->out, b + p->off[2], KDT_BF16, a->h, H, I, n);
        return;
    }
    k_qmat q[3];
    for (int i = 0; i < 3; i++) {
        q[i].dtype = k.bits == 8 ? KQ_INT8 : KQ_INT4;
        q[i].rows = m[i].rows;
        q[i].cols = m[i].cols;
        q[i].group = k.group;
        q[i].q = b + p->off[i];
        q[i].scales = (const uint16_t *)(b + p->off[i] + p->vbytes[i]);
    }
    k_qseg s[2] = {{q[0], a->h}, {q[1], a->u}};
    k_matvec_q_multi(0, s, 2, a->x, n);
    k_gelu_mul(0, a->h, a->h, a->u, n, I, I);
    k_matvec_q(0, &q[2], a->h, a->out, n);
}

/* Microseconds a launch (mlp = 1) or the plain launches (mlp = 0) of n inputs, rotating copies. */
static double time_mlp(const mlp_dev *d, const mlp_dev *p, const mat *m, kind k, const acts *a,
                       int n, int mlp) {
    const int H = m[0].cols, I = m[0].rows;
    int reps = (int)(4e9 / moved(m, n));
    reps = reps < 3 * d->copies ? 3 * d->copies : reps > 2000 ? 2000 : reps;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i <= reps; i++) {
        if (i == 1) CK(cudaEventRecord(e0)); /* the first pass warms up */
        const int c = i % d->copies;
        if (mlp) {
            const k_mlp_weights w = weights_of(d, c, k);
            k_mlp(0, a->out, a->h, a->u, a->x, &w, a->part, H, I, n, K_MLP_CORES);
        } else {
            run_plain(p, c, m, k, a, n);
        }
    }
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    CK(cudaGetLastError());
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms * 1e3 / reps;
}

int main(int argc, char **argv) {
    const int sanitize = argc > 1 && !strcmp(argv[1], "--sanitize");
    if (argc > 1 && !sanitize) {
        fprintf(stderr, "usage: mlp_check [--sanitize]\n");
        return 2;
    }
    int sms, l2;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    const int H = sanitize ? 1024 : 2560, I = sanitize ? (80 * sms + 127) / 128 * 128 : 10240;
    const kind all[] = {{16, 0}, {8, 32}, {8, 128}, {4, 32}, {4, 128}}, san[] = {{8, 32}, {4, 32}};
    const kind *kinds = sanitize ? san : all;
    const int nk = sanitize ? 2 : 5;
    const int ns_all[] = {1, 2, 3, 4, 5, 6, 7, 8}, ns_san[] = {1, 2, 3, 6};
    const int *ns = sanitize ? ns_san : ns_all, nn = sanitize ? 4 : 8;
    k_set_pdl(1);
    const double copy = sanitize ? 0 : copy_bandwidth();
    printf("mlp_check: %s, %d SMs, H %d, I %d; copy bandwidth %.0f GB/s\n", prop.name, sms, H, I,
           copy);
    acts a;
    CK(cudaMalloc(&a.x, sizeof(float) * NMAX * H));
    CK(cudaMalloc(&a.out, sizeof(float) * NMAX * H));
    CK(cudaMalloc(&a.out1, sizeof(float) * NMAX * H));
    CK(cudaMalloc(&a.h, sizeof(float) * NMAX * I));
    CK(cudaMalloc(&a.h1, sizeof(float) * NMAX * I));
    CK(cudaMalloc(&a.u, sizeof(float) * NMAX * I));
    CK(cudaMalloc(&a.part, sizeof(float) * k_mlp_partial_floats(H, K_MLP_CHUNK)));
    float *hx = (float *)malloc(sizeof(float) * NMAX * H);
    for (int i = 0; i < NMAX * H; i++)
        hx[i] = uniform(7, i);
    CK(cudaMemcpy(a.x, hx, sizeof(float) * NMAX * H, cudaMemcpyHostToDevice));
    free(hx);
    int fails = 0;
    for (int ki = 0; ki < nk; ki++) {
        const kind k = kinds[ki];
        printf("\n%s", k.bits == 16 ? "bf16\n" : "");
        if (k.bits < 16) printf("int%d g%d\n", k.bits, k.group);
        if (!k_mlp_supported(H, I, k.bits, k.group, K_MLP_CORES)) {
            printf("  the kernel does not take this shape here: FAIL\n");
            fails++;
            continue;
        }
        mat m[3] = {make_mat(I, H, k, 11 + ki, 0), make_mat(I, H, k, 12 + ki, 0),
                    make_mat(H, I, k, 13 + ki, 1)};
        double wbytes = 0;
        for (int i = 0; i < 3; i++)
            wbytes += (double)m[i].vbytes + m[i].sbytes;
        const int copies = sanitize ? 1 : (int)(2.0 * l2 / wbytes) + 2;
        mlp_dev d = upload(m, copies);
        fails += check(m, &d, k, &a, ns, nn);
        if (!sanitize) { /* down in its plain layout too, for the separate launches */
            mat plain_down = make_mat(H, I, k, 13 + ki, 0);
            mat pm[3] = {m[0], m[1], plain_down};
            mlp_dev p = upload(pm, copies);
            printf("  %2s %10s %8s %7s %12s %8s\n", "n", "us", "GB/s", "copy", "separate us",
                   "ratio");
            const int tn[] = {1, 2, 4, 8};
            for (int i = 0; i < 4; i++) {
                const double t = time_mlp(&d, &p, m, k, &a, tn[i], 1);
                const double t0 = time_mlp(&d, &p, m, k, &a, tn[i], 0);
                const double gbs = moved(m, tn[i]) / (t * 1e-6) / 1e9;
                printf("  %2d %10.1f %8.0f %6.1f%% %12.1f %7.2fx\n", tn[i], t, gbs,
                       100 * gbs / copy, t0, t0 / t);
            }
            CK(cudaFree(p.base));
            free(plain_down.w), free(plain_down.bytes);
        }
        CK(cudaFree(d.base));
        for (int i = 0; i < 3; i++)
            free(m[i].w), free(m[i].bytes);
    }
    printf("\n%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
