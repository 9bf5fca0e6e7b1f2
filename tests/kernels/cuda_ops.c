/* cuda_ops.c: the CUDA backend checked against the CPU backend (which test_backend_cpu checks
 * against a double-precision reference). Needs a GPU, so it is not a ctest test:
 * scripts/test_gpu.sh runs it on the GPU machine, also under compute-sanitizer.
 *
 *   cuda_ops ops [small]        every op of the backend table, random inputs drawn from
 *                               [-2, -0.1] U [0.1, 2] (never zeros) with a fresh seed per run
 *                               (printed; TEST_SEED=<seed> replays it), and the sequences the
 *                               backend fuses (cuda_ops_fused.h), and the matrix-vector
 *                               kernels' variants (cuda_ops_matvec.h), quantized
 *                               prefill products whose copies are made ahead or kept
 *                               (cuda_ops_dequant.h), and prefill products sharing x's
 *                               split (cuda_ops_gemm.h); "small" shrinks
 *                               the shapes for the sanitizers
 *   cuda_ops ops mlp            the whole-MLP kernels alone (both forms), small shapes: the
 *                               sanitizers' run while one of them is being changed
 *   cuda_ops model DIR...       whole models: logits of a 72-token prefill and of 24 decode
 *                               steps (eager, captured, then replayed CUDA graphs, at moving
 *                               positions) GPU vs CPU, 24 greedy tokens identical, and the
 *                               last 5 steps re-run as one chunk bit for bit (verify == decode);
 *                               WEIGHT_DTYPE / WEIGHT_GROUP in the environment (the engine's
 *                               knobs) load the models' linear layers quantized
 *   cuda_ops model-rows DIR...  the same with the products of 2 .. 8 inputs in the rows kernel
 *                               at every size (matvec_rows.cu; the engine takes it from 1 MiB
 *                               of weights, which small models' matrices do not reach)
 *   cuda_ops draft [small]      the drafter's head op (draft_head: top clusters, sparse logits,
 *                               greedy pick with planted ties) and embed_dev, against the CPU
 *                               path (also part of "ops")
 *   cuda_ops draft DIR...       the drafter on DIR with DIR-assistant: drafter_draft's device
 *                               chain (eager, captured, replayed) == its single steps exactly,
 *                               and == the CPU drafter up to rounding near-ties; and lossless
 *                               speculation (k = 1..8 serve plain greedy's tokens, full head /
 *                               keepset, native window / 24)
 *
 * The timings of the same backend are bench/decode_profile's.
 *
 * Tolerances (stated once, used everywhere). Both backends compute in fp32 from the same
 * weights; only the order of the sums differs. A dot product of c terms then differs by a few
 * ulps of sum |w_i x_i|: we allow 1e-5 * sum |w_i x_i| (fp32 eps is 6e-8, so this is ~100
 * ulps, while any wrong element or index moves the result by O(1) of that sum). Elementwise
 * ops (rope, gelu, softcap, scale, add, embed) must agree to 2e-6 relative + 1e-6 absolute
 * (libm vs CUDA's sinf/tanhf differ by <= 2 ulp); norms and attention to 1e-5 relative +
 * 1e-5 absolute. cuBLAS products of bf16 weights (and of int8 ones, as bf16 hi + lo) take x as
 * two bf16 (backend_cuda_core.c), x to 2^-17 of each |x|: RTOL_X16, the usual 1e-5 plus that.
 * int4's fp16 parts hold x to 2^-23: the usual 1e-5.
 * Whole-model logits: max |gpu - cpu| <= 2e-3 * (1 + max |cpu logit|) - rounding differences
 * grow through the layers but stay orders of magnitude below what a wrong op does (test_golden
 * shows a wrong scale or mask moves logits by >= 0.1). argmax must be exact. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assistant.h"
#include "backend.h"
#include "backend_cpu_gemm.h"
#include "backend_cuda.h"
#include "decoder.h"
#include "kernels.h"
#include "matvec_q.h"
#include "engine.h"
#include "float16.h"
#include "speculate.h"
#include "util.h"
#include "../test_util.h"
#include "../attention_ref.h"

#define RTOL_X16 (1e-5 + 0x1p-17) /* cuBLAS products of x to 2^-17: see above */

static int small_shapes;

/* ---- random tensors (the generator is test_util.h's) ---------------------------------- */

static tensor rand_tensor(int rows, int cols, weight_dtype dt) {
    size_t n = (size_t)rows * cols;
    tensor t = {.dtype = dt, .rows = rows, .cols = cols};
    if (dt == DT_F32) {
        t.data = rand_vec(n);
    } else {
        uint16_t *d = xmalloc(n * 2);
        for (size_t i = 0; i < n; i++)
            d[i] = dt == DT_BF16 ? f32_to_bf16(rng_val()) : f32_to_f16(rng_val());
        t.data = d;
    }
    return t;
}

/* ---- the two backends side by side ----------------------------------------------------- */

static backend *cpu, *gpu;

/* A buffer on each backend holding the same n values. */
typedef struct {
    float *c, *g;
    size_t n;
} pair;

static pair pair_new(const float *host, size_t n) {
    pair p = {cpu->alloc(cpu, n), gpu->alloc(gpu, n), n};
    if (host) {
        cpu->upload(cpu, p.c, host, n);
        gpu->upload(gpu, p.g, host, n);
    }
    return p;
}
static pair pair_rand(size_t n) {
    float *h = rand_vec(n);
    pair p = pair_new(h, n);
    free(h);
    return p;
}
static void pair_free(pair *p) {
    cpu->release(cpu, p->c);
    gpu->release(gpu, p->g);
}

/* Compare the GPU buffer with the CPU one: |g - c| <= atol + rtol * |c| (+ per-element scale
 * bound when scale != NULL: |g - c| <= rtol * scale[i]). Returns 1 when all agree. */
static int pair_check(const pair *p, double atol, double rtol, const double *scale,
                      const char *what) {
    float *g = xmalloc(p->n * sizeof(float));
    gpu->download(gpu, g, p->g, p->n);
    int ok = 1;
    for (size_t i = 0; i < p->n; i++) {
        double want = p->c[i], tol = scale ? atol + rtol * scale[i] : atol + rtol * fabs(want);
        if (!(fabs(g[i] - want) <= tol)) {
            fprintf(stderr, "%s: element %zu of %zu: gpu %.9g cpu %.9g (tolerance %.3g)\n", what, i,
                    p->n, g[i], want, tol);
            failures++;
            ok = 0;
            break;
        }
    }
    free(g);
    return ok;
}

/* A CUDA backend made under the switches env (n pairs of variable and value), each variable then
 * back to what the caller had (set or unset): backends read their switches once, when made. */
static backend *gpu_under(const char *const env[][2], int n) {
    char *saved[4];
    CHECK(n <= 4);
    for (int i = 0; i < n; i++) {
        const char *was = getenv(env[i][0]);
        saved[i] = was ? xstrdup(was) : NULL;
        setenv(env[i][0], env[i][1], 1);
    }
    char err[256];
    backend *b = backend_cuda_new(err, sizeof err);
    for (int i = n - 1; i >= 0; i--) {
        if (saved[i])
            setenv(env[i][0], saved[i], 1);
        else
            unsetenv(env[i][0]);
        free(saved[i]);
    }
    if (!b) die("%s", err);
    return b;
}

/* ---- ops ------------------------------------------------------------------------------ */

static void test_buffers(void) {
    size_t n = 1000 + (size_t)rng_int(5000);
    float *g = gpu->alloc(gpu, n), *h = xmalloc(n * sizeof(float));
    gpu->download(gpu, h, g, n);
    int zero = 1;
    for (size_t i = 0; i < n; i++)
        zero &= h[i] == 0.0f;
    EXPECT(zero, "alloc: buffer of %zu floats is not zero-filled", n);
    pair p = pair_rand(n);
    gpu->copy(gpu, g, p.g, n);
    gpu->download(gpu, h, g, n);
    EXPECT(!memcmp(h, p.c, n * sizeof(float)), "upload / copy / download do not round-trip");
    gpu->release(gpu, g);
    pair_free(&p);
    free(h);
}

/* sum_c |w[r][c] x[t][c]| for every output, the scale of a dot product's rounding. */
static double *dot_scale(const tensor *w, const float *x, int n) {
    double *s = xcalloc((size_t)n * w->rows, sizeof(double));
    for (int t = 0; t < n; t++)
        for (int r = 0; r < w->rows; r++) {
            double acc = 0;
            for (int c = 0; c < w->cols; c++)
                acc += fabs(tensor_get(w, (size_t)r * w->cols + c) * x[(size_t)t * w->cols + c]);
            s[(size_t)t * w->rows + r] = acc;
        }
    return s;
}

/* rtol for bf16 weights (f32 weights always get 1e-5), rtol16 for f16. */
static void test_matmul(backend *g, double rtol, double rtol16, const char *who) {
    backend *save = gpu;
    gpu = g;
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    const int ns[] = {1, 2, 5, 8, 13, 64};
    for (int di = 0; di < 3; di++)
        for (int ni = 0; ni < 6; ni++) {
            /* Aligned shapes (16-byte rows: the vector path) and odd ones (the scalar path). */
            for (int odd = 0; odd < 2; odd++) {
                int rows = small_shapes ? 8 + rng_int(40) : 100 + rng_int(900);
                int cols = small_shapes ? 64 : 256 * (1 + rng_int(10));
                if (odd) cols += 1 + rng_int(7);
                int n = ns[ni];
                if (small_shapes && n > 8) n = 9;
                tensor w = rand_tensor(rows, cols, dts[di]);
                pair x = pair_rand((size_t)n * cols), out = pair_new(NULL, (size_t)n * rows);
                cpu->matmul(cpu, out.c, &w, x.c, n);
                gpu->matmul(gpu, out.g, &w, x.g, n);
                double *scale = dot_scale(&w, x.c, n);
                char what[128];
                snprintf(what, sizeof what, "matmul %s dtype %d n %d [%d x %d]", who, dts[di], n,
                         rows, cols);
                /* f32 weights: always on our CUDA-core kernels */
                pair_check(&out, 1e-6,
                           dts[di] == DT_F32   ? 1e-5
                           : dts[di] == DT_F16 ? rtol16
                                               : rtol,
                           scale, what);
                free(scale);
                pair_free(&x);
                pair_free(&out);
                /* w stays alive: the backend keys its device copy by the host pointer. */
            }
        }
    gpu = save;
}

/* int8 / int4 weights (quant.h; on the GPU matvec_q.cu, and dequantized for cuBLAS past
 * gemm_rows inputs), every group, decode (n = 1), verify passes and a prefill-sized n, against
 * the CPU's quant_matmul: the same dequantized weights, so the usual dot-product tolerance. And
 * where our kernel runs, each input's row of a product of n inputs must be the bits of the
 * single-input product (verify == decode: speculation stays lossless). */
static void test_matmul_quant(backend *g, int own_rows, double rtol_cublas8, const char *who) {
    backend *save = gpu;
    gpu = g;
    const quant_dtype dts[] = {QUANT_INT8, QUANT_INT4};
    const int groups[] = {32, 64, 128}, ns[] = {1, 2, 5, 9, 13, 64};
    for (int di = 0; di < 2; di++)
        for (int gi = 0; gi < 3; gi++)
            for (int ni = 0; ni < 6; ni++) {
                const int rows = small_shapes ? 8 + rng_int(40) : 100 + rng_int(900);
                const int cols = 128 * (small_shapes ? 1 + rng_int(2) : 1 + rng_int(20));
                /* small shapes (the sanitizers' run) keep one product past gemm_rows, so the
                 * dequantization for cuBLAS runs under them too */
                const int n = !small_shapes ? ns[ni] : ns[ni] > 13 ? 20 : ns[ni] > 9 ? 9 : ns[ni];
                float *wf = rand_vec((size_t)rows * cols);
                quant_matrix *qm = xcalloc(1, sizeof *qm); /* stays alive: keyed by address */
                char err[256];
                CHECK(
                    !quant_from_f32(qm, "w", wf, rows, cols, dts[di], groups[gi], err, sizeof err));
                free(wf);
                const tensor w = tensor_of_quant(qm);
                pair x = pair_rand((size_t)n * cols), out = pair_new(NULL, (size_t)n * rows);
                cpu->matmul(cpu, out.c, &w, x.c, n);
                gpu->matmul(gpu, out.g, &w, x.g, n);
                double *scale = dot_scale(&w, x.c, n);
                char what[128];
                snprintf(what, sizeof what, "matmul %s %s g%d n %d [%d x %d]", who,
                         quant_dtype_name(dts[di]), groups[gi], n, rows, cols);
                /* past own_rows int8 goes to cuBLAS as bf16 hi + lo where g uses cuBLAS */
                pair_check(&out, 1e-6, n > own_rows && dts[di] == QUANT_INT8 ? rtol_cublas8 : 1e-5,
                           scale, what);
                free(scale);
                float *all = xmalloc((size_t)n * rows * sizeof(float)),
                      *one = xmalloc((size_t)rows * sizeof(float));
                gpu->download(gpu, all, out.g, (size_t)n * rows);
                pair y1 = pair_new(NULL, (size_t)rows);
                for (int t = 0; t < (n <= own_rows ? n : 0); t++) {
                    gpu->matmul(gpu, y1.g, &w, x.g + (size_t)t * cols, 1);
                    gpu->download(gpu, one, y1.g, (size_t)rows);
                    EXPECT(!memcmp(one, all + (size_t)t * rows, (size_t)rows * sizeof(float)),
                           "%s: input %d's row is not the bits of its single-input product", what,
                           t);
                }
                pair_free(&y1);
                free(all);
                free(one);
                pair_free(&x);
                pair_free(&out);
            }
    gpu = save;
}

/* k_split2_f16_rows and k_sum2_rows on their own: rows of x from fp32 subnormals to 2^121, a
 * row of zeros, one with an outlier 2^20 above the rest, one with elements 2^-4 .. 2^-48 of its
 * largest (fp16 subnormal and zero parts) just below powers of two, 1000 columns (several per
 * thread). ex[t] must be 14 - the binade of the row's largest |x| (0 for zeros), hi and lo must be
 * x' = x 2^ex[t] and x' - hi rounded to fp16, bit for bit, and hi + lo within max(2^-23 |x'|,
 * 2^-25) of x' (elementwise.cu says why). Then the sum of two chosen products scaled back by
 * 2^-(ex[t] + e) must be the host's bits. */
static void test_split2_f16(void) {
    const int n = 7, cols = 1000, rows = 5, e = 3;
    const int mag[] = {-140, 120, 0, 0, -20, 30, 0};
    float *x = rand_vec((size_t)n * cols);
    for (int t = 0; t < n; t++)
        for (int c = 0; c < cols; c++)
            x[(size_t)t * cols + c] = t == 2 ? 0.0f : ldexpf(x[(size_t)t * cols + c], mag[t]);
    x[3 * cols + 17] = ldexpf(1.5f, 20);
    for (int c = 0; c < 64; c++) /* row 6's largest is at least 0.1 (test_util.h rng_val) */
        x[6 * cols + c] =
            (c & 1 ? -1.0f : 1.0f) * ldexpf(0.99999994f - 0x1p-20f * (c % 5), -4 - (c % 12) * 4);
    const size_t nh = 2 * (size_t)n * cols; /* fp16 parts */
    float *dx = gpu->alloc(gpu, (size_t)n * cols), *dh = gpu->alloc(gpu, nh / 2 + 1),
          *dex = gpu->alloc(gpu, (size_t)n);
    gpu->upload(gpu, dx, x, (size_t)n * cols);
    k_split2_f16_rows(0, dh, (int *)dex, dx, n, cols);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    uint16_t *h = xmalloc((nh / 2 + 1) * sizeof(float));
    int ex[7];
    gpu->download(gpu, (float *)h, dh, nh / 2 + 1);
    gpu->download(gpu, (float *)ex, dex, (size_t)n);
    for (int t = 0; t < n; t++) {
        float m = 0.0f;
        for (int c = 0; c < cols; c++)
            m = fmaxf(m, fabsf(x[(size_t)t * cols + c]));
        const int want = m > 0.0f ? 14 - ilogbf(m) : 0;
        EXPECT(ex[t] == want, "split2_f16: row %d's exponent %d, expected %d", t, ex[t], want);
        long bad = 0;
        for (int c = 0; c < cols; c++) {
            const size_t i = (size_t)t * cols + c;
            const float vf = ldexpf(x[i], want), hi = f16_to_f32(h[i]);
            const uint16_t lo = h[(size_t)n * cols + i];
            const double v = vf, sum = (double)hi + f16_to_f32(lo);
            const double bound = fmax(ldexp(fabs(v), -23), ldexp(1, -25));
            bad += f32_to_f16(vf) != h[i] || f32_to_f16(vf - hi) != lo || !(fabs(sum - v) <= bound);
        }
        EXPECT(!bad,
               "split2_f16: row %d: %ld of %d elements' parts are not x 2^%d and its rest "
               "rounded to fp16, within the bound",
               t, bad, cols, want);
    }
    float *y = rand_vec(2 * (size_t)n * rows), *out = xmalloc((size_t)n * rows * sizeof(float));
    float *dy = gpu->alloc(gpu, 2 * (size_t)n * rows), *dout = gpu->alloc(gpu, (size_t)n * rows);
    gpu->upload(gpu, dy, y, 2 * (size_t)n * rows);
    k_sum2_rows(0, dout, dy, n, rows, (const int *)dex, e);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
    gpu->download(gpu, out, dout, (size_t)n * rows);
    const size_t m = (size_t)n * rows;
    for (size_t i = 0; i < m; i++) {
        const float want = ldexpf(y[i] + y[m + i], -(ex[i / rows] + e));
        EXPECT(!memcmp(&want, &out[i], 4), "sum2_rows: output %zu is %.9g, expected %.9g", i,
               (double)out[i], (double)want);
    }
    gpu->release(gpu, dx);
    gpu->release(gpu, dh);
    gpu->release(gpu, dex);
    gpu->release(gpu, dy);
    gpu->release(gpu, dout);
    free(x);
    free(h);
    free(y);
    free(out);
}

/* int4 past gemm_rows in both forms of matmul_quant: a matrix of ordinary magnitudes, whose
 * values fit fp16 once shifted (quant_f16_exponent), multiplied as one fp16 matrix, and one whose
 * rows lie 2^-16 and 2^16 (no such shift) as bf16 hi + lo; x's rows 2^-30, 1 and 2^30 apart and
 * one of zeros, which the fp16 form scales each by its own power of two. No absolute tolerance:
 * every output within 1e-5 of its dot product's magnitude (RTOL_X16 for the bf16 form: x to
 * 2^-17), and the zero row exactly zero. */
static void test_matmul_quant_ranges(backend *g) {
    backend *save = gpu;
    gpu = g;
    const int rows = 64, cols = 256, n = 20;
    for (int wide = 0; wide < 2; wide++) {
        float *wf = rand_vec((size_t)rows * cols);
        for (int r = 0; wide && r < rows; r++)
            for (int c = 0; c < cols; c++)
                wf[(size_t)r * cols + c] = ldexpf(wf[(size_t)r * cols + c], r & 1 ? 16 : -16);
        quant_matrix *qm = xcalloc(1, sizeof *qm); /* stays alive: keyed by address */
        char err[256];
        CHECK(!quant_from_f32(qm, "w", wf, rows, cols, QUANT_INT4, 32, err, sizeof err));
        free(wf);
        int e;
        EXPECT(quant_f16_exponent(qm, &e) == (wide ? -1 : 0));
        const tensor w = tensor_of_quant(qm);
        float *xh = rand_vec((size_t)n * cols);
        for (int t = 0; t < n; t++)
            for (int c = 0; c < cols; c++)
                xh[(size_t)t * cols + c] =
                    t == 5 ? 0.0f : ldexpf(xh[(size_t)t * cols + c], 30 * (t % 3 - 1));
        pair x = pair_new(xh, (size_t)n * cols), out = pair_new(NULL, (size_t)n * rows);
        free(xh);
        cpu->matmul(cpu, out.c, &w, x.c, n);
        gpu->matmul(gpu, out.g, &w, x.g, n);
        double *scale = dot_scale(&w, x.c, n);
        pair_check(&out, 0.0, wide ? RTOL_X16 : 1e-5, scale,
                   wide ? "matmul int4 n 20, rows 2^32 apart (bf16 hi + lo)"
                        : "matmul int4 n 20, x rows 2^60 apart (fp16)");
        free(scale);
        pair_free(&x);
        pair_free(&out);
    }
    gpu = save;
}

/* Weights used for the first time right after another kernel: each one's copy to the device is
 * queued between two kernels of a programmatic-dependent-launch chain, and the product after it
 * must see the whole copy and the whole output of the kernel before. A guard, not a
 * reproduction (backend_cuda_weights.c weight_copy says what is known). Two cases:
 *   - a long product first (a 256 MB matrix, tens of microseconds) on a fresh input, then a
 *     short copy (a fresh matrix of 4 rows) whose product reads its output - the earlier output
 *     (the product of the previous input) is still in memory, so a product that ran early would
 *     read it;
 *   - rmsnorm(o), x += o (one fused kernel unless GEMMA_CUDA_FUSE=0), then a product of x with a
 *     fresh matrix, on a fresh backend: the sequence in which such a product has been seen
 *     wrong. */
static void test_first_use(void) {
    const int big = small_shapes ? 512 : 8192, n_big = small_shapes ? 512 : 16384;
    tensor w1 = rand_tensor(n_big, big, DT_BF16);
    pair x = pair_rand((size_t)big), y = pair_new(NULL, (size_t)n_big);
    gpu->matmul(gpu, y.g, &w1, x.g, 1); /* w1 on the device, y its output for this x */
    for (int rep = 0; rep < 4; rep++) {
        const weight_dtype dt = rep % 2 ? DT_BF16 : DT_F32;
        float *xn = rand_vec((size_t)big);
        cpu->upload(cpu, x.c, xn, (size_t)big);
        gpu->upload(gpu, x.g, xn, (size_t)big);
        free(xn);
        tensor w2 = rand_tensor(4, n_big, dt); /* first used below */
        pair z = pair_new(NULL, 4);
        cpu->matmul(cpu, y.c, &w1, x.c, 1);
        cpu->matmul(cpu, z.c, &w2, y.c, 1);
        gpu->matmul(gpu, y.g, &w1, x.g, 1);
        gpu->matmul(gpu, z.g, &w2, y.g, 1);
        double *sc = dot_scale(&w2, y.c, 1);
        char what[96];
        snprintf(what, sizeof what, "a product right after another, its weight new (dtype %d)", dt);
        pair_check(&z, 1e-6, 1e-5, sc, what);
        free(sc);
        pair_free(&z);
    }
    pair_free(&x);
    pair_free(&y);

    backend *keep = gpu;
    char err[256];
    gpu = backend_cuda_new(err, sizeof err); /* pair_* and pair_check use it */
    if (!gpu) die("%s", err);
    const int cols = small_shapes ? 256 : 2560, rows = 256;
    for (int rep = 0; rep < 3; rep++) {
        const weight_dtype dt = rep == 1 ? DT_BF16 : DT_F32;
        tensor wn = rand_tensor(1, cols, dt), w = rand_tensor(rows, cols, dt);
        pair o = pair_rand((size_t)cols), xs = pair_rand((size_t)cols);
        pair h = pair_new(NULL, (size_t)rows);
        backend *bs[2] = {cpu, gpu};
        for (int k = 0; k < 2; k++) {
            backend *b = bs[k];
            float *ob = k ? o.g : o.c, *xb = k ? xs.g : xs.c, *hb = k ? h.g : h.c;
            b->rmsnorm(b, ob, ob, &wn, 1, cols, 1e-6f);
            b->add(b, xb, xb, ob, (size_t)cols);
            b->matmul(b, hb, &w, xb, 1);
        }
        double *sc = dot_scale(&w, xs.c, 1);
        char what[96];
        snprintf(what, sizeof what, "norm + add, then a product of a new weight (dtype %d)", dt);
        pair_check(&xs, 1e-5, 1e-5, NULL, what);
        pair_check(&h, 1e-6, 1e-5, sc, what);
        free(sc);
        pair_free(&o);
        pair_free(&xs);
        pair_free(&h);
    }
    gpu->destroy(gpu);
    gpu = keep;
}

static void test_rmsnorm(void) {
    const int dims[] = {64, 256, 512, 2560, 37};
    for (int i = 0; i < 5; i++)
        for (int with_w = 0; with_w < 2; with_w++)
            for (int dt = 0; dt < 3; dt++) {
                int dim = small_shapes && dims[i] > 256 ? 96 : dims[i];
                int nv = 1 + rng_int(small_shapes ? 4 : 64);
                tensor w = rand_tensor(1, dim, (weight_dtype)dt);
                pair x = pair_rand((size_t)nv * dim), out = pair_new(NULL, (size_t)nv * dim);
                cpu->rmsnorm(cpu, out.c, x.c, with_w ? &w : NULL, nv, dim, 1e-6f);
                gpu->rmsnorm(gpu, out.g, x.g, with_w ? &w : NULL, nv, dim, 1e-6f);
                char what[96];
                snprintf(what, sizeof what, "rmsnorm dim %d x %d weight %d dtype %d", dim, nv,
                         with_w, dt);
                pair_check(&out, 1e-5, 1e-5, NULL, what);
                /* in place */
                cpu->rmsnorm(cpu, x.c, x.c, with_w ? &w : NULL, nv, dim, 1e-6f);
                gpu->rmsnorm(gpu, x.g, x.g, with_w ? &w : NULL, nv, dim, 1e-6f);
                pair_check(&x, 1e-5, 1e-5, NULL, "rmsnorm in place");
                pair_free(&x);
                pair_free(&out);
            }
}

static void test_rope(void) {
    const int hds[] = {64, 256, 512};
    for (int i = 0; i < 3; i++)
        for (int prop = 0; prop < 2; prop++) {
            int hd = hds[i], half = hd / 2, n_tok = 1 + rng_int(8), heads = 1 + rng_int(8);
            float *f = xmalloc((size_t)half * sizeof(float));
            for (int j = 0; j < half; j++) /* proportional: the upper pairs are not rotated */
                f[j] = prop && j >= half / 4 ? 0.0f : (float)pow(10000.0, -2.0 * j / hd);
            pair inv = pair_new(f, (size_t)half);
            int pos0 = rng_int(small_shapes ? 100 : 8000);
            pair x = pair_rand((size_t)n_tok * heads * hd);
            cpu->rope(cpu, x.c, n_tok, heads, hd, pos0, inv.c);
            gpu->rope(gpu, x.g, n_tok, heads, hd, pos0, inv.g);
            char what[96];
            snprintf(what, sizeof what, "rope hd %d pos %d proportional %d", hd, pos0, prop);
            pair_check(&x, 1e-5, 2e-6, NULL, what);
            pair_free(&x);
            pair_free(&inv);
            free(f);
        }
}

#include "cuda_ops_attention.h"

/* The sequences the CUDA backend fuses (backend_cuda.c: a held-back in-place rmsnorm joined by
 * the add of its result, the norm of that sum, or a RoPE), and the same sequences cut short,
 * which must flush what was held back. */
static void test_fusions(void) {
    /* rows of 1 .. 4 elements a thread (96, 1000, 2560, 3000) and over 4096 (5376: Gemma 4
     * 27B's width), where the norm kernel holds more per thread than its registers */
    const int dims[] = {96, 1000, 2560, 3000, 5376};
    for (int dt = 0; dt < 3; dt++)
        for (int variant = 0; variant < 3; variant++)
            for (int di = small_shapes ? 0 : 2; di < (small_shapes ? 2 : 5); di++) {
                const int nv = 1 + rng_int(small_shapes ? 3 : 9), dim = dims[di];
                tensor w1 = rand_tensor(1, dim, (weight_dtype)dt),
                       w2 = rand_tensor(1, dim, (weight_dtype)dt);
                float *o0 = rand_vec((size_t)nv * dim);
                pair o = pair_new(o0, (size_t)nv * dim), x = pair_rand((size_t)nv * dim);
                pair xn = pair_new(NULL, (size_t)nv * dim);
                backend *bs[2] = {cpu, gpu};
                for (int k = 0; k < 2; k++) {
                    backend *b = bs[k];
                    float *ob = k ? o.g : o.c, *xb = k ? x.g : x.c, *xnb = k ? xn.g : xn.c;
                    b->rmsnorm(b, ob, ob, &w1, nv, dim, 1e-6f);
                    if (variant >= 1) b->add(b, xb, xb, ob, (size_t)nv * dim);
                    if (variant == 2) b->rmsnorm(b, xnb, xb, &w2, nv, dim, 1e-6f);
                    if (variant == 1) b->scale(b, xb, 0.5f, (size_t)nv * dim); /* flushes */
                }
                char what[96];
                snprintf(what, sizeof what, "fused norm/add/norm variant %d dtype %d dim %d",
                         variant, dt, dim);
                pair_check(&o, 1e-5, 1e-5, NULL, what);
                pair_check(&x, 1e-5, 1e-5, NULL, what);
                pair_check(&xn, 1e-5, 1e-5, NULL, what);
                /* the fused kernel's o is the lone rmsnorm's, bit for bit */
                if (variant >= 1) {
                    const size_t cnt = (size_t)nv * dim;
                    float *fused = xmalloc(cnt * sizeof(float)),
                          *lone = xmalloc(cnt * sizeof(float));
                    float *ol = gpu->alloc(gpu, cnt);
                    gpu->download(gpu, fused, o.g, cnt);
                    gpu->upload(gpu, ol, o0, cnt);
                    gpu->rmsnorm(gpu, ol, ol, &w1, nv, dim, 1e-6f);
                    gpu->download(gpu, lone, ol, cnt);
                    EXPECT(!memcmp(fused, lone, cnt * sizeof(float)),
                           "%s: o differs from the lone rmsnorm's", what);
                    gpu->release(gpu, ol);
                    free(fused);
                    free(lone);
                }
                free(o0);
                pair_free(&o);
                pair_free(&x);
                pair_free(&xn);
            }
    const int hds[] = {256, 512, 16};
    for (int i = 0; i < 3; i++) {
        int hd = hds[i], half = hd / 2, n_tok = 1 + rng_int(8), heads = 1 + rng_int(8);
        float *f = xmalloc((size_t)half * sizeof(float));
        for (int j = 0; j < half; j++)
            f[j] = i == 1 && j >= half / 4 ? 0.0f : (float)pow(10000.0, -2.0 * j / hd);
        pair inv = pair_new(f, (size_t)half);
        tensor w = rand_tensor(1, hd, DT_BF16);
        pair q = pair_rand((size_t)n_tok * heads * hd);
        int pos0 = rng_int(5000);
        cpu->rmsnorm(cpu, q.c, q.c, &w, n_tok * heads, hd, 1e-6f);
        cpu->rope(cpu, q.c, n_tok, heads, hd, pos0, inv.c);
        gpu->rmsnorm(gpu, q.g, q.g, &w, n_tok * heads, hd, 1e-6f);
        gpu->rope(gpu, q.g, n_tok, heads, hd, pos0, inv.g);
        char what[64];
        snprintf(what, sizeof what, "fused rmsnorm+rope hd %d pos %d", hd, pos0);
        pair_check(&q, 1e-5, 1e-5, NULL, what);
        pair_free(&q);
        pair_free(&inv);
        free(f);
    }
}

static void test_elementwise(void) {
    const int rows = 1 + rng_int(8), dim = small_shapes ? 100 : 10240 + rng_int(100);
    const int stride = dim + rng_int(50);
    pair gate = pair_rand((size_t)rows * dim), up = pair_rand((size_t)rows * stride);
    pair out = pair_new(NULL, (size_t)rows * dim);
    cpu->gelu_mul(cpu, out.c, gate.c, up.c, rows, dim, stride);
    gpu->gelu_mul(gpu, out.g, gate.g, up.g, rows, dim, stride);
    pair_check(&out, 1e-6, 2e-6, NULL, "gelu_mul");
    cpu->gelu_mul(cpu, gate.c, gate.c, up.c, rows, dim, stride); /* in place */
    gpu->gelu_mul(gpu, gate.g, gate.g, up.g, rows, dim, stride);
    pair_check(&gate, 1e-6, 2e-6, NULL, "gelu_mul in place");

    const size_t n = (size_t)rows * dim;
    pair a = pair_rand(n), b2 = pair_rand(n);
    cpu->add(cpu, out.c, a.c, b2.c, n);
    gpu->add(gpu, out.g, a.g, b2.g, n);
    pair_check(&out, 0, 0, NULL, "add");
    const float s = rng_val();
    cpu->scale(cpu, a.c, s, n);
    gpu->scale(gpu, a.g, s, n);
    pair_check(&a, 0, 0, NULL, "scale");
    /* softcap over values spread well past the cap */
    cpu->scale(cpu, b2.c, 40.0f, n);
    gpu->scale(gpu, b2.g, 40.0f, n);
    cpu->softcap(cpu, b2.c, n, 30.0f);
    gpu->softcap(gpu, b2.g, n, 30.0f);
    pair_check(&b2, 1e-5, 2e-6, NULL, "softcap");
    pair_free(&gate);
    pair_free(&up);
    pair_free(&out);
    pair_free(&a);
    pair_free(&b2);
}

static void test_embed(void) {
    for (int dt = 0; dt < 3; dt++) {
        int rows = 50 + rng_int(1000), cols = small_shapes ? 40 : 256 + rng_int(3000);
        tensor t = rand_tensor(rows, cols, (weight_dtype)dt);
        int n = 1 + rng_int(small_shapes ? 8 : 64);
        int *ids = xmalloc((size_t)n * sizeof(int));
        for (int i = 0; i < n; i++)
            ids[i] = rng_int(rows);
        ids[0] = rows - 1; /* the last row too */
        pair out = pair_new(NULL, (size_t)n * cols);
        const float s = rng_val() * 30;
        cpu->embed(cpu, out.c, &t, ids, n, s);
        gpu->embed(gpu, out.g, &t, ids, n, s);
        char what[64];
        snprintf(what, sizeof what, "embed dtype %d", dt);
        pair_check(&out, 0, 0, NULL, what);
        pair_free(&out);
        free(ids);
    }
}

static void test_argmax(void) {
    const int ns[] = {1, 37, 1000, 262144, 300001};
    for (int i = 0; i < 5; i++) {
        int n = small_shapes && ns[i] > 1000 ? 5000 : ns[i];
        float *h = rand_vec((size_t)n);
        /* Plant ties: the maximum appears twice; the first one must win. */
        int a = rng_int(n), b = rng_int(n);
        if (a > b) {
            int t = a;
            a = b;
            b = t;
        }
        h[a] = h[b] = 5.0f;
        pair x = pair_new(h, (size_t)n);
        int want = cpu->argmax(cpu, x.c, n), got = gpu->argmax(gpu, x.g, n);
        EXPECT(want == a && got == want, "argmax n %d: gpu %d cpu %d planted %d and %d", n, got,
               want, a, b);
        pair_free(&x);
        free(h);
    }
}

/* The fused greedy head over n rows (a verify's k + 1): each pick must equal the GPU's own
 * matmul + softcap + argmax of that row exactly (the same kernels run), and be the CPU's pick
 * up to rounding: the CPU's score at the GPU's pick within the dot tolerance of its best. */
static void test_matmul_argmax(void) {
    const weight_dtype dts[] = {DT_F32, DT_BF16};
    const int ns[] = {1, 3, 9};
    for (int di = 0; di < 2; di++)
        for (int ni = 0; ni < 3; ni++)
            for (int capped = 0; capped < 2; capped++) {
                const int rows = small_shapes ? 300 + rng_int(200) : 3000 + rng_int(6000);
                const int cols = small_shapes ? 64 : 256 + 8 * rng_int(64), n = ns[ni];
                const float cap = capped ? 30.0f : 0.0f;
                tensor w = rand_tensor(rows, cols, dts[di]);
                pair x = pair_rand((size_t)n * cols), sc = pair_new(NULL, (size_t)n * rows);
                int got[9], unfused[9], want[9];
                gpu->matmul_argmax(gpu, got, &w, x.g, n, cap);
                cpu->matmul_argmax(cpu, want, &w, x.c, n, cap);
                gpu->matmul(gpu, sc.g, &w, x.g, n);
                cpu->matmul(cpu, sc.c, &w, x.c, n);
                if (cap > 0) {
                    gpu->softcap(gpu, sc.g, sc.n, cap);
                    cpu->softcap(cpu, sc.c, sc.n, cap);
                }
                double *scale = dot_scale(&w, x.c, n);
                for (int t = 0; t < n; t++) {
                    const size_t o = (size_t)t * rows;
                    unfused[t] = gpu->argmax(gpu, sc.g + o, rows);
                    EXPECT(got[t] == unfused[t],
                           "matmul_argmax dtype %d n %d row %d cap %g: fused %d, unfused %d",
                           dts[di], n, t, cap, got[t], unfused[t]);
                    EXPECT(got[t] >= 0 && got[t] < rows &&
                               sc.c[o + got[t]] >= sc.c[o + want[t]] - 1e-5 * scale[o + want[t]],
                           "matmul_argmax dtype %d n %d row %d cap %g: gpu %d, cpu %d", dts[di], n,
                           t, cap, got[t], want[t]);
                }
                free(scale);
                pair_free(&x);
                pair_free(&sc);
            }
}

static void test_draft_head(void); /* with the drafter checks below */

#include "cuda_ops_fused.h"
#include "cuda_ops_matvec.h"
#include "cuda_ops_dequant.h"
#include "cuda_ops_gemm.h"

/* The backends the op tests compare: cpu, and gpu. GEMMA_CUDA_GEMM=own stays set for the whole
 * run: every backend the tests make (the variants, the whole-MLP forms) multiplies on our
 * kernels at every n, as the op tests are about them; the default (auto: cuBLAS for bf16
 * products of more than 17 inputs) has a backend of its own in run_ops. */
static void ops_backends(void) {
    cpu = backend_cpu_new(0);
    char err[256];
    setenv("GEMMA_CUDA_GEMM", "own", 1);
    gpu = backend_cuda_new(err, sizeof err);
    if (!gpu) die("%s", err);
}

/* The whole-MLP kernel's test alone, small shapes (cuda_ops ops mlp). */
static int run_ops_mlp(void) {
    ops_backends();
    small_shapes = 1;
    test_fused_whole_mlp();
    gpu->destroy(gpu);
    cpu->destroy(cpu);
    printf("ops mlp: %s\n", failures ? "FAILED" : "all agree with the CPU backend");
    return failures != 0;
}

static int run_ops(void) {
    ops_backends();
    char err[256];
    test_buffers();
    test_matmul(gpu, 1e-5, 1e-5, "own");
    backend *cb = gpu_under((const char *const[][2]){{"GEMMA_CUDA_GEMM", "auto"}}, 1);
    test_matmul(cb, RTOL_X16, 1e-5, "auto (n > 17: cuBLAS)");
    test_matmul_quant(cb, 17, RTOL_X16, "auto (n > 17: cuBLAS)");
    test_matmul_quant_ranges(cb);
    backend *ck = gpu_under(
        (const char *const[][2]){{"GEMMA_CUDA_GEMM", "auto"}, {"GEMMA_CUDA_DEQUANT", "keep"}}, 2);
    test_dequant_copies(cb, ck);
    test_shared_split(cb);
    ck->destroy(ck);
    cb->destroy(cb);
    test_split2_f16();
    test_matmul_quant(gpu, 1 << 30, 1e-5, "own");
    test_first_use();
    test_rmsnorm();
    test_rope();
    test_fusions();
    test_fused();
    test_matvec_variants();
    mv_rows_reproduce(gpu, "default");
    mv_group_reproduce(gpu, "default");
    mvq_group_reproduce();
    /* the default form (on sm_90, thread block clusters), then the split form */
    test_attention("default");
    {
        backend *dflt = gpu;
        setenv("GEMMA_CUDA_ATTN", "split", 1);
        gpu = backend_cuda_new(err, sizeof err);
        unsetenv("GEMMA_CUDA_ATTN");
        if (!gpu) die("%s", err);
        test_attention("split");
        gpu->destroy(gpu);
        gpu = dflt;
    }
    test_elementwise();
    test_embed();
    test_argmax();
    test_matmul_argmax();
    test_draft_head();
    backend_cuda_counters cnt;
    backend_cuda_stats(gpu, &cnt);
    printf("ops: %s, %.1f MB moved, %s\n", cnt.device, cnt.bytes / 1e6,
           failures ? "FAILED" : "all agree with the CPU backend");
    gpu->destroy(gpu);
    cpu->destroy(cpu);
    return failures != 0;
}

/* ---- whole models (cuda_ops_model.h) ------------------------------------------------- */

#include "cuda_ops_model.h"

#include "cuda_ops_draft.h"

int main(int argc, char **argv) {
    util_progname = "cuda_ops";
    uint64_t seed = rng_seed_from_env();
    printf("cuda_ops: seed %llu (TEST_SEED=%llu replays it)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    if (argc >= 2 && !strcmp(argv[1], "ops")) {
        if (argc >= 3 && !strcmp(argv[2], "mlp")) return run_ops_mlp();
        small_shapes = argc >= 3 && !strcmp(argv[2], "small");
        return run_ops();
    }
    if (argc >= 3 && (!strcmp(argv[1], "model") || !strcmp(argv[1], "model-rows"))) {
        if (!strcmp(argv[1], "model-rows")) k_matvec_test_rows_min(0);
        for (int i = 2; i < argc; i++)
            check_model(argv[i]);
        printf("models: %s\n", failures ? "FAILED" : "GPU agrees with CPU");
        return failures != 0;
    }
    if (argc >= 2 && !strcmp(argv[1], "draft")) return run_draft(argc, argv);
    fprintf(stderr, "usage: cuda_ops ops [small|mlp] | model DIR... | model-rows DIR... | "
                    "draft [small] | draft DIR...\n");
    return 2;
}
