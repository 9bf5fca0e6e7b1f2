/* backend_cpu.c: the reference backend, plain C with OpenMP.
 *
 * Decoding one token reads every weight once, so the one op that matters for speed is the
 * matmul. For one input row it splits the output rows over threads and streams each weight
 * row through a fused convert-and-dot kernel (a bf16 is the top half of an fp32: one shift);
 * for n input rows (prefill, teacher forcing) it converts a block of four weight rows to fp32
 * once and multiplies it with every input row from registers. The dot kernels come in three
 * builds - portable C, AVX2+FMA, AVX-512 - and the fastest one the CPU runs is picked at
 * start-up, so one binary runs everywhere. Small loops stay on one thread (PARALLEL). On
 * AVX-512, chunks of more than CPU_CHUNK_MIN rows take backend_cpu_gemm.c's kernels instead
 * (a blocked matrix product, attention over query blocks, a vectorised GELU); up to that many
 * rows every row is computed as in a single-row call, so verify passes match decode steps.
 * Everything else is linear in the activations and written for clarity; attention splits
 * (position, kv head) pairs over threads.
 *
 * Buffers are ordinary heap memory, so upload/download/copy are memcpy. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cpu_gemm.h"
#include "util.h"

/* The dot-product kernels, chosen once at start-up for this CPU (see kernels_select). */
typedef float (*dot_bf16_fn)(const uint16_t *w, const float *x, int n);
typedef float (*dot_f32_fn)(const float *w, const float *x, int n);
typedef void (*dot4_f32_fn)(const float *w, int stride, const float *x, int n, float out[4]);
typedef void (*tile4x4_fn)(const float *w, int cols, const float *x, float *out, int ostride);
typedef void (*cvt_f16_fn)(const uint16_t *src, float *dst, int n);

typedef struct {
    int n_threads;        /* threads for every parallel loop */
    const char *isa;      /* "avx512", "avx2" or "portable" */
    dot_bf16_fn dot_bf16; /* sum w[i] * x[i], w in bf16 */
    dot_f32_fn dot_f32;   /* sum w[i] * x[i] */
    dot4_f32_fn dot4_f32; /* out[k] = sum w[k * stride + i] * x[i] for k < 4 */
    tile4x4_fn tile4x4;   /* out[t * ostride + k] = sum w[k * cols + i] * x[t * cols + i] for
                             k, t < 4; NULL where dot4_f32 is as good */
    cvt_f16_fn cvt_f16;   /* dst[i] = src[i] as fp32, src in IEEE half */
    int chunk;      /* chunks of more than CPU_CHUNK_MIN rows take backend_cpu_gemm.c's kernels */
    quant_isa qisa; /* the build of quant_matmul for int8 / int4 weights: the same ISA */
} cpu_state;

/* Below this many multiply-adds (~10 us of one core) a loop runs on one thread: waking the
 * others costs more, and far more on a machine busier than its cores. */
#define PARALLEL(work) ((work) >= (1u << 18))

static int threads_of(const backend *b) {
    return ((const cpu_state *)b->impl)->n_threads;
}
static const cpu_state *state_of(const backend *b) {
    return (const cpu_state *)b->impl;
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

/* Portable kernels: `omp simd` lets the compiler reorder the sums into vector lanes. */
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

static void cvt_f16(const uint16_t *src, float *dst, int n) {
    for (int i = 0; i < n; i++)
        dst[i] = f16_to_f32(src[i]);
}

static void dot4_f32(const float *w, int stride, const float *x, int n, float out[4]) {
    for (int k = 0; k < 4; k++)
        out[k] = dot_f32(w + (size_t)k * stride, x, n);
}

#if defined(__x86_64__) && defined(__GNUC__)
/* x86 kernels, compiled for AVX2+FMA and AVX-512 whatever the build's -march, and used only
 * when the CPU has them. A bf16 is the top half of an fp32: widen to 32 bits, shift left 16. */
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) static __m256 bf16x8(const uint16_t *p) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

__attribute__((target("avx2,fma"))) static float dot_bf16_avx2(const uint16_t *w, const float *x,
                                                               int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(bf16x8(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(bf16x8(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(bf16x8(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(bf16x8(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(bf16x8(w + i), _mm256_loadu_ps(x + i), a0);
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        s += bf16_to_f32(w[i]) * x[i];
    return s;
}

__attribute__((target("avx2,fma"))) static float dot_f32_avx2(const float *w, const float *x,
                                                              int n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + i), _mm256_loadu_ps(x + i), a0);
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++)
        s += w[i] * x[i];
    return s;
}

/* Four weight rows against one input: each load of x feeds four FMAs. */
__attribute__((target("avx2,fma"))) static void dot4_f32_avx2(const float *w, int stride,
                                                              const float *x, int n, float out[4]) {
    const float *w0 = w, *w1 = w + stride, *w2 = w + 2 * (size_t)stride,
                *w3 = w + 3 * (size_t)stride;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + i), xv, a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + i), xv, a1);
        a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + i), xv, a2);
        a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + i), xv, a3);
    }
    out[0] = hsum256(a0);
    out[1] = hsum256(a1);
    out[2] = hsum256(a2);
    out[3] = hsum256(a3);
    for (; i < n; i++) {
        out[0] += w0[i] * x[i];
        out[1] += w1[i] * x[i];
        out[2] += w2[i] * x[i];
        out[3] += w3[i] * x[i];
    }
}

__attribute__((target("avx512f"))) static __m512 bf16x16(const uint16_t *p) {
    __m512i v = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

__attribute__((target("avx512f"))) static float dot_bf16_avx512(const uint16_t *w, const float *x,
                                                                int n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_fmadd_ps(bf16x16(w + i), _mm512_loadu_ps(x + i), a0);
        a1 = _mm512_fmadd_ps(bf16x16(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
        a2 = _mm512_fmadd_ps(bf16x16(w + i + 32), _mm512_loadu_ps(x + i + 32), a2);
        a3 = _mm512_fmadd_ps(bf16x16(w + i + 48), _mm512_loadu_ps(x + i + 48), a3);
    }
    for (; i + 16 <= n; i += 16)
        a0 = _mm512_fmadd_ps(bf16x16(w + i), _mm512_loadu_ps(x + i), a0);
    float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    for (; i < n; i++)
        s += bf16_to_f32(w[i]) * x[i];
    return s;
}

__attribute__((target("avx512f"))) static float dot_f32_avx512(const float *w, const float *x,
                                                               int n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0;
    int i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i + 16), _mm512_loadu_ps(x + i + 16), a1);
    }
    for (; i + 16 <= n; i += 16)
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w + i), _mm512_loadu_ps(x + i), a0);
    float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    for (; i < n; i++)
        s += w[i] * x[i];
    return s;
}

__attribute__((target("avx512f"))) static void
dot4_f32_avx512(const float *w, int stride, const float *x, int n, float out[4]) {
    const float *w0 = w, *w1 = w + stride, *w2 = w + 2 * (size_t)stride,
                *w3 = w + 3 * (size_t)stride;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 xv = _mm512_loadu_ps(x + i);
        a0 = _mm512_fmadd_ps(_mm512_loadu_ps(w0 + i), xv, a0);
        a1 = _mm512_fmadd_ps(_mm512_loadu_ps(w1 + i), xv, a1);
        a2 = _mm512_fmadd_ps(_mm512_loadu_ps(w2 + i), xv, a2);
        a3 = _mm512_fmadd_ps(_mm512_loadu_ps(w3 + i), xv, a3);
    }
    out[0] = _mm512_reduce_add_ps(a0);
    out[1] = _mm512_reduce_add_ps(a1);
    out[2] = _mm512_reduce_add_ps(a2);
    out[3] = _mm512_reduce_add_ps(a3);
    for (; i < n; i++) {
        out[0] += w0[i] * x[i];
        out[1] += w1[i] * x[i];
        out[2] += w2[i] * x[i];
        out[3] += w3[i] * x[i];
    }
}
/* Four weight rows against four input rows: 16 accumulators, and each load (of a weight row
 * or of an input) feeds four FMAs, so the small matmul runs from registers, not from L1. */
__attribute__((target("avx512f"))) static void
tile4x4_avx512(const float *w, int cols, const float *x, float *out, int ostride) {
    const size_t c = (size_t)cols;
    __m512 acc[4][4];
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 4; k++)
            acc[t][k] = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= cols; i += 16) {
        __m512 w0 = _mm512_loadu_ps(w + i), w1 = _mm512_loadu_ps(w + c + i),
               w2 = _mm512_loadu_ps(w + 2 * c + i), w3 = _mm512_loadu_ps(w + 3 * c + i);
        for (int t = 0; t < 4; t++) {
            __m512 xv = _mm512_loadu_ps(x + t * c + i);
            acc[t][0] = _mm512_fmadd_ps(w0, xv, acc[t][0]);
            acc[t][1] = _mm512_fmadd_ps(w1, xv, acc[t][1]);
            acc[t][2] = _mm512_fmadd_ps(w2, xv, acc[t][2]);
            acc[t][3] = _mm512_fmadd_ps(w3, xv, acc[t][3]);
        }
    }
    for (int t = 0; t < 4; t++)
        for (int k = 0; k < 4; k++) {
            float s = _mm512_reduce_add_ps(acc[t][k]);
            for (int j = i; j < cols; j++)
                s += w[k * c + j] * x[t * c + j];
            out[(size_t)t * ostride + k] = s;
        }
}
/* IEEE half to fp32 with the F16C conversion instruction. */
__attribute__((target("avx2,f16c"))) static void cvt_f16_f16c(const uint16_t *src, float *dst,
                                                              int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = f16_to_f32(src[i]);
}
#endif

/* The fastest kernels this CPU runs; GEMMA_CPU_ISA=portable|avx2|avx512 caps the choice (for
 * tests and comparisons). The choice is quant_isa_best's, so the quantized products
 * (quant_matmul.c) run the same build. */
static void kernels_select(cpu_state *st) {
    st->isa = "portable";
    st->dot_bf16 = dot_bf16;
    st->dot_f32 = dot_f32;
    st->dot4_f32 = dot4_f32;
    st->cvt_f16 = cvt_f16;
    st->qisa = quant_isa_best();
#if defined(__x86_64__) && defined(__GNUC__)
    if (st->qisa == QUANT_ISA_AVX512) {
        st->isa = "avx512";
        st->dot_bf16 = dot_bf16_avx512;
        st->dot_f32 = dot_f32_avx512;
        st->dot4_f32 = dot4_f32_avx512;
        st->tile4x4 = tile4x4_avx512;
        st->chunk = cpu_chunk_supported();
    } else if (st->qisa == QUANT_ISA_AVX2) {
        st->isa = "avx2";
        st->dot_bf16 = dot_bf16_avx2;
        st->dot_f32 = dot_f32_avx2;
        st->dot4_f32 = dot4_f32_avx2;
    }
    __builtin_cpu_init();
    if (strcmp(st->isa, "portable") && __builtin_cpu_supports("f16c")) st->cvt_f16 = cvt_f16_f16c;
#endif
}

/* Row r of w as fp32 into dst[cols]. */
static void row_to_f32(const cpu_state *st, const tensor *w, int r, float *dst) {
    size_t off = (size_t)r * (size_t)w->cols;
    if (w->dtype == DT_F32) {
        memcpy(dst, (const float *)w->data + off, (size_t)w->cols * sizeof(float));
    } else if (w->dtype == DT_BF16) {
        const uint16_t *src = (const uint16_t *)w->data + off;
#pragma omp simd
        for (int c = 0; c < w->cols; c++)
            dst[c] = bf16_to_f32(src[c]);
    } else {
        st->cvt_f16((const uint16_t *)w->data + off, dst, w->cols);
    }
}

/* Up to this many input rows a matmul computes every output with the one-row kernel, so a
 * row's result does not depend on how many rows share the call: a speculative verify pass
 * (k + 1 rows) then reproduces the single-token decode steps it stands for bit for bit, and
 * speculation stays exactly lossless. The weight row stays in L1 across the few input rows. */
#define MATMUL_ROWWISE_MAX CPU_CHUNK_MIN

/* Row r of w dotted with x[w->cols] by the one-row kernel (bf16 or f32 weights): the score of
 * the row-wise matmul and of the fused greedy head alike, so the two agree bit for bit. */
static inline float row_dot(const cpu_state *st, const tensor *w, int r, const float *x) {
    const size_t off = (size_t)r * (size_t)w->cols;
    return w->dtype == DT_BF16 ? st->dot_bf16((const uint16_t *)w->data + off, x, w->cols)
                               : st->dot_f32((const float *)w->data + off, x, w->cols);
}

/* The final logit softcap, one value (cpu_softcap and the fused head share it). */
static inline float softcap(float x, float cap) {
    return cap * tanhf(x / cap);
}

static void cpu_matmul(backend *b, float *out, const tensor *w, const float *x, int n) {
    const cpu_state *st = state_of(b);
    const int rows = w->rows, cols = w->cols;
    if (w->q) { /* int8 / int4 (DT_Q8 / DT_Q4): each row computed alone, whatever n */
        quant_matmul_isa(w->q, x, n, out, st->n_threads, st->qisa);
        return;
    }
    if (n > MATMUL_ROWWISE_MAX && st->chunk) {
        cpu_gemm_avx512(out, w, x, n, st->n_threads);
        return;
    }
    if (n <= MATMUL_ROWWISE_MAX && w->dtype != DT_F16) {
        /* The decode path: one fused pass over the weights. */
#pragma omp parallel for schedule(static)                                                          \
    num_threads(st->n_threads) if (PARALLEL((size_t)rows * cols * n))
        for (int r = 0; r < rows; r++)
            for (int t = 0; t < n; t++)
                out[(size_t)t * rows + r] = row_dot(st, w, r, x + (size_t)t * cols);
        return;
    }
    /* n rows at once (or f16): convert a block of four weight rows to fp32 once, then dot
     * the block with every input row (each load of an input feeds four rows). */
    const int blocks = (rows + 3) / 4;
#pragma omp parallel num_threads(st->n_threads) if (PARALLEL((size_t)rows * cols * n))
    {
        float *tmp = xmalloc(4 * (size_t)cols * sizeof(float));
#pragma omp for schedule(static)
        for (int blk = 0; blk < blocks; blk++) {
            const int r0 = blk * 4, nr = rows - r0 < 4 ? rows - r0 : 4;
            const float *wr;
            if (w->dtype == DT_F32) {
                wr = (const float *)w->data + (size_t)r0 * (size_t)cols;
            } else {
                for (int k = 0; k < nr; k++)
                    row_to_f32(st, w, r0 + k, tmp + (size_t)k * cols);
                wr = tmp;
            }
            int t = 0;
            if (nr == 4 && st->tile4x4 && n > MATMUL_ROWWISE_MAX) /* f16: as for one row */
                for (; t + 4 <= n; t += 4)
                    st->tile4x4(wr, cols, x + (size_t)t * cols, out + (size_t)t * rows + r0, rows);
            for (; t < n; t++) {
                const float *xt = x + (size_t)t * cols;
                float *ot = out + (size_t)t * rows + r0;
                if (nr == 4) {
                    st->dot4_f32(wr, cols, xt, cols, ot);
                } else {
                    for (int k = 0; k < nr; k++)
                        ot[k] = st->dot_f32(wr + (size_t)k * cols, xt, cols);
                }
            }
        }
        free(tmp);
    }
}

/* ---- norms, RoPE, activations --------------------------------------------------------- */

static void cpu_rmsnorm(backend *b, float *out, const float *x, const tensor *w, int n_vec, int dim,
                        float eps) {
    float *wf = NULL; /* the weight as fp32, converted once per call */
    const int vec = state_of(b)->chunk;
    if (w) {
        wf = xmalloc((size_t)dim * sizeof(float));
        row_to_f32(state_of(b), w, 0, wf);
    }
#pragma omp parallel for schedule(static)                                                          \
    num_threads(threads_of(b)) if (PARALLEL((size_t)n_vec * dim))
    for (int v = 0; v < n_vec; v++) {
        const float *xv = x + (size_t)v * dim;
        float *ov = out + (size_t)v * dim;
        double ss = 0.0; /* in fp64: in 16 lanes on AVX-512, else in order */
        if (vec) {
            ss = cpu_sumsq_avx512(xv, dim);
        } else {
            for (int i = 0; i < dim; i++)
                ss += (double)xv[i] * xv[i];
        }
        float inv = 1.0f / sqrtf((float)(ss / dim) + eps);
        if (wf) {
#pragma omp simd
            for (int i = 0; i < dim; i++)
                ov[i] = xv[i] * inv * wf[i];
        } else {
#pragma omp simd
            for (int i = 0; i < dim; i++)
                ov[i] = xv[i] * inv;
        }
    }
    free(wf);
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
    const cpu_state *st = state_of(b);
    if (n_tok > CPU_CHUNK_MIN && st->chunk) {
        cpu_attention_avx512(out, q, kc, vc, n_tok, pos0, len, window, n_heads, n_kv_heads,
                             head_dim, st->n_threads);
        return;
    }
    const int group = n_heads / n_kv_heads;
    const size_t kv_dim = (size_t)n_kv_heads * head_dim;
    const int span_max = window > 0 && window < pos0 + n_tok ? window : pos0 + n_tok;
    /* One task per (position, kv head): the query heads that share a kv head walk its keys
     * and values together, so each K/V row is read once per group rather than once per head
     * (grouped-query attention). */
    const int tasks = n_tok * n_kv_heads;
#pragma omp parallel num_threads(                                                                  \
    threads_of(b)) if (PARALLEL((size_t)tasks * group * span_max * head_dim))
    {
        float *score = xmalloc((size_t)group * span_max * sizeof(float)); /* [group][span] */
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < tasks; task++) {
            const int t = task / n_kv_heads, kvh = task % n_kv_heads, p = pos0 + t;
            const int lo = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
            const int span = p - lo + 1;
            const float *q0 = q + ((size_t)t * n_heads + (size_t)kvh * group) * head_dim;
            for (int j = lo; j <= p; j++) {
                const float *kj = kc + (size_t)(j % len) * kv_dim + (size_t)kvh * head_dim;
                for (int g = 0; g < group; g++)
                    score[(size_t)g * span + (j - lo)] =
                        st->dot_f32(q0 + (size_t)g * head_dim, kj, head_dim);
            }
            /* softmax over each head's scores, in fp32 with an fp64 sum */
            for (int g = 0; g < group; g++) {
                float *sg = score + (size_t)g * span, mx = -INFINITY;
                for (int j = 0; j < span; j++)
                    if (sg[j] > mx) mx = sg[j];
                double sum = 0.0;
                for (int j = 0; j < span; j++) {
                    sg[j] = expf(sg[j] - mx);
                    sum += sg[j];
                }
                const float inv = (float)(1.0 / sum);
                for (int j = 0; j < span; j++)
                    sg[j] *= inv;
            }
            float *o0 = out + ((size_t)t * n_heads + (size_t)kvh * group) * head_dim;
            memset(o0, 0, (size_t)group * head_dim * sizeof(float));
            for (int j = lo; j <= p; j++) {
                const float *vj = vc + (size_t)(j % len) * kv_dim + (size_t)kvh * head_dim;
                for (int g = 0; g < group; g++) {
                    const float wj = score[(size_t)g * span + (j - lo)];
                    float *og = o0 + (size_t)g * head_dim;
#pragma omp simd
                    for (int i = 0; i < head_dim; i++)
                        og[i] += wj * vj[i];
                }
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
    if (rows > CPU_CHUNK_MIN && state_of(b)->chunk) {
        cpu_gelu_mul_avx512(out, gate, up, rows, dim, up_stride, threads_of(b));
        return;
    }
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
    for (int t = 0; t < n; t++) {
        float *o = out + (size_t)t * table->cols;
        row_to_f32(state_of(b), table, ids[t], o);
        for (int c = 0; c < table->cols; c++)
            o[c] *= s;
    }
}

static void cpu_softcap(backend *b, float *x, size_t n, float cap) {
    (void)b;
    for (size_t i = 0; i < n; i++)
        x[i] = softcap(x[i], cap);
}

/* The fused greedy head (backend.h): each thread scans a contiguous block of weight rows
 * keeping its best per input row, then the blocks are merged in row order, so ties go to the
 * first row as in cpu_argmax. Scores are the row-wise kernel's (as cpu_matmul's for few rows). */
static int cpu_argmax(backend *b, const float *x, int n);
static void cpu_matmul_argmax(backend *b, int *out, const tensor *w, const float *x, int n,
                              float cap) {
    const cpu_state *st = state_of(b);
    const int rows = w->rows, cols = w->cols;
    if (n > MATMUL_ROWWISE_MAX || w->dtype == DT_F16 || w->q) { /* blocked or int: unfused */
        float *s = xmalloc((size_t)n * rows * sizeof(float));
        cpu_matmul(b, s, w, x, n);
        if (cap > 0) cpu_softcap(b, s, (size_t)n * rows, cap);
        for (int t = 0; t < n; t++)
            out[t] = cpu_argmax(b, s + (size_t)t * rows, rows);
        free(s);
        return;
    }
    const int nt = PARALLEL((size_t)rows * cols * n) ? st->n_threads : 1;
    float *best = xmalloc((size_t)nt * n * sizeof(float));
    int *arg = xmalloc((size_t)nt * n * sizeof(int));
    for (int i = 0; i < nt * n; i++)
        arg[i] = -1; /* also for threads OpenMP does not start */
#pragma omp parallel num_threads(nt)
    {
        const int T = omp_get_num_threads(), id = omp_get_thread_num();
        const int r0 = (int)((long)rows * id / T), r1 = (int)((long)rows * (id + 1) / T);
        for (int r = r0; r < r1; r++) {
            for (int t = 0; t < n; t++) {
                float s = row_dot(st, w, r, x + (size_t)t * cols);
                if (cap > 0) s = softcap(s, cap);
                if (arg[id * n + t] < 0 || s > best[id * n + t]) {
                    best[id * n + t] = s;
                    arg[id * n + t] = r;
                }
            }
        }
    }
    for (int t = 0; t < n; t++) {
        int a = -1;
        float v = 0;
        for (int i = 0; i < nt; i++)
            if (arg[i * n + t] >= 0 && (a < 0 || best[i * n + t] > v)) {
                a = arg[i * n + t];
                v = best[i * n + t];
            }
        out[t] = a;
    }
    free(best);
    free(arg);
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
    kernels_select(st);
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
    b->matmul_argmax = cpu_matmul_argmax;
    b->destroy = cpu_destroy;
    return b;
}
