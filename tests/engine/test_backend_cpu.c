/* test_backend_cpu.c: every op of the CPU backend (engine/backend_cpu.c) against a naive
 * double-precision reference written here, on random inputs (never zeros: values are drawn
 * from [-2, -0.1] U [0.1, 2]) with a fresh seed each run, printed so that a failure can be
 * replayed with TEST_SEED=<seed>. Also the scalar dtype conversions (engine/tensor.c),
 * checked against the compiler's own _Float16 where it has one. Every kernel variant the CPU
 * runs is tested (GEMMA_CPU_ISA caps the choice: portable, avx2, avx512). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "util.h"
#include "../test_util.h"
#include "tensor_util.h"

/* ---- conversions -------------------------------------------------------------------- */

static void test_conversions(void) {
    /* bf16: exact values survive, others round to nearest (ties to even). */
    EXPECT(bf16_to_f32(f32_to_bf16(1.0f)) == 1.0f);
    EXPECT(bf16_to_f32(f32_to_bf16(-3.5f)) == -3.5f);
    EXPECT(f32_to_bf16(1.00390625f) == 0x3f80); /* 1 + 2^-8: a tie, rounds to even (1.0) */
    EXPECT(f32_to_bf16(1.01171875f) == 0x3f82); /* 1 + 3*2^-8: a tie, rounds up to even */
    EXPECT(isnan(bf16_to_f32(f32_to_bf16(NAN))));
    EXPECT(bf16_to_f32(f32_to_bf16(sqrtf(3072.0f))) == 55.5f); /* transformers' own example */
    for (int i = 0; i < 10000; i++) {
        float v = rng_val() * (float)pow(2.0, rng_int(40) - 20);
        float r = bf16_to_f32(f32_to_bf16(v));
        EXPECT(fabsf(r - v) <= fabsf(v) * (1.0f / 256)); /* 8 significant bits */
#if defined(__FLT16_MAX__)
        float h = v;
        if (fabsf(h) < 60000.0f) {
            _Float16 ref = (_Float16)h;
            uint16_t bits;
            memcpy(&bits, &ref, 2);
            if (f32_to_f16(h) != bits || f16_to_f32(bits) != (float)ref) {
                fprintf(stderr, "f16 of %.9g: got %04x, want %04x\n", h, f32_to_f16(h), bits);
                failures++;
                break;
            }
        }
#endif
    }
    EXPECT(f16_to_f32(0x3c00) == 1.0f && f16_to_f32(0xc000) == -2.0f);
    EXPECT(f16_to_f32(0x0001) == ldexpf(1.0f, -24)); /* smallest subnormal */
    EXPECT(isinf(f16_to_f32(0x7c00)) && f32_to_f16(1e6f) == 0x7c00);
}

/* ---- ops ---------------------------------------------------------------------------- */

static void test_matmul(backend *b) {
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    /* the last case is big enough for the threaded matvec (backend_cpu.c's PARALLEL) */
    const int ns[] = {1, 3, 17, 1};
    for (size_t di = 0; di < 3; di++)
        for (size_t ni = 0; ni < 4; ni++) {
            int big = ni == 3;
            int rows = (big ? 600 : 33) + rng_int(300), cols = (big ? 700 : 20) + rng_int(600);
            int n = ns[ni];
            double *wr;
            tensor w = rand_tensor(rows, cols, dts[di], &wr);
            float *x = rand_vec((size_t)n * cols);
            float *out = b->alloc(b, (size_t)n * rows);
            b->matmul(b, out, &w, x, n);
            double *want = ref_matmul(wr, x, n, rows, cols);
            char what[64];
            snprintf(what, sizeof what, "matmul dtype %d n %d", (int)dts[di], n);
            close_all(out, want, (size_t)n * rows, 1e-4 * sqrt(cols), 1e-5, what);
            b->release(b, out);
            free((void *)w.data);
            free(wr);
            free(x);
            free(want);
        }
}

static void test_rmsnorm(backend *b) {
    int n_vec = 3 + rng_int(20), dim = 8 + rng_int(100);
    float eps = 1e-6f;
    double *wr;
    tensor w = rand_tensor(1, dim, DT_BF16, &wr);
    float *x = rand_vec((size_t)n_vec * dim);
    float *out = b->alloc(b, (size_t)n_vec * dim);
    double *want = xmalloc((size_t)n_vec * dim * sizeof(double));
    for (int scaled = 0; scaled < 2; scaled++) {
        b->rmsnorm(b, out, x, scaled ? &w : NULL, n_vec, dim, eps);
        for (int v = 0; v < n_vec; v++) {
            double ss = 0;
            for (int i = 0; i < dim; i++)
                ss += (double)x[v * dim + i] * x[v * dim + i];
            double inv = 1.0 / sqrt(ss / dim + eps);
            for (int i = 0; i < dim; i++)
                want[v * dim + i] = x[v * dim + i] * inv * (scaled ? wr[i] : 1.0);
        }
        close_all(out, want, (size_t)n_vec * dim, 1e-6, 1e-5, scaled ? "rmsnorm" : "rmsnorm/1");
    }
    /* in place */
    float *y = xmalloc((size_t)n_vec * dim * sizeof(float));
    memcpy(y, x, (size_t)n_vec * dim * sizeof(float));
    b->rmsnorm(b, y, y, &w, n_vec, dim, eps);
    b->rmsnorm(b, out, x, &w, n_vec, dim, eps);
    EXPECT(!memcmp(y, out, (size_t)n_vec * dim * sizeof(float)));
    free(y);
    b->release(b, out);
    free(x);
    free(want);
    free(wr);
    free((void *)w.data);
}

static void test_rope(backend *b) {
    int n_tok = 1 + rng_int(6), n_heads = 1 + rng_int(4), hd = 2 * (2 + rng_int(16));
    int pos0 = rng_int(5000), half = hd / 2;
    float *inv = xmalloc((size_t)half * sizeof(float));
    for (int i = 0; i < half; i++) /* the last quarter unrotated, as proportional RoPE */
        inv[i] = i < half - half / 4 ? (float)pow(10000.0, -2.0 * i / hd) : 0.0f;
    float *x = rand_vec((size_t)n_tok * n_heads * hd);
    float *y = xmalloc((size_t)n_tok * n_heads * hd * sizeof(float));
    memcpy(y, x, (size_t)n_tok * n_heads * hd * sizeof(float));
    b->rope(b, y, n_tok, n_heads, hd, pos0, inv);
    double *want = xmalloc((size_t)n_tok * n_heads * hd * sizeof(double));
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < n_heads; h++)
            for (int i = 0; i < hd; i++) {
                /* x * cos + rotate_half(x) * sin, with cos/sin of cat(freqs, freqs) */
                const float *xh = x + ((size_t)t * n_heads + h) * hd;
                int j = i % half;
                double ang = (double)inv[j] * (pos0 + t);
                double rot = i < half ? -xh[i + half] : xh[i - half];
                want[((size_t)t * n_heads + h) * hd + i] = xh[i] * cos(ang) + rot * sin(ang);
            }
    /* fp32 angles at positions up to ~5000 carry ~1e-3 rad of rounding. */
    close_all(y, want, (size_t)n_tok * n_heads * hd, 2e-3, 1e-3, "rope");
    for (int t = 0; t < n_tok; t++) /* unrotated pairs are untouched, bit for bit */
        for (int i = half - half / 4; i < half; i++) {
            size_t o = (size_t)t * n_heads * hd;
            EXPECT(y[o + i] == x[o + i] && y[o + i + half] == x[o + i + half]);
        }
    free(inv);
    free(x);
    free(y);
    free(want);
}

/* Attention through kv_write into a ring of len rows versus a naive pass over the whole
 * history with an explicit mask. */
static void test_attention(backend *b, int window) {
    int n_kv = 1 + rng_int(2), group = 1 + rng_int(3), n_heads = n_kv * group;
    int hd = 4 + rng_int(12), kv_dim = n_kv * hd;
    int hist = 1 + rng_int(40), n_tok = 1 + rng_int(8), total = hist + n_tok;
    int len = window ? window + n_tok - 1 : total;
    if (len > total) len = total;
    float *K = rand_vec((size_t)total * kv_dim), *V = rand_vec((size_t)total * kv_dim);
    float *q = rand_vec((size_t)n_tok * n_heads * hd);
    float *kc = b->alloc(b, (size_t)len * kv_dim), *vc = b->alloc(b, (size_t)len * kv_dim);
    /* the history in random-sized pieces, then the new rows */
    for (int p = 0; p < hist;) {
        int m = 1 + rng_int(n_tok);
        if (p + m > hist) m = hist - p;
        b->kv_write(b, kc, K + (size_t)p * kv_dim, m, kv_dim, p, len);
        b->kv_write(b, vc, V + (size_t)p * kv_dim, m, kv_dim, p, len);
        p += m;
    }
    b->kv_write(b, kc, K + (size_t)hist * kv_dim, n_tok, kv_dim, hist, len);
    b->kv_write(b, vc, V + (size_t)hist * kv_dim, n_tok, kv_dim, hist, len);
    float *out = b->alloc(b, (size_t)n_tok * n_heads * hd);
    b->attention(b, out, q, kc, vc, n_tok, hist, len, window, n_heads, n_kv, hd);

    double *want = xcalloc((size_t)n_tok * n_heads * hd, sizeof(double));
    double *s = xmalloc((size_t)total * sizeof(double));
    for (int t = 0; t < n_tok; t++)
        for (int h = 0; h < n_heads; h++) {
            int p = hist + t, kvh = h / group;
            const float *qh = q + ((size_t)t * n_heads + h) * hd;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < total; j++) {
                int visible = j <= p && (!window || p - j < window);
                s[j] = -INFINITY;
                if (!visible) continue;
                double d = 0;
                for (int i = 0; i < hd; i++)
                    d += (double)qh[i] * K[(size_t)j * kv_dim + kvh * hd + i];
                s[j] = d;
                if (d > mx) mx = d;
            }
            for (int j = 0; j < total; j++)
                sum += s[j] == -INFINITY ? 0 : exp(s[j] - mx);
            double *o = want + ((size_t)t * n_heads + h) * hd;
            for (int j = 0; j < total; j++) {
                if (s[j] == -INFINITY) continue;
                double pj = exp(s[j] - mx) / sum;
                for (int i = 0; i < hd; i++)
                    o[i] += pj * V[(size_t)j * kv_dim + kvh * hd + i];
            }
        }
    char what[64];
    snprintf(what, sizeof what, "attention window %d len %d", window, len);
    close_all(out, want, (size_t)n_tok * n_heads * hd, 1e-5, 1e-4, what);
    b->release(b, kc);
    b->release(b, vc);
    b->release(b, out);
    free(K);
    free(V);
    free(q);
    free(want);
    free(s);
}

static double gelu_ref(double x) {
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

static void test_elementwise(backend *b) {
    int rows = 2 + rng_int(5), dim = 3 + rng_int(30), stride = dim + rng_int(20);
    float *gate = rand_vec((size_t)rows * dim), *up = rand_vec((size_t)rows * stride);
    float *out = b->alloc(b, (size_t)rows * dim);
    double *want = xmalloc((size_t)rows * stride * sizeof(double));
    b->gelu_mul(b, out, gate, up, rows, dim, stride);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < dim; j++)
            want[r * dim + j] = gelu_ref(gate[r * dim + j]) * up[r * stride + j];
    close_all(out, want, (size_t)rows * dim, 1e-6, 1e-5, "gelu_mul");

    size_t n = (size_t)rows * dim;
    float *x = rand_vec(n), *y = rand_vec(n), *z = b->alloc(b, n);
    b->add(b, z, x, y, n);
    for (size_t i = 0; i < n; i++)
        want[i] = (double)x[i] + y[i];
    close_all(z, want, n, 0, 1e-7, "add");
    float s = rng_val();
    for (size_t i = 0; i < n; i++)
        want[i] = (double)x[i] * s;
    b->scale(b, x, s, n);
    close_all(x, want, n, 1e-6, 1e-6, "scale");
    float cap = 0.5f + (float)rng_unit() * 3;
    memcpy(z, y, n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        z[i] *= 10; /* push some values past the cap */
    for (size_t i = 0; i < n; i++)
        want[i] = cap * tanh((double)z[i] / cap);
    b->softcap(b, z, n, cap);
    close_all(z, want, n, 1e-6, 1e-6, "softcap");

    /* argmax: the first of equal maxima, as torch.argmax */
    int m = 5 + rng_int(1000);
    float *v = rand_vec((size_t)m);
    int at = rng_int(m), again = rng_int(m);
    v[at] = 100.0f;
    v[again] = 100.0f;
    EXPECT(b->argmax(b, v, m) == (at < again ? at : again));
    free(v);
    free(gate);
    free(up);
    free(want);
    free(y);
    b->release(b, out);
    b->release(b, x);
    b->release(b, z);
}

/* alloc gives zeros; upload, download and copy move exactly n values and nothing else. */
static void test_buffers(backend *b) {
    size_t n = 5 + (size_t)rng_int(500);
    float *buf = b->alloc(b, n + 2), *host = rand_vec(n), *back = xmalloc((n + 2) * sizeof(float));
    b->download(b, back, buf, n + 2);
    for (size_t i = 0; i < n + 2; i++)
        EXPECT(back[i] == 0.0f);
    b->upload(b, buf + 1, host, n);
    float *other = b->alloc(b, n);
    b->copy(b, other, buf + 1, n);
    b->download(b, back, buf, n + 2);
    EXPECT(back[0] == 0.0f && back[n + 1] == 0.0f && !memcmp(back + 1, host, n * sizeof(float)));
    b->download(b, back, other, n);
    EXPECT(!memcmp(back, host, n * sizeof(float)));
    b->release(b, buf);
    b->release(b, other);
    free(host);
    free(back);
}

static void test_embed(backend *b) {
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    for (int di = 0; di < 3; di++) {
        int vocab = 10 + rng_int(50), dim = 4 + rng_int(40), n = 1 + rng_int(9);
        double *ref;
        tensor t = rand_tensor(vocab, dim, dts[di], &ref);
        int *ids = xmalloc((size_t)n * sizeof(int));
        for (int i = 0; i < n; i++)
            ids[i] = rng_int(vocab);
        float s = rng_val();
        float *out = b->alloc(b, (size_t)n * dim);
        double *want = xmalloc((size_t)n * dim * sizeof(double));
        b->embed(b, out, &t, ids, n, s);
        for (int i = 0; i < n; i++)
            for (int c = 0; c < dim; c++)
                want[i * dim + c] = ref[(size_t)ids[i] * dim + c] * s;
        close_all(out, want, (size_t)n * dim, 0, 1e-6, "embed");
        b->release(b, out);
        free(want);
        free(ids);
        free(ref);
        free((void *)t.data);
    }
}

int main(void) {
    uint64_t seed = rng_seed_from_env();
    printf("seed %llu (replay with TEST_SEED=%llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);

    test_conversions();
    /* every kernel variant this CPU can run: the portable C, AVX2, AVX-512 */
    const char *isas[] = {"portable", "avx2", "avx512"};
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        setenv("GEMMA_CPU_ISA", isas[k], 1);
        backend *b = backend_cpu_new(k == 0 ? 1 : 0);
        EXPECT(!strcmp(b->name, "cpu"));
        int before = failures;
        for (int rep = 0; rep < 3; rep++) {
            test_matmul(b);
            test_rmsnorm(b);
            test_rope(b);
            test_attention(b, 0);
            test_attention(b, 1);
            test_attention(b, 1 + rng_int(10));
            test_elementwise(b);
            test_embed(b);
            test_buffers(b);
        }
        if (failures > before) fprintf(stderr, "(kernels capped at %s)\n", isas[k]);
        b->destroy(b);
    }
    unsetenv("GEMMA_CPU_ISA");
    if (failures) fprintf(stderr, "replay with TEST_SEED=%llu\n", (unsigned long long)seed);
    return test_exit("test_backend_cpu");
}
