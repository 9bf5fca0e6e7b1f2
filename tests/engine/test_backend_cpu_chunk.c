/* test_backend_cpu_chunk.c: the CPU backend on chunks of more than CPU_CHUNK_MIN rows, where it
 * runs backend_cpu_gemm.c's kernels (matrix product, attention, GELU gate), against naive
 * double-precision references on random shapes (sizes that are no multiple of the kernels'
 * blocks, rings that wrap, windows); and the contract speculation rests on: up to
 * CPU_CHUNK_MIN rows, every row of a matmul or an attention pass is bit for bit what a
 * single-row call gives. Also that a chunk row's matmul result does not depend on the chunk's
 * size. Random inputs with a fresh seed each run (replay with TEST_SEED=<seed>); run for each
 * kernel variant the CPU has (GEMMA_CPU_ISA). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cpu_gemm.h"
#include "util.h"
#include "../test_util.h"
#include "../attention_ref.h"
#include "tensor_util.h"

static void test_matmul(backend *b) {
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    const int ns[] = {CPU_CHUNK_MIN + 1, 31, 64, 70 + rng_int(60)};
    for (size_t di = 0; di < 3; di++)
        for (size_t ni = 0; ni < 4; ni++) {
            const int n = ns[ni], rows = 1 + rng_int(400), cols = 1 + rng_int(700);
            double *wr;
            tensor w = rand_tensor(rows, cols, dts[di], &wr);
            float *x = rand_vec((size_t)n * cols);
            float *out = b->alloc(b, (size_t)n * rows), *part = b->alloc(b, (size_t)n * rows);
            b->matmul(b, out, &w, x, n);
            double *want = ref_matmul(wr, x, n, rows, cols);
            char what[96];
            snprintf(what, sizeof what, "matmul dtype %d n %d rows %d cols %d", (int)dts[di], n,
                     rows, cols);
            close_all(out, want, (size_t)n * rows, 1e-4 * sqrt(cols), 1e-5, what);
            /* the first m rows of the chunk again, as a chunk of their own */
            const int m = CPU_CHUNK_MIN + 1 + rng_int(n - CPU_CHUNK_MIN);
            b->matmul(b, part, &w, x, m);
            EXPECT(!memcmp(part, out, (size_t)m * rows * sizeof(float)),
                   " %s: rows of a %d-row chunk differ from the %d-row chunk's", what, m, n);
            b->release(b, out);
            b->release(b, part);
            free((void *)w.data);
            free(wr);
            free(x);
            free(want);
        }
}

/* Up to CPU_CHUNK_MIN rows, each row of a matmul equals a one-row call bit for bit. */
static void test_matmul_rowwise(backend *b) {
    const weight_dtype dts[] = {DT_F32, DT_BF16};
    for (size_t di = 0; di < 2; di++) {
        const int n = 2 + rng_int(CPU_CHUNK_MIN - 1), rows = 1 + rng_int(600),
                  cols = 1 + rng_int(600);
        double *wr;
        tensor w = rand_tensor(rows, cols, dts[di], &wr);
        float *x = rand_vec((size_t)n * cols);
        float *out = b->alloc(b, (size_t)n * rows), *one = b->alloc(b, rows);
        b->matmul(b, out, &w, x, n);
        for (int t = 0; t < n; t++) {
            b->matmul(b, one, &w, x + (size_t)t * cols, 1);
            EXPECT(!memcmp(one, out + (size_t)t * rows, (size_t)rows * sizeof(float)),
                   " matmul dtype %d: row %d of %d differs from a one-row call", (int)dts[di], t,
                   n);
        }
        b->release(b, out);
        b->release(b, one);
        free((void *)w.data);
        free(wr);
        free(x);
    }
}

/* The keys and values of positions 0 .. total, written into rings of len rows. */
typedef struct {
    int n_kv, group, n_heads, hd, kv_dim, len, window;
    float *K, *V, *kc, *vc;
} kv_case;

static kv_case kv_new(backend *b, int total, int n_tok, int window, int hd) {
    kv_case c = {.n_kv = 1 + rng_int(2), .group = 1 + rng_int(5), .hd = hd, .window = window};
    c.n_heads = c.n_kv * c.group;
    c.kv_dim = c.n_kv * hd;
    c.len = window ? window + n_tok - 1 : total;
    if (c.len > total) c.len = total;
    c.K = rand_vec((size_t)total * c.kv_dim);
    c.V = rand_vec((size_t)total * c.kv_dim);
    c.kc = b->alloc(b, (size_t)c.len * c.kv_dim);
    c.vc = b->alloc(b, (size_t)c.len * c.kv_dim);
    return c;
}

static void kv_free(backend *b, kv_case *c) {
    b->release(b, c->kc);
    b->release(b, c->vc);
    free(c->K);
    free(c->V);
}

/* Writes positions p0 .. p0 + m into the rings. */
static void kv_put(backend *b, kv_case *c, int p0, int m) {
    b->kv_write(b, c->kc, c->K + (size_t)p0 * c->kv_dim, m, c->kv_dim, p0, c->len);
    b->kv_write(b, c->vc, c->V + (size_t)p0 * c->kv_dim, m, c->kv_dim, p0, c->len);
}

static void test_attention(backend *b, int window, int hd) {
    const int n_tok = CPU_CHUNK_MIN + 1 + rng_int(60), hist = rng_int(300);
    const int total = hist + n_tok;
    kv_case c = kv_new(b, total, n_tok, window, hd);
    for (int p = 0; p < hist;) { /* the history in chunks, as the decoder writes it */
        int m = 1 + rng_int(n_tok);
        if (p + m > hist) m = hist - p;
        kv_put(b, &c, p, m);
        p += m;
    }
    kv_put(b, &c, hist, n_tok);
    float *q = rand_vec((size_t)n_tok * c.n_heads * hd);
    float *out = b->alloc(b, (size_t)n_tok * c.n_heads * hd);
    b->attention(b, out, q, c.kc, c.vc, n_tok, hist, c.len, window, c.n_heads, c.n_kv, hd);

    double *want = attention_ref(q, c.K, c.V, n_tok, hist, total, window, c.n_heads, c.n_kv, hd);
    char what[96];
    snprintf(what, sizeof what, "attention n_tok %d hist %d window %d hd %d group %d", n_tok, hist,
             window, hd, c.group);
    /* test_backend_cpu's bounds for head_dim <= 16, growing as the scores' fp32 sums do */
    const double grow = hd > 16 ? sqrt(hd / 16.0) : 1.0;
    close_all(out, want, (size_t)n_tok * c.n_heads * hd, 1e-5 * grow, 1e-4 * grow, what);
    b->release(b, out);
    kv_free(b, &c);
    free(q);
    free(want);
}

/* Up to CPU_CHUNK_MIN queries, each row equals a one-query pass bit for bit (the verify pass
 * of speculative decoding against the decode steps). */
static void test_attention_rowwise(backend *b, int window) {
    const int n_tok = 2 + rng_int(CPU_CHUNK_MIN - 1), hist = rng_int(200),
              hd = 8 * (1 + rng_int(8));
    const int total = hist + n_tok;
    kv_case c = kv_new(b, total, n_tok, window, hd);
    kv_put(b, &c, 0, hist);
    kv_put(b, &c, hist, n_tok);
    const size_t row = (size_t)c.n_heads * hd;
    float *q = rand_vec((size_t)n_tok * row);
    float *out = b->alloc(b, n_tok * row), *one = b->alloc(b, row);
    b->attention(b, out, q, c.kc, c.vc, n_tok, hist, c.len, window, c.n_heads, c.n_kv, hd);
    for (int t = 0; t < n_tok; t++) {
        b->attention(b, one, q + t * row, c.kc, c.vc, 1, hist + t, c.len, window, c.n_heads, c.n_kv,
                     hd);
        EXPECT(!memcmp(one, out + t * row, row * sizeof(float)),
               " attention window %d: row %d of %d differs from a one-query pass", window, t,
               n_tok);
    }
    b->release(b, out);
    b->release(b, one);
    kv_free(b, &c);
    free(q);
}

static double gelu_ref(double x) {
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

static void test_gelu(backend *b) {
    const int rows = CPU_CHUNK_MIN + 1 + rng_int(40), dim = 1 + rng_int(300),
              stride = dim + rng_int(20);
    float *gate = rand_vec((size_t)rows * dim), *up = rand_vec((size_t)rows * stride);
    for (int i = 0; i < 8; i++) /* far tails: tanh saturates */
        gate[rng_int(rows * dim)] = (rng_int(2) ? 1 : -1) * (float)(10 + rng_int(100));
    float *out = b->alloc(b, (size_t)rows * dim);
    double *want = xmalloc((size_t)rows * dim * sizeof(double));
    b->gelu_mul(b, out, gate, up, rows, dim, stride);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < dim; j++)
            want[(size_t)r * dim + j] =
                gelu_ref(gate[(size_t)r * dim + j]) * up[(size_t)r * stride + j];
    close_all(out, want, (size_t)rows * dim, 1e-6, 1e-5, "gelu_mul");
    b->release(b, out);
    free(gate);
    free(up);
    free(want);
}

int main(void) {
    uint64_t seed = rng_seed_from_env();
    printf("seed %llu (replay with TEST_SEED=%llu)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    const char *isas[] = {"portable", "avx2", "avx512"};
    for (size_t k = 0; k < sizeof isas / sizeof isas[0]; k++) {
        setenv("GEMMA_CPU_ISA", isas[k], 1);
        backend *b = backend_cpu_new(k == 0 ? 1 : 2);
        const int before = failures;
        for (int rep = 0; rep < 2; rep++) {
            test_matmul(b);
            test_matmul_rowwise(b);
            const int hds[] = {8, 24, 32, 64, 128, 4 + rng_int(80)};
            for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++) {
                test_attention(b, 0, hds[h]);
                test_attention(b, 1 + rng_int(100), hds[h]);
            }
            test_attention_rowwise(b, 0);
            test_attention_rowwise(b, 1 + rng_int(40));
            test_gelu(b);
        }
        if (failures > before) fprintf(stderr, "(kernels capped at %s)\n", isas[k]);
        b->destroy(b);
    }
    unsetenv("GEMMA_CPU_ISA");
    if (failures) fprintf(stderr, "replay with TEST_SEED=%llu\n", (unsigned long long)seed);
    return test_exit("test_backend_cpu_chunk");
}
