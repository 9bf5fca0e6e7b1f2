/* quant_matmul.c: the CPU products over int8 / int4 matrices (quant.h has the layout).
 *
 * y[t][r] = sum_g s[r][g] * (sum_{c in g} q[r][c] * x[t][c]) in fp32, in three builds as
 * backend_cpu.c's dot kernels: portable C, AVX2+FMA and AVX-512F, compiled for their targets
 * whatever the build's -march and run only where the CPU has them. quant_matmul picks the
 * fastest this CPU runs; backend_cpu.c passes the one it picked for its own kernels.
 *
 * The vector kernels read the packed bytes, with no fp32 copy of a row. Values are widened to
 * fp32 a vector at a time (int8: sign-extend, convert; int4 on AVX-512: a 16-entry table
 * lookup, nibble k -> k - 8, with vpermps; int4 on AVX2: the nibble goes into the low mantissa
 * bits of 2^23 and 2^23 + 8 is subtracted, exact) and FMA'd with x into one partial sum per
 * group, held in vector lanes; the group's vector is then FMA'd with its broadcast bf16 scale
 * into the row's accumulator, whose lanes are summed at the end. A vector of int4 nibbles
 * holds the even columns of a block (32 columns on AVX-512, 16 on AVX2) and the next one the
 * odd columns, so x is deinterleaved to that order once per call.
 *
 * A tile is R rows by B inputs: each widened weight vector feeds B inputs and each vector of x
 * feeds R rows. Decode steps run 4 x 1 tiles; for more inputs 4 rows take 2 to 4 inputs at a
 * time (per ISA and dtype, the shapes measured fastest), so a verify pass or a prefill chunk
 * widens each weight once per 2 to 4 inputs. Every (row, input) pair runs the same chain of
 * operations whatever the tile, so a row's result depends neither on n (a verify pass
 * reproduces decode steps bit for bit) nor on how threads split the rows. Threads take
 * contiguous runs of 4-row tiles; small products stay on one thread.
 *
 * The portable build widens a row to fp32 once and dots each group with `omp simd`. */
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "float16.h"
#include "quant.h"
#include "util.h"

/* Below this many multiply-adds a product runs on one thread (as backend_cpu.c). */
#define QUANT_PARALLEL(work) ((work) >= (1u << 18))
/* Rows per tile where the rows allow; threads split the rows at multiples of it. */
#define ROW_TILE 4
/* Floats of deinterleaved x kept on the stack (a decode step's x); more are allocated. */
#define X_LOCAL 2048

/* y[t][r] for r0 <= r < r1, t < n. x is [n][cols], deinterleaved where the kernel wants it. */
typedef void (*rows_fn)(const quant_matrix *m, const float *x, int n, float *y, int r0, int r1);
/* x[total] into out in the order the int4 kernel wants (total a multiple of 32). */
typedef void (*deinterleave_fn)(const float *x, size_t total, float *out);

typedef struct {
    rows_fn int8, int4;
    deinterleave_fn int4_x; /* NULL: the int4 kernel takes x as given */
} quant_kernels;

const char *quant_isa_name(quant_isa isa) {
    switch (isa) {
    case QUANT_ISA_PORTABLE:
        return "portable";
    case QUANT_ISA_AVX2:
        return "avx2";
    case QUANT_ISA_AVX512:
        return "avx512";
    }
    return "?";
}

/* ---- portable ------------------------------------------------------------------------- */

static float dot_group(const float *w, const float *x, int n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++)
        s += w[i] * x[i];
    return s;
}

static void rows_portable(const quant_matrix *m, const float *x, int n, float *y, int r0, int r1) {
    const int rows = m->rows, cols = m->cols, G = m->group, groups = cols / G;
    float *w = xmalloc((size_t)cols * sizeof(float));
    for (int r = r0; r < r1; r++) {
        quant_row_values(m, r, w);
        const uint16_t *sc = m->scales + (size_t)r * (size_t)groups;
        for (int t = 0; t < n; t++) {
            const float *xt = x + (size_t)t * (size_t)cols;
            float acc = 0.0f;
            for (int g = 0; g < groups; g++)
                acc += bf16_to_f32(sc[g]) * dot_group(w + (size_t)g * G, xt + (size_t)g * G, G);
            y[(size_t)t * (size_t)rows + (size_t)r] = acc;
        }
    }
    free(w);
}

/* The tiles rows r0 .. r1 are cut into: 4-row tiles take inputs TB4 at a time, then what is
 * left 3, 2 or 1 at a time (below TB4); leftover rows go one at a time with inputs TB1, 4, 2, 1
 * at a time. TILE(R, B, r, t) is the ISA's tile for one dtype. */
#define ROWS_PLAN(TILE, TB4, TB1)                                                                  \
    do {                                                                                           \
        int r = r0;                                                                                \
        for (; r + ROW_TILE <= r1; r += ROW_TILE) {                                                \
            int t = 0;                                                                             \
            for (; t + (TB4) <= n; t += (TB4))                                                     \
                TILE(4, TB4, r, t);                                                                \
            if ((TB4) > 3 && t + 3 <= n) {                                                         \
                TILE(4, 3, r, t);                                                                  \
                t += 3;                                                                            \
            }                                                                                      \
            if ((TB4) > 2 && t + 2 <= n) {                                                         \
                TILE(4, 2, r, t);                                                                  \
                t += 2;                                                                            \
            }                                                                                      \
            for (; t < n; t++)                                                                     \
                TILE(4, 1, r, t);                                                                  \
        }                                                                                          \
        for (; r < r1; r++) {                                                                      \
            int t = 0;                                                                             \
            for (; t + (TB1) <= n; t += (TB1))                                                     \
                TILE(1, TB1, r, t);                                                                \
            if (t + 4 <= n) {                                                                      \
                TILE(1, 4, r, t);                                                                  \
                t += 4;                                                                            \
            }                                                                                      \
            if (t + 2 <= n) {                                                                      \
                TILE(1, 2, r, t);                                                                  \
                t += 2;                                                                            \
            }                                                                                      \
            if (t < n) TILE(1, 1, r, t);                                                           \
        }                                                                                          \
    } while (0)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX2   __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx512f")))
#define INLINE inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

#define MAGIC      0x4b000000 /* the bits of 2^23: OR'd with k < 2^23 they read 2^23 + k */
#define MAGIC_BIAS 8388616.0f /* 2^23 + 8 */

AVX2 static INLINE float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* ---- AVX2 + FMA: 8 lanes; int4 x deinterleaved in blocks of 16 columns ------------------ */

/* y for the R rows from r and the B inputs from t (R, B <= 4); int4: the dtype (a constant). */
AVX2 static INLINE void tile_avx2(const quant_matrix *m, int r, const int R, const float *x, int t,
                                  const int B, float *y, const int int4) {
    const size_t cols = (size_t)m->cols;
    const int G = m->group, groups = m->cols / G;
    const uint8_t *wr[4];
    const float *xb[4];
    __m256 acc[4][4], gs[4][4];
    UNROLL
    for (int i = 0; i < R; i++) {
        wr[i] = m->q + (size_t)(r + i) * m->row_bytes;
        UNROLL
        for (int b = 0; b < B; b++)
            acc[i][b] = _mm256_setzero_ps();
    }
    UNROLL
    for (int b = 0; b < B; b++)
        xb[b] = x + (size_t)(t + b) * cols;
    const __m256i low = _mm256_set1_epi32(15), magic = _mm256_set1_epi32(MAGIC);
    const __m256 bias = _mm256_set1_ps(MAGIC_BIAS);
    for (int g = 0; g < groups; g++) {
        UNROLL
        for (int i = 0; i < R; i++) {
            UNROLL
            for (int b = 0; b < B; b++)
                gs[i][b] = _mm256_setzero_ps();
        }
        const int c0 = g * G, c1 = c0 + G;
        if (!int4) {
            for (int c = c0; c < c1; c += 8) {
                __m256 w[4];
                UNROLL
                for (int i = 0; i < R; i++)
                    w[i] = _mm256_cvtepi32_ps(
                        _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(wr[i] + c))));
                UNROLL
                for (int b = 0; b < B; b++) {
                    const __m256 xv = _mm256_loadu_ps(xb[b] + c);
                    UNROLL
                    for (int i = 0; i < R; i++)
                        gs[i][b] = _mm256_fmadd_ps(w[i], xv, gs[i][b]);
                }
            }
        } else {
            for (int c = c0; c < c1; c += 16) {
                __m256 we[4], wo[4];
                UNROLL
                for (int i = 0; i < R; i++) {
                    const __m256i v =
                        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(wr[i] + (c >> 1))));
                    const __m256i lo = _mm256_or_si256(_mm256_and_si256(v, low), magic),
                                  hi = _mm256_or_si256(_mm256_srli_epi32(v, 4), magic);
                    we[i] = _mm256_sub_ps(_mm256_castsi256_ps(lo), bias);
                    wo[i] = _mm256_sub_ps(_mm256_castsi256_ps(hi), bias);
                }
                UNROLL
                for (int b = 0; b < B; b++) {
                    const __m256 xe = _mm256_loadu_ps(xb[b] + c),
                                 xo = _mm256_loadu_ps(xb[b] + c + 8);
                    UNROLL
                    for (int i = 0; i < R; i++) {
                        gs[i][b] = _mm256_fmadd_ps(we[i], xe, gs[i][b]);
                        gs[i][b] = _mm256_fmadd_ps(wo[i], xo, gs[i][b]);
                    }
                }
            }
        }
        UNROLL
        for (int i = 0; i < R; i++) {
            const __m256 s =
                _mm256_set1_ps(bf16_to_f32(m->scales[(size_t)(r + i) * (size_t)groups + g]));
            UNROLL
            for (int b = 0; b < B; b++)
                acc[i][b] = _mm256_fmadd_ps(gs[i][b], s, acc[i][b]);
        }
    }
    UNROLL
    for (int i = 0; i < R; i++) {
        UNROLL
        for (int b = 0; b < B; b++)
            y[(size_t)(t + b) * (size_t)m->rows + (size_t)(r + i)] = hsum256(acc[i][b]);
    }
}

/* Each block of 16 columns: its 8 even columns, then its 8 odd ones. */
AVX2 static void deinterleave16_avx2(const float *x, size_t total, float *out) {
    for (size_t at = 0; at < total; at += 16) {
        const __m256 a = _mm256_loadu_ps(x + at), b = _mm256_loadu_ps(x + at + 8);
        /* a0 a2 b0 b2 | a4 a6 b4 b6 -> a0 a2 a4 a6 b0 b2 b4 b6, and the same for the odd ones */
        const __m256d e = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)),
                      o = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xdd));
        _mm256_storeu_ps(out + at, _mm256_castpd_ps(_mm256_permute4x64_pd(e, 0xd8)));
        _mm256_storeu_ps(out + at + 8, _mm256_castpd_ps(_mm256_permute4x64_pd(o, 0xd8)));
    }
}

#define TILE_AVX2_I8(R, B, r, t) tile_avx2(m, r, R, x, t, B, y, 0)
#define TILE_AVX2_I4(R, B, r, t) tile_avx2(m, r, R, x, t, B, y, 1)

AVX2 static void rows_int8_avx2(const quant_matrix *m, const float *x, int n, float *y, int r0,
                                int r1) {
    ROWS_PLAN(TILE_AVX2_I8, 2, 4);
}

AVX2 static void rows_int4_avx2(const quant_matrix *m, const float *x, int n, float *y, int r0,
                                int r1) {
    ROWS_PLAN(TILE_AVX2_I4, 3, 4);
}

/* ---- AVX-512F: 16 lanes; int4 x deinterleaved in blocks of 32 columns ------------------- */

/* y for the R rows from r and the B inputs from t (R <= 4, B <= 8); int4: the dtype (a
 * constant). */
AVX512 static INLINE void tile_avx512(const quant_matrix *m, int r, const int R, const float *x,
                                      int t, const int B, float *y, const int int4) {
    const size_t cols = (size_t)m->cols;
    const int G = m->group, groups = m->cols / G;
    const uint8_t *wr[4];
    const float *xb[8];
    __m512 acc[4][8], gs[4][8];
    UNROLL
    for (int i = 0; i < R; i++) {
        wr[i] = m->q + (size_t)(r + i) * m->row_bytes;
        UNROLL
        for (int b = 0; b < B; b++)
            acc[i][b] = _mm512_setzero_ps();
    }
    UNROLL
    for (int b = 0; b < B; b++)
        xb[b] = x + (size_t)(t + b) * cols;
    /* nibble k -> k - 8 (vpermps reads the low 4 bits of each index) */
    const __m512 lut = _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7);
    for (int g = 0; g < groups; g++) {
        UNROLL
        for (int i = 0; i < R; i++) {
            UNROLL
            for (int b = 0; b < B; b++)
                gs[i][b] = _mm512_setzero_ps();
        }
        const int c0 = g * G, c1 = c0 + G;
        if (!int4) {
            for (int c = c0; c < c1; c += 16) {
                __m512 w[4];
                UNROLL
                for (int i = 0; i < R; i++)
                    w[i] = _mm512_cvtepi32_ps(
                        _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(wr[i] + c))));
                UNROLL
                for (int b = 0; b < B; b++) {
                    const __m512 xv = _mm512_loadu_ps(xb[b] + c);
                    UNROLL
                    for (int i = 0; i < R; i++)
                        gs[i][b] = _mm512_fmadd_ps(w[i], xv, gs[i][b]);
                }
            }
        } else {
            for (int c = c0; c < c1; c += 32) {
                __m512 we[4], wo[4];
                UNROLL
                for (int i = 0; i < R; i++) {
                    const __m512i v =
                        _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(wr[i] + (c >> 1))));
                    we[i] = _mm512_permutexvar_ps(v, lut);
                    wo[i] = _mm512_permutexvar_ps(_mm512_srli_epi32(v, 4), lut);
                }
                UNROLL
                for (int b = 0; b < B; b++) {
                    const __m512 xe = _mm512_loadu_ps(xb[b] + c),
                                 xo = _mm512_loadu_ps(xb[b] + c + 16);
                    UNROLL
                    for (int i = 0; i < R; i++) {
                        gs[i][b] = _mm512_fmadd_ps(we[i], xe, gs[i][b]);
                        gs[i][b] = _mm512_fmadd_ps(wo[i], xo, gs[i][b]);
                    }
                }
            }
        }
        UNROLL
        for (int i = 0; i < R; i++) {
            const __m512 s =
                _mm512_set1_ps(bf16_to_f32(m->scales[(size_t)(r + i) * (size_t)groups + g]));
            UNROLL
            for (int b = 0; b < B; b++)
                acc[i][b] = _mm512_fmadd_ps(gs[i][b], s, acc[i][b]);
        }
    }
    UNROLL
    for (int i = 0; i < R; i++) {
        UNROLL
        for (int b = 0; b < B; b++)
            y[(size_t)(t + b) * (size_t)m->rows + (size_t)(r + i)] =
                _mm512_reduce_add_ps(acc[i][b]);
    }
}

/* Each block of 32 columns: its 16 even columns, then its 16 odd ones. */
AVX512 static void deinterleave32_avx512(const float *x, size_t total, float *out) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (size_t at = 0; at < total; at += 32) {
        const __m512 a = _mm512_loadu_ps(x + at), b = _mm512_loadu_ps(x + at + 16);
        _mm512_storeu_ps(out + at, _mm512_permutex2var_ps(a, even, b));
        _mm512_storeu_ps(out + at + 16, _mm512_permutex2var_ps(a, odd, b));
    }
}

#define TILE_512_I8(R, B, r, t) tile_avx512(m, r, R, x, t, B, y, 0)
#define TILE_512_I4(R, B, r, t) tile_avx512(m, r, R, x, t, B, y, 1)

AVX512 static void rows_int8_avx512(const quant_matrix *m, const float *x, int n, float *y, int r0,
                                    int r1) {
    ROWS_PLAN(TILE_512_I8, 4, 8);
}

AVX512 static void rows_int4_avx512(const quant_matrix *m, const float *x, int n, float *y, int r0,
                                    int r1) {
    ROWS_PLAN(TILE_512_I4, 3, 8);
}

static const quant_kernels kernels[] = {
    [QUANT_ISA_PORTABLE] = {rows_portable, rows_portable, NULL},
    [QUANT_ISA_AVX2] = {rows_int8_avx2, rows_int4_avx2, deinterleave16_avx2},
    [QUANT_ISA_AVX512] = {rows_int8_avx512, rows_int4_avx512, deinterleave32_avx512},
};

int quant_isa_supported(quant_isa isa) {
    __builtin_cpu_init();
    switch (isa) {
    case QUANT_ISA_PORTABLE:
        return 1;
    case QUANT_ISA_AVX2:
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case QUANT_ISA_AVX512:
        return __builtin_cpu_supports("avx512f");
    }
    return 0;
}
#else
static const quant_kernels kernels[] = {
    [QUANT_ISA_PORTABLE] = {rows_portable, rows_portable, NULL},
};

int quant_isa_supported(quant_isa isa) {
    return isa == QUANT_ISA_PORTABLE;
}
#endif

quant_isa quant_isa_best(void) {
    const char *cap = getenv("GEMMA_CPU_ISA");
    const int allow512 = !cap || !strcmp(cap, "avx512"), allow2 = allow512 || !strcmp(cap, "avx2");
    if (allow512 && quant_isa_supported(QUANT_ISA_AVX512)) return QUANT_ISA_AVX512;
    if (allow2 && quant_isa_supported(QUANT_ISA_AVX2)) return QUANT_ISA_AVX2;
    return QUANT_ISA_PORTABLE;
}

void quant_matmul_isa(const quant_matrix *m, const float *x, int n, float *y, int n_threads,
                      quant_isa isa) {
    if (n <= 0) return;
    if (!quant_isa_supported(isa)) isa = QUANT_ISA_PORTABLE;
    const quant_kernels *k = &kernels[isa];
    const rows_fn rows_of = m->dtype == QUANT_INT8 ? k->int8 : k->int4;
    const int rows = m->rows, cols = m->cols;
    float local[X_LOCAL], *heap = NULL;
    const float *xs = x;
    if (m->dtype == QUANT_INT4 && k->int4_x) {
        const size_t total = (size_t)n * (size_t)cols;
        float *buf = total <= X_LOCAL ? local : (heap = xmalloc(total * sizeof(float)));
        k->int4_x(x, total, buf);
        xs = buf;
    }
    if (n_threads <= 0) n_threads = omp_get_max_threads();
    const int tiles = (rows + ROW_TILE - 1) / ROW_TILE;
    const size_t work = (size_t)rows * (size_t)cols * (size_t)n;
    if (n_threads == 1 || tiles == 1 || !QUANT_PARALLEL(work)) {
        rows_of(m, xs, n, y, 0, rows);
    } else {
#pragma omp parallel num_threads(n_threads)
        {
            const int T = omp_get_num_threads(), id = omp_get_thread_num();
            const int r0 = (int)((long)tiles * id / T) * ROW_TILE;
            int r1 = (int)((long)tiles * (id + 1) / T) * ROW_TILE;
            if (r1 > rows) r1 = rows;
            if (r0 < r1) rows_of(m, xs, n, y, r0, r1);
        }
    }
    free(heap);
}

void quant_matmul(const quant_matrix *m, const float *x, int n, float *y, int n_threads) {
    quant_matmul_isa(m, x, n, y, n_threads, quant_isa_best());
}
