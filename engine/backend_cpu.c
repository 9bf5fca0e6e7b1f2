/* backend_cpu.c: the reference backend, plain C with OpenMP.
 *
 * Decoding one token reads every weight once, so the one op that matters for speed is the
 * matmul: it splits the output rows over threads, converts bf16 to fp32 on the fly inside the
 * dot product (a shift), and for n > 1 rows of input reads each weight row once and dots it
 * with all n inputs while it sits in L1. Everything else is linear in the activations and
 * written for clarity; attention splits (position, head) pairs over threads.
 *
 * Buffers are ordinary heap memory, so upload/download/copy are memcpy. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "util.h"

typedef struct {
    int n_threads; /* threads for every parallel loop */
} cpu_state;

static int threads_of(const backend *b) {
    return ((const cpu_state *)b->impl)->n_threads;
}

static float *cpu_alloc(backend *b, size_t n) {
    (void)b;
    return xcalloc(n ? n : 1, sizeof(float));
}

static void cpu_release(backend *b, float *p) {
    (void)b;
    free(p);
}

static void cpu_copy(backend *b, float *dst, const float *src, size_t n) {
    (void)b;
    if (n) memmove(dst, src, n * sizeof(float));
}

/* ---- matmul -------------------------------------------------------------------------- */

static float dot_f32(const float *w, const float *x, int n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += w[i] * x[i];
    return s;
}

static float dot_bf16(const uint16_t *w, const float *x, int n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += bf16_to_f32(w[i]) * x[i];
    return s;
}

/* Row r of w as fp32 into dst[cols]. */
static void row_to_f32(const tensor *w, int r, float *dst) {
    size_t off = (size_t)r * (size_t)w->cols;
    if (w->dtype == DT_F32) {
        memcpy(dst, (const float *)w->data + off, (size_t)w->cols * sizeof(float));
    } else if (w->dtype == DT_BF16) {
        const uint16_t *src = (const uint16_t *)w->data + off;
#pragma omp simd
        for (int c = 0; c < w->cols; c++)
            dst[c] = bf16_to_f32(src[c]);
    } else {
        const uint16_t *src = (const uint16_t *)w->data + off;
        for (int c = 0; c < w->cols; c++)
            dst[c] = f16_to_f32(src[c]);
    }
}

static void cpu_matmul(backend *b, float *out, const tensor *w, const float *x, int n) {
    const int rows = w->rows, cols = w->cols;
    if (n == 1 && w->dtype != DT_F16) {
        /* The decode path: one fused pass over the weights. */
#pragma omp parallel for schedule(static) num_threads(threads_of(b))
        for (int r = 0; r < rows; r++) {
            size_t off = (size_t)r * (size_t)cols;
            out[r] = w->dtype == DT_BF16 ? dot_bf16((const uint16_t *)w->data + off, x, cols)
                                         : dot_f32((const float *)w->data + off, x, cols);
        }
        return;
    }
    /* n rows at once (or f16): convert each weight row once, dot it with every input row. */
#pragma omp parallel num_threads(threads_of(b))
    {
        float *row = xmalloc((size_t)cols * sizeof(float));
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++) {
            const float *wr;
            if (w->dtype == DT_F32) {
                wr = (const float *)w->data + (size_t)r * (size_t)cols;
            } else {
                row_to_f32(w, r, row);
                wr = row;
            }
            for (int t = 0; t < n; t++)
                out[(size_t)t * rows + r] = dot_f32(wr, x + (size_t)t * cols, cols);
        }
        free(row);
    }
}

/* ---- norms, RoPE, activations --------------------------------------------------------- */

static void cpu_rmsnorm(backend *b, float *out, const float *x, const tensor *w, int n_vec, int dim,
                        float eps) {
#pragma omp parallel for schedule(static) num_threads(threads_of(b)) if (n_vec > 8)
    for (int v = 0; v < n_vec; v++) {
        const float *xv = x + (size_t)v * dim;
        float *ov = out + (size_t)v * dim;
        double ss = 0.0;
        for (int i = 0; i < dim; i++)
            ss += (double)xv[i] * xv[i];
        float inv = 1.0f / sqrtf((float)(ss / dim) + eps);
        if (w) {
            for (int i = 0; i < dim; i++)
                ov[i] = xv[i] * inv * tensor_get(w, (size_t)i);
        } else {
            for (int i = 0; i < dim; i++)
                ov[i] = xv[i] * inv;
        }
    }
}

static void cpu_rope(backend *b, float *x, int n_tok, int n_heads, int head_dim, int pos0,
                     const float *inv_freq) {
    (void)b;
    const int half = head_dim / 2;
    for (int t = 0; t < n_tok; t++) {
        /* The angle is computed in fp32 like transformers (inv_freq * position in fp32). */
        float pos = (float)(pos0 + t);
        for (int i = 0; i < half; i++) {
            float ang = inv_freq[i] * pos;
            float c = cosf(ang), s = sinf(ang);
            for (int h = 0; h < n_heads; h++) {
                float *xh = x + ((size_t)t * n_heads + h) * head_dim;
                float x1 = xh[i], x2 = xh[i + half];
                xh[i] = x1 * c - x2 * s;
                xh[i + half] = x2 * c + x1 * s;
            }
        }
    }
}

static void cpu_kv_write(backend *b, float *cache, const float *src, int n_tok, int kv_dim,
                         int pos0, int len) {
    (void)b;
    for (int t = 0; t < n_tok; t++)
        memcpy(cache + (size_t)((pos0 + t) % len) * kv_dim, src + (size_t)t * kv_dim,
               (size_t)kv_dim * sizeof(float));
}

static void cpu_attention(backend *b, float *out, const float *q, const float *kc, const float *vc,
                          int n_tok, int pos0, int len, int window, int n_heads, int n_kv_heads,
                          int head_dim) {
    const int group = n_heads / n_kv_heads;
    const size_t kv_dim = (size_t)n_kv_heads * head_dim;
    const int pairs = n_tok * n_heads;
#pragma omp parallel num_threads(threads_of(b)) if (pairs > 1)
    {
        float *score = xmalloc((size_t)(pos0 + n_tok) * sizeof(float));
#pragma omp for schedule(dynamic, 1)
        for (int ph = 0; ph < pairs; ph++) {
            int t = ph / n_heads, h = ph % n_heads, kvh = h / group;
            int p = pos0 + t;
            int lo = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
            const float *qh = q + ((size_t)t * n_heads + h) * head_dim;
            float mx = -INFINITY;
            for (int j = lo; j <= p; j++) {
                const float *kj = kc + (size_t)(j % len) * kv_dim + (size_t)kvh * head_dim;
                float s = dot_f32(qh, kj, head_dim);
                score[j - lo] = s;
                if (s > mx) mx = s;
            }
            double sum = 0.0;
            for (int j = lo; j <= p; j++) {
                float e = expf(score[j - lo] - mx);
                score[j - lo] = e;
                sum += e;
            }
            float inv = (float)(1.0 / sum);
            float *oh = out + ((size_t)t * n_heads + h) * head_dim;
            memset(oh, 0, (size_t)head_dim * sizeof(float));
            for (int j = lo; j <= p; j++) {
                const float *vj = vc + (size_t)(j % len) * kv_dim + (size_t)kvh * head_dim;
                float wj = score[j - lo] * inv;
#pragma omp simd
                for (int i = 0; i < head_dim; i++)
                    oh[i] += wj * vj[i];
            }
        }
        free(score);
    }
}

static float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

static void cpu_gelu_mul(backend *b, float *out, const float *gate, const float *up, int rows,
                         int dim, int up_stride) {
    (void)b;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < dim; j++)
            out[(size_t)r * dim + j] =
                gelu_tanh(gate[(size_t)r * dim + j]) * up[(size_t)r * up_stride + j];
}

static void cpu_add(backend *b, float *out, const float *x, const float *y, size_t n) {
    (void)b;
    for (size_t i = 0; i < n; i++)
        out[i] = x[i] + y[i];
}

static void cpu_scale(backend *b, float *x, float s, size_t n) {
    (void)b;
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}

static void cpu_embed(backend *b, float *out, const tensor *table, const int *ids, int n, float s) {
    (void)b;
    for (int t = 0; t < n; t++) {
        float *o = out + (size_t)t * table->cols;
        row_to_f32(table, ids[t], o);
        for (int c = 0; c < table->cols; c++)
            o[c] *= s;
    }
}

static void cpu_softcap(backend *b, float *x, size_t n, float cap) {
    (void)b;
    for (size_t i = 0; i < n; i++)
        x[i] = cap * tanhf(x[i] / cap);
}

static int cpu_argmax(backend *b, const float *x, int n) {
    (void)b;
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static void cpu_destroy(backend *b) {
    free(b->impl);
    free(b);
}

backend *backend_cpu_new(int n_threads) {
    backend *b = xcalloc(1, sizeof *b);
    cpu_state *st = xcalloc(1, sizeof *st);
    st->n_threads = n_threads > 0 ? n_threads : omp_get_max_threads();
    b->name = "cpu";
    b->impl = st;
    b->alloc = cpu_alloc;
    b->release = cpu_release;
    b->upload = cpu_copy;
    b->download = cpu_copy;
    b->copy = cpu_copy;
    b->matmul = cpu_matmul;
    b->rmsnorm = cpu_rmsnorm;
    b->rope = cpu_rope;
    b->kv_write = cpu_kv_write;
    b->attention = cpu_attention;
    b->gelu_mul = cpu_gelu_mul;
    b->add = cpu_add;
    b->scale = cpu_scale;
    b->embed = cpu_embed;
    b->softcap = cpu_softcap;
    b->argmax = cpu_argmax;
    b->destroy = cpu_destroy;
    return b;
}
