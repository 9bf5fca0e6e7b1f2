/* backend_cpu_gemm.c: AVX-512 kernels for chunks of many positions (see backend_cpu_gemm.h).
 *
 * Matrix product. out[t][r] = w[r] . x[t] is computed as outer products: x is transposed
 * once per call into xt[c][t] (inputs padded with zero rows to a multiple of 16), a block of
 * GEMM_RB weight rows is converted to fp32 once (bf16: a shift; f16: vcvtph2ps) and a tile of
 * GEMM_RB rows by 32 inputs is accumulated in 24 registers: per c, two vector loads of xt and
 * GEMM_RB broadcasts of weights feed 2 * GEMM_RB FMAs, with no horizontal sums. Threads split
 * the blocks of weight rows; each weight is read once per call, and no fp32 copy of a weight
 * outlives its block (a few KiB per thread).
 *
 * Attention. One task is (kv head, block of ATT_QB query positions): the keys the block sees
 * are transposed once into kt[d][j], so the scores of a query against 16 keys are vector
 * FMAs over d (two chains, even and odd d); the query heads sharing the kv head (and so the key
 * range) go four at a time. The softmax runs on vectors with a Cephes-style exp; the values are
 * summed four heads at a time from registers.
 *
 * GELU. gelu_tanh(x) = 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)), with the same exp.
 *
 * Results differ from the row-wise kernels by rounding only (other summation orders, exp and
 * tanh a few ulp apart from libm), which is why backend_cpu.c uses them only for chunks. */
#include "backend_cpu_gemm.h"

#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

int cpu_chunk_supported(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}

/* ---- matrix product ------------------------------------------------------------------- */

#define GEMM_RB 12 /* weight rows per tile */
#define GEMM_TB 32 /* input rows per tile: two vectors */

/* Below this many multiply-adds (~40 us of one core) a call runs on one thread: on a machine
 * busier than its cores, every fork and join can wait for a descheduled thread. */
#define GEMM_PARALLEL(work) ((work) >= (1u << 21))

AVX512 static inline __mmask16 tail_mask(int k) {
    return k >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << k) - 1);
}

/* r[0..16) as a 16 x 16 matrix (r[i] row i), transposed in place. */
__attribute__((target("avx512f"), always_inline)) static inline void transpose16(__m512 r[16]) {
    __m512 t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
        r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
        r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
        r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
    }
    for (int h = 0; h < 16; h += 8)
        for (int i = 0; i < 4; i++) {
            t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
            t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
        }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}

/* Row r of w, columns c0 .. c0 + nc (nc <= 16), as fp32 (zero past nc). */
AVX512 static inline __m512 load_row16(const tensor *w, int r, int c0, int nc) {
    const size_t off = (size_t)r * w->cols + c0;
    if (w->dtype == DT_F32)
        return _mm512_maskz_loadu_ps(tail_mask(nc), (const float *)w->data + off);
    const uint16_t *src = (const uint16_t *)w->data + off;
    __m256i h;
    if (nc == 16) {
        h = _mm256_loadu_si256((const __m256i *)src);
    } else {
        uint16_t part[16] = {0};
        memcpy(part, src, (size_t)nc * sizeof(uint16_t));
        h = _mm256_loadu_si256((const __m256i *)part);
    }
    if (w->dtype == DT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Rows r0 .. r0 + nr of w as fp32, interleaved: wf[c][i] = w[r0 + i][c] for i < GEMM_RB (zero
 * for i >= nr), so that a step of the tile kernel broadcasts GEMM_RB neighbours. */
AVX512 static void pack_rows(const tensor *w, int r0, int nr, float *wf) {
    const int cols = w->cols;
    for (int c0 = 0; c0 < cols; c0 += 16) {
        const int nc = cols - c0 < 16 ? cols - c0 : 16;
        __m512 r[16];
        for (int i = 0; i < 16; i++)
            r[i] = i < nr ? load_row16(w, r0 + i, c0, nc) : _mm512_setzero_ps();
        transpose16(r);
        for (int c = 0; c < nc; c++)
            _mm512_mask_storeu_ps(wf + (size_t)(c0 + c) * GEMM_RB, tail_mask(GEMM_RB), r[c]);
    }
}

/* Rows r0 .. r0 + nr of w into L2, ahead of pack_rows (L1 is busy with the inputs). */
static void prefetch_rows(const tensor *w, int r0, int nr) {
    const size_t bytes = (size_t)w->cols * dtype_size(w->dtype);
    const char *p = (const char *)w->data + (size_t)r0 * bytes;
    for (size_t off = 0; off < (size_t)nr * bytes; off += 64)
        _mm_prefetch(p + off, _MM_HINT_T1);
}

/* acc[i] (i < GEMM_RB) holds outputs (t, i) for 16 inputs t: out[t * ld + i] for t < tn,
 * i < nr. */
__attribute__((target("avx512f"), always_inline)) static inline void
store_block(float *out, size_t ld, const __m512 acc[GEMM_RB], int nr, int tn) {
    __m512 r[16];
    for (int i = 0; i < 16; i++)
        r[i] = i < GEMM_RB ? acc[i] : _mm512_setzero_ps();
    transpose16(r);
    const __mmask16 m = tail_mask(nr);
    for (int t = 0; t < tn; t++)
        _mm512_mask_storeu_ps(out + (size_t)t * ld, m, r[t]);
}

/* out[t][i] = sum_c wf[c][i] * xt[c][t] for t < tn (tn <= 16 * nv, nv = 1 or 2), i < nr;
 * out rows ld apart. */
AVX512 static inline void gemm_tile(const float *wf, int cols, const float *xt, int ldt, int nv,
                                    float *out, size_t ld, int nr, int tn) {
    __m512 a0[GEMM_RB], a1[GEMM_RB];
#pragma GCC unroll 12
    for (int i = 0; i < GEMM_RB; i++)
        a0[i] = a1[i] = _mm512_setzero_ps();
    if (nv == 2) {
        for (int c = 0; c < cols; c++) {
            const __m512 x0 = _mm512_loadu_ps(xt + (size_t)c * ldt),
                         x1 = _mm512_loadu_ps(xt + (size_t)c * ldt + 16);
#pragma GCC unroll 12
            for (int i = 0; i < GEMM_RB; i++) {
                const __m512 b = _mm512_set1_ps(wf[(size_t)c * GEMM_RB + i]);
                a0[i] = _mm512_fmadd_ps(b, x0, a0[i]);
                a1[i] = _mm512_fmadd_ps(b, x1, a1[i]);
            }
        }
    } else {
        for (int c = 0; c < cols; c++) {
            const __m512 x0 = _mm512_loadu_ps(xt + (size_t)c * ldt);
#pragma GCC unroll 12
            for (int i = 0; i < GEMM_RB; i++)
                a0[i] = _mm512_fmadd_ps(_mm512_set1_ps(wf[(size_t)c * GEMM_RB + i]), x0, a0[i]);
        }
    }
    store_block(out, ld, a0, nr, tn < 16 ? tn : 16);
    if (tn > 16) store_block(out + 16 * ld, ld, a1, nr, tn - 16);
}

AVX512 void cpu_gemm_avx512(float *out, const tensor *w, const float *x, int n, int n_threads) {
    const int rows = w->rows, cols = w->cols, ldt = (n + 15) / 16 * 16;
    const int blocks = (rows + GEMM_RB - 1) / GEMM_RB;
    float *xt = xmalloc((size_t)cols * ldt * sizeof(float));
    /* xt[c][t] = x[t][c], zero for t >= n, in 16 x 16 blocks (a small share of the work, done
     * before the threads start so that they meet only at the end) */
    for (int c0 = 0; c0 < cols; c0 += 16) {
        const int nc = cols - c0 < 16 ? cols - c0 : 16;
        const __mmask16 m = tail_mask(nc);
        for (int t0 = 0; t0 < ldt; t0 += 16) {
            __m512 r[16];
            for (int t = 0; t < 16; t++)
                r[t] = t0 + t < n ? _mm512_maskz_loadu_ps(m, x + (size_t)(t0 + t) * cols + c0)
                                  : _mm512_setzero_ps();
            transpose16(r);
            for (int c = 0; c < nc; c++)
                _mm512_storeu_ps(xt + (size_t)(c0 + c) * ldt + t0, r[c]);
        }
    }
    const int nt = GEMM_PARALLEL((size_t)rows * cols * n) ? n_threads : 1;
#pragma omp parallel num_threads(nt)
    {
        float *wf = xmalloc((size_t)GEMM_RB * cols * sizeof(float));
        /* dynamic: a thread that runs takes the blocks of one that the OS has put aside */
#pragma omp for schedule(dynamic, 2)
        for (int blk = 0; blk < blocks; blk++) {
            const int r0 = blk * GEMM_RB, nr = rows - r0 < GEMM_RB ? rows - r0 : GEMM_RB;
            pack_rows(w, r0, nr, wf);
            if (r0 + GEMM_RB < rows) /* the next block, most often this thread's */
                prefetch_rows(w, r0 + GEMM_RB,
                              rows - r0 - GEMM_RB < GEMM_RB ? rows - r0 - GEMM_RB : GEMM_RB);
            for (int t0 = 0; t0 < n; t0 += GEMM_TB) {
                const int nv = ldt - t0 >= GEMM_TB ? 2 : 1;
                const int tn = n - t0 < GEMM_TB ? n - t0 : GEMM_TB;
                gemm_tile(wf, cols, xt + t0, ldt, nv, out + (size_t)t0 * rows + r0, rows, nr, tn);
            }
        }
        free(wf);
    }
    free(xt);
}

AVX512 double cpu_sumsq_avx512(const float *x, int n) {
    __m512d a0 = _mm512_setzero_pd(), a1 = a0;
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 v = _mm512_loadu_ps(x + i);
        const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v)),
                      hi = _mm512_cvtps_pd(
                          _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        a0 = _mm512_fmadd_pd(lo, lo, a0);
        a1 = _mm512_fmadd_pd(hi, hi, a1);
    }
    double s = _mm512_reduce_add_pd(_mm512_add_pd(a0, a1));
    for (; i < n; i++)
        s += (double)x[i] * x[i];
    return s;
}

/* ---- exp, softmax, GELU --------------------------------------------------------------- */

/* e^x to about one ulp (Cephes expf's polynomial on x - n ln2, scaled by 2^n); x is clamped
 * to [-104, 89], beyond which fp32 holds 0 or infinity anyway. */
AVX512 static inline __m512 exp512(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 y =
        _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
}

/* s[0 .. n) = softmax(s[0 .. n)) in place. */
AVX512 static void softmax512(float *s, int n) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int j = 0; j < n; j += 16)
        mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(mx, tail_mask(n - j), s + j));
    const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < n; j += 16) {
        const __mmask16 k = tail_mask(n - j);
        const __m512 e = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + j), m));
        _mm512_mask_storeu_ps(s + j, k, e);
        sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(k, e));
    }
    const __m512 inv = _mm512_set1_ps((float)(1.0 / (double)_mm512_reduce_add_ps(sum)));
    for (int j = 0; j < n; j += 16) {
        const __mmask16 k = tail_mask(n - j);
        _mm512_mask_storeu_ps(s + j, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, s + j), inv));
    }
}

AVX512 void cpu_gelu_mul_avx512(float *out, const float *gate, const float *up, int rows, int dim,
                                int up_stride, int n_threads) {
    const __m512 c1 = _mm512_set1_ps(-2.0f * 0.7978845608028654f),
                 c3 = _mm512_set1_ps(-2.0f * 0.7978845608028654f * 0.044715f),
                 one = _mm512_set1_ps(1.0f);
#pragma omp parallel for schedule(static)                                                          \
    num_threads(n_threads) if ((size_t)rows * dim >= (1u << 17))
    for (int r = 0; r < rows; r++) {
        const float *g = gate + (size_t)r * dim, *u = up + (size_t)r * up_stride;
        float *o = out + (size_t)r * dim;
        for (int j = 0; j < dim; j += 16) {
            const __mmask16 k = tail_mask(dim - j);
            const __m512 x = _mm512_maskz_loadu_ps(k, g + j);
            /* -2u = -2 sqrt(2/pi) (x + 0.044715 x^3) */
            const __m512 m2u = _mm512_mul_ps(x, _mm512_fmadd_ps(_mm512_mul_ps(x, x), c3, c1));
            const __m512 gl = _mm512_div_ps(x, _mm512_add_ps(one, exp512(m2u)));
            _mm512_mask_storeu_ps(o + j, k, _mm512_mul_ps(gl, _mm512_maskz_loadu_ps(k, u + j)));
        }
    }
}

/* ---- attention ------------------------------------------------------------------------ */

#define ATT_QB 16 /* query positions per task */

/* s[g][j] = q_g . kt[.][j] for j < span (rounded up to 16; kt has that many columns, ldk
 * apart), ng <= 4 query heads of head_dim hd at q (hd apart), s rows ld apart. */
__attribute__((target("avx512f"), always_inline)) static inline void
scores_k(float *s, int ld, const float *q, const int ng, int hd, const float *kt, int ldk,
         int span) {
    for (int j = 0; j < span; j += 16) {
        /* two chains per head (even and odd d), added at the end: shorter sums, more ILP */
        __m512 a[4][2];
#pragma GCC unroll 4
        for (int g = 0; g < ng; g++)
            a[g][0] = a[g][1] = _mm512_setzero_ps();
        const float *kj = kt + j;
        int d = 0;
        for (; d + 2 <= hd; d += 2) {
            const __m512 k0 = _mm512_loadu_ps(kj + (size_t)d * ldk),
                         k1 = _mm512_loadu_ps(kj + (size_t)(d + 1) * ldk);
#pragma GCC unroll 4
            for (int g = 0; g < ng; g++) {
                a[g][0] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d]), k0, a[g][0]);
                a[g][1] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d + 1]), k1, a[g][1]);
            }
        }
        if (d < hd) {
            const __m512 k0 = _mm512_loadu_ps(kj + (size_t)d * ldk);
#pragma GCC unroll 4
            for (int g = 0; g < ng; g++)
                a[g][0] = _mm512_fmadd_ps(_mm512_set1_ps(q[g * hd + d]), k0, a[g][0]);
        }
#pragma GCC unroll 4
        for (int g = 0; g < ng; g++)
            _mm512_storeu_ps(s + (size_t)g * ld + j, _mm512_add_ps(a[g][0], a[g][1]));
    }
}

AVX512 static void scores4(float *s, int ld, const float *q, int ng, int hd, const float *kt,
                           int ldk, int span) {
    if (ng == 4)
        scores_k(s, ld, q, 4, hd, kt, ldk, span);
    else if (ng == 3)
        scores_k(s, ld, q, 3, hd, kt, ldk, span);
    else if (ng == 2)
        scores_k(s, ld, q, 2, hd, kt, ldk, span);
    else
        scores_k(s, ld, q, 1, hd, kt, ldk, span);
}

/* o_g[0 .. 16 nv) = sum_j p_g[j] v[j] for ng <= 4 heads (o_g 16 nv apart, p_g ld apart), over
 * the value rows of keys lo .. lo + span at vc (a ring of len rows, kv_dim apart, the head's
 * offset applied); ng, nv <= 4 are constants where it is inlined. */
__attribute__((target("avx512f"), always_inline)) static inline void
values_k(float *o, const float *p, int ld, const int ng, const int nv, const float *vc, int lo,
         int span, int len, size_t kv_dim) {
    __m512 acc[4][4];
#pragma GCC unroll 4
    for (int g = 0; g < ng; g++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            acc[g][v] = _mm512_setzero_ps();
    for (int j = 0, row = lo % len; j < span; j++, row = row + 1 == len ? 0 : row + 1) {
        const float *vj = vc + (size_t)row * kv_dim;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) {
            const __m512 vv = _mm512_loadu_ps(vj + 16 * v);
#pragma GCC unroll 4
            for (int g = 0; g < ng; g++)
                acc[g][v] = _mm512_fmadd_ps(_mm512_set1_ps(p[(size_t)g * ld + j]), vv, acc[g][v]);
        }
    }
#pragma GCC unroll 4
    for (int g = 0; g < ng; g++)
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++)
            _mm512_storeu_ps(o + (size_t)g * nv * 16 + 16 * v, acc[g][v]);
}

/* As values_k for any hd that is a multiple of 16 (o_g hd apart). */
AVX512 static void values4(float *o, const float *p, int ld, int ng, int hd, const float *vc,
                           int lo, int span, int len, size_t kv_dim) {
    const int nv = hd / 16;
#define VALUES_CASE(NG, NV)                                                                        \
    if (ng == NG && nv == NV) {                                                                    \
        values_k(o, p, ld, NG, NV, vc, lo, span, len, kv_dim);                                     \
        return;                                                                                    \
    }
    VALUES_CASE(4, 2);
    VALUES_CASE(4, 4);
    VALUES_CASE(4, 1);
    VALUES_CASE(4, 3);
    VALUES_CASE(3, 2);
    VALUES_CASE(3, 4);
    VALUES_CASE(2, 2);
    VALUES_CASE(2, 4);
    VALUES_CASE(1, 2);
    VALUES_CASE(1, 4);
#undef VALUES_CASE
    for (int g = 0; g < ng; g++)
        for (int v = 0; v < nv; v++)
            values_k(o + (size_t)g * hd + 16 * v, p + (size_t)g * ld, ld, 1, 1, vc + 16 * v, lo,
                     span, len, kv_dim);
}

AVX512 void cpu_attention_avx512(float *out, const float *q, const float *kc, const float *vc,
                                 int n_tok, int pos0, int len, int window, int n_heads,
                                 int n_kv_heads, int head_dim, int n_threads) {
    const int group = n_heads / n_kv_heads, hd = head_dim;
    const size_t kv_dim = (size_t)n_kv_heads * hd;
    const int qblocks = (n_tok + ATT_QB - 1) / ATT_QB, tasks = qblocks * n_kv_heads;
    /* keys a block can see: its window plus the block, rounded up to whole vectors */
    const int last = pos0 + n_tok - 1;
    const int see = window > 0 && window + ATT_QB - 1 < last + 1 ? window + ATT_QB - 1 : last + 1;
    const int ldk = (see + 15) / 16 * 16 + 16;
#pragma omp parallel num_threads(n_threads)
    {
        float *kt = xmalloc((size_t)hd * ldk * sizeof(float)); /* [hd][ldk] */
        float *s = xmalloc((size_t)4 * ldk * sizeof(float));   /* [4][ldk] */
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < tasks; task++) {
            const int kvh = task % n_kv_heads, qb = task / n_kv_heads;
            const int t0 = qb * ATT_QB, t1 = t0 + ATT_QB < n_tok ? t0 + ATT_QB : n_tok;
            const int p0 = pos0 + t0, p1 = pos0 + t1 - 1;
            const int lo = window > 0 && p0 - window + 1 > 0 ? p0 - window + 1 : 0;
            const int span = p1 - lo + 1, spad = (span + 15) / 16 * 16;
            /* kt[d][j] = key lo + j of this kv head; zero past the span */
            const float *kh = kc + (size_t)kvh * hd;
            for (int j0 = 0, row = lo % len; j0 < spad; j0 += 16) {
                const float *kj[16];
                for (int j = 0; j < 16; j++, row = row + 1 == len ? 0 : row + 1)
                    kj[j] = j0 + j < span ? kh + (size_t)row * kv_dim : NULL;
                for (int d0 = 0; d0 < hd; d0 += 16) {
                    const int nd = hd - d0 < 16 ? hd - d0 : 16;
                    const __mmask16 m = tail_mask(nd);
                    __m512 r[16];
                    for (int j = 0; j < 16; j++)
                        r[j] = kj[j] ? _mm512_maskz_loadu_ps(m, kj[j] + d0) : _mm512_setzero_ps();
                    transpose16(r);
                    for (int d = 0; d < nd; d++)
                        _mm512_storeu_ps(kt + (size_t)(d0 + d) * ldk + j0, r[d]);
                }
            }
            const float *vh = vc + (size_t)kvh * hd;
            for (int t = t0; t < t1; t++) {
                const int p = pos0 + t;
                const int lt = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
                const int off = lt - lo, n = p - lt + 1; /* this row's keys: kt columns off.. */
                for (int g0 = 0; g0 < group; g0 += 4) {
                    const int ng = group - g0 < 4 ? group - g0 : 4;
                    const float *qg = q + ((size_t)t * n_heads + (size_t)kvh * group + g0) * hd;
                    /* scores from the aligned column below off, so the loads stay in kt */
                    const int a = off / 16 * 16;
                    scores4(s, ldk, qg, ng, hd, kt + a, ldk, off - a + n);
                    for (int g = 0; g < ng; g++)
                        softmax512(s + (size_t)g * ldk + (off - a), n);
                    float *og = out + ((size_t)t * n_heads + (size_t)kvh * group + g0) * hd;
                    if (hd % 16 == 0) {
                        values4(og, s + (off - a), ldk, ng, hd, vh, lt, n, len, kv_dim);
                    } else {
                        for (int g = 0; g < ng; g++) {
                            const float *pg = s + (size_t)g * ldk + (off - a);
                            float *o = og + (size_t)g * hd;
                            memset(o, 0, (size_t)hd * sizeof(float));
                            for (int j = 0, row = lt % len; j < n;
                                 j++, row = row + 1 == len ? 0 : row + 1) {
                                const float *vj = vh + (size_t)row * kv_dim;
                                for (int i = 0; i < hd; i++)
                                    o[i] += pg[j] * vj[i];
                            }
                        }
                    }
                }
            }
        }
        free(s);
        free(kt);
    }
}

#else /* not x86-64 GCC/Clang: never called (cpu_chunk_supported says 0) */

int cpu_chunk_supported(void) {
    return 0;
}
double cpu_sumsq_avx512(const float *x, int n) {
    (void)x, (void)n;
    abort();
}
void cpu_gemm_avx512(float *out, const tensor *w, const float *x, int n, int n_threads) {
    (void)out, (void)w, (void)x, (void)n, (void)n_threads;
    abort();
}
void cpu_attention_avx512(float *out, const float *q, const float *kc, const float *vc, int n_tok,
                          int pos0, int len, int window, int n_heads, int n_kv_heads, int head_dim,
                          int n_threads) {
    (void)out, (void)q, (void)kc, (void)vc, (void)n_tok, (void)pos0, (void)len, (void)window;
    (void)n_heads, (void)n_kv_heads, (void)head_dim, (void)n_threads;
    abort();
}
void cpu_gelu_mul_avx512(float *out, const float *gate, const float *up, int rows, int dim,
                         int up_stride, int n_threads) {
    (void)out, (void)gate, (void)up, (void)rows, (void)dim, (void)up_stride, (void)n_threads;
    abort();
}
#endif
