/* quant.c: the int8 / int4 group quantizer, its layout, and the scalar reference product over
 * it (quant.h has the rule, the layout and why).
 *
 * The quantizer is written so that it is reproducible to the bit: fp32 only, one division per
 * value, rintf (round half to even in the default rounding mode), no reassociation, and no
 * dependence on the thread count (rows are independent). tools/quantize_checkpoint.py does the
 * same operations in numpy float32.
 *
 * The products are in quant_matmul.c; the scalar reference here does their arithmetic in
 * plain order: per group the widened values dotted with x, then the group sum times its scale. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant.h"
#include "util.h"

/* Below this many values a quantization runs on one thread (as backend_cpu.c's loops). */
#define QUANT_PARALLEL(work) ((work) >= (1u << 18))

static float bf16_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* fp32 -> bf16 bits, round to nearest even (inputs here are finite). */
static uint16_t f32_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

const char *quant_dtype_name(quant_dtype t) {
    switch (t) {
    case QUANT_BF16:
        return "bf16";
    case QUANT_INT8:
        return "int8";
    case QUANT_INT4:
        return "int4";
    }
    return "?";
}

int quant_dtype_bits(quant_dtype t) {
    return t == QUANT_BF16 ? 16 : (int)t;
}

int quant_dtype_parse(const char *knob, const char *value, quant_dtype *out, char *err,
                      size_t errlen) {
    static const quant_dtype all[] = {QUANT_BF16, QUANT_INT8, QUANT_INT4};
    for (size_t i = 0; value && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(value, quant_dtype_name(all[i]))) {
            *out = all[i];
            return 0;
        }
    return err_set(err, errlen, "%s: \"%s\" is not a weight dtype (allowed: bf16, int8, int4)",
                   knob, value ? value : "(null)");
}

int quant_group_valid(int group) {
    return group == 32 || group == 64 || group == 128;
}

int quant_group_parse(const char *knob, const char *value, int *out, char *err, size_t errlen) {
    static const char *const all[] = {"32", "64", "128"};
    for (size_t i = 0; value && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(value, all[i])) {
            *out = atoi(all[i]);
            return 0;
        }
    return err_set(err, errlen, "%s: \"%s\" is not a group size (allowed: 32, 64, 128)", knob,
                   value ? value : "(null)");
}

int quant_check_shape(const char *name, quant_dtype dtype, int rows, int cols, int group, char *err,
                      size_t errlen) {
    const char *n = name ? name : "matrix", *sep = ": ";
    if (dtype != QUANT_INT8 && dtype != QUANT_INT4)
        return err_set(err, errlen, "%s%sdtype %s cannot be quantized (int8 or int4 only)", n, sep,
                       quant_dtype_name(dtype));
    if (!quant_group_valid(group))
        return err_set(err, errlen, "%s%sgroup size %d is not supported (allowed: 32, 64, 128)", n,
                       sep, group);
    if (rows <= 0 || cols <= 0)
        return err_set(err, errlen, "%s%sshape [%d, %d] is empty", n, sep, rows, cols);
    if (cols % group)
        return err_set(err, errlen, "%s%s%d input columns are not a multiple of the group size %d",
                       n, sep, cols, group);
    return 0;
}

size_t quant_bytes(quant_dtype dtype, int rows, int cols, int group) {
    const size_t r = rows > 0 ? (size_t)rows : 0, c = cols > 0 ? (size_t)cols : 0;
    if (dtype == QUANT_BF16 || group <= 0) return r * c * 2;
    const size_t values = dtype == QUANT_INT4 ? r * (c / 2) : r * c;
    return values + r * (c / (size_t)group) * 2;
}

int quant_alloc(quant_matrix *m, const char *name, quant_dtype dtype, int rows, int cols, int group,
                char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (quant_check_shape(name, dtype, rows, cols, group, err, errlen)) return -1;
    m->dtype = dtype;
    m->rows = rows;
    m->cols = cols;
    m->group = group;
    m->row_bytes = dtype == QUANT_INT4 ? (size_t)cols / 2 : (size_t)cols;
    const size_t qbytes = m->row_bytes * (size_t)rows; /* a multiple of 16: see quant.h */
    const size_t padded = (qbytes + QUANT_ALIGN - 1) / QUANT_ALIGN * QUANT_ALIGN;
    m->q = aligned_alloc(QUANT_ALIGN, padded);
    if (!m->q) die("out of memory (%zu bytes)", padded);
    memset(m->q, 0, padded);
    m->scales = xcalloc((size_t)rows * (size_t)(cols / group), sizeof(uint16_t));
    return 0;
}

void quant_free(quant_matrix *m) {
    free(m->q);
    free(m->scales);
    memset(m, 0, sizeof *m);
}

uint16_t quant_group_f32(const float *x, int n, int bits, int8_t *q) {
    const int Q = 1 << (bits - 1);
    float amax = 0.0f, mx = 0.0f;
    for (int i = 0; i < n; i++) {
        const float a = fabsf(x[i]);
        if (amax < a) { /* strict: the first value of largest magnitude wins */
            amax = a;
            mx = x[i];
        }
    }
    const uint16_t sb = amax > 0.0f ? f32_bf16(mx / (float)-Q) : 0;
    const float s = bf16_f32(sb);
    if (s == 0.0f) { /* all zeros, or a scale below bf16's range */
        memset(q, 0, (size_t)n);
        return 0;
    }
    const float lo = (float)-Q, hi = (float)(Q - 1);
    for (int i = 0; i < n; i++) {
        float v = rintf(x[i] / s);
        v = v < lo ? lo : v > hi ? hi : v;
        q[i] = (int8_t)v;
    }
    return sb;
}

/* Store the signed values q[group] of group g of row r. */
static void put_group(quant_matrix *m, int r, int g, const int8_t *q) {
    uint8_t *row = m->q + (size_t)r * m->row_bytes;
    const int G = m->group;
    if (m->dtype == QUANT_INT8) {
        for (int i = 0; i < G; i++)
            row[(size_t)g * G + i] = (uint8_t)q[i]; /* two's complement */
    } else {
        for (int i = 0; i < G / 2; i++)
            row[(size_t)g * G / 2 + i] =
                (uint8_t)((unsigned)(q[2 * i] + 8) | (unsigned)(q[2 * i + 1] + 8) << 4);
    }
}

/* The index of the first non-finite value of w[n] (kind 0: fp32, 1: bf16 bits), or n. */
static size_t first_nonfinite(const void *w, size_t n, int bf16) {
    size_t bad = n;
#pragma omp parallel for reduction(min : bad) schedule(static)
    for (size_t i = 0; i < n; i++) {
        const float v = bf16 ? bf16_f32(((const uint16_t *)w)[i]) : ((const float *)w)[i];
        if (!isfinite(v) && i < bad) bad = i;
    }
    return bad;
}

static int quant_from(quant_matrix *m, const char *name, const void *w, int bf16, int rows,
                      int cols, quant_dtype dtype, int group, char *err, size_t errlen) {
    if (quant_alloc(m, name, dtype, rows, cols, group, err, errlen)) return -1;
    const size_t n = (size_t)rows * (size_t)cols;
    const size_t bad = first_nonfinite(w, n, bf16);
    if (bad < n) {
        quant_free(m);
        return err_set(err, errlen, "%s: weight [%zu, %zu] is not finite; cannot quantize",
                       name ? name : "matrix", bad / (size_t)cols, bad % (size_t)cols);
    }
    const int groups = cols / group, bits = quant_dtype_bits(dtype);
#pragma omp parallel for schedule(static) if (QUANT_PARALLEL(n))
    for (int r = 0; r < rows; r++) {
        float x[128];
        int8_t q[128];
        for (int g = 0; g < groups; g++) {
            const size_t at = (size_t)r * (size_t)cols + (size_t)g * (size_t)group;
            for (int i = 0; i < group; i++)
                x[i] = bf16 ? bf16_f32(((const uint16_t *)w)[at + i]) : ((const float *)w)[at + i];
            m->scales[(size_t)r * groups + g] = quant_group_f32(x, group, bits, q);
            put_group(m, r, g, q);
        }
    }
    return 0;
}

int quant_from_bf16(quant_matrix *m, const char *name, const uint16_t *w, int rows, int cols,
                    quant_dtype dtype, int group, char *err, size_t errlen) {
    return quant_from(m, name, w, 1, rows, cols, dtype, group, err, errlen);
}

int quant_from_f32(quant_matrix *m, const char *name, const float *w, int rows, int cols,
                   quant_dtype dtype, int group, char *err, size_t errlen) {
    return quant_from(m, name, w, 0, rows, cols, dtype, group, err, errlen);
}

int quant_value(const quant_matrix *m, int r, int c) {
    const uint8_t *row = m->q + (size_t)r * m->row_bytes;
    if (m->dtype == QUANT_INT8) return (int)(int8_t)row[c];
    const uint8_t b = row[c / 2];
    return (int)(c & 1 ? b >> 4 : b & 15) - 8;
}

float quant_scale(const quant_matrix *m, int r, int g) {
    return bf16_f32(m->scales[(size_t)r * (size_t)(m->cols / m->group) + (size_t)g]);
}

void quant_row_values(const quant_matrix *m, int r, float *out) {
    const uint8_t *row = m->q + (size_t)r * m->row_bytes;
    if (m->dtype == QUANT_INT8) {
#pragma omp simd
        for (int c = 0; c < m->cols; c++)
            out[c] = (float)(int8_t)row[c];
    } else {
#pragma omp simd
        for (int j = 0; j < m->cols / 2; j++) {
            out[2 * j] = (float)((int)(row[j] & 15) - 8);
            out[2 * j + 1] = (float)((int)(row[j] >> 4) - 8);
        }
    }
}

void quant_dequant_row(const quant_matrix *m, int r, float *out) {
    quant_row_values(m, r, out);
    const int G = m->group;
    for (int g = 0; g < m->cols / G; g++) {
        const float s = quant_scale(m, r, g);
        for (int i = 0; i < G; i++)
            out[g * G + i] *= s;
    }
}

void quant_transpose(const quant_matrix *m, uint8_t *qt, uint16_t *st) {
    const int rows = m->rows, cols = m->cols, ng = cols / m->group, T = 64;
    const size_t orb = m->dtype == QUANT_INT8 ? (size_t)rows : (size_t)rows / 2; /* qt's rows */
    /* Tiles of T columns: a tile's T output rows advance together while the input is read a
     * row (T values) at a time, so both sides stay in cache. */
#pragma omp parallel for schedule(static)
    for (int c0 = 0; c0 < cols; c0 += T) {
        const int c1 = c0 + T < cols ? c0 + T : cols;
        if (m->dtype == QUANT_INT8) {
            for (int r = 0; r < rows; r++) {
                const uint8_t *in = m->q + (size_t)r * m->row_bytes;
                for (int c = c0; c < c1; c++)
                    qt[(size_t)c * orb + r] = in[c];
            }
        } else {
            for (int r = 0; r < rows; r += 2) {
                const uint8_t *a = m->q + (size_t)r * m->row_bytes, *b = a + m->row_bytes;
                for (int c = c0; c < c1; c++) {
                    const int sh = 4 * (c & 1);
                    qt[(size_t)c * orb + r / 2] =
                        (uint8_t)(((a[c / 2] >> sh) & 15) | ((b[c / 2] >> sh) & 15) << 4);
                }
            }
        }
    }
#pragma omp parallel for schedule(static)
    for (int g = 0; g < ng; g++)
        for (int r = 0; r < rows; r++)
            st[(size_t)g * rows + r] = m->scales[(size_t)r * ng + g];
}

void quant_matmul_ref(const quant_matrix *m, const float *x, int n, float *y) {
    const int G = m->group, groups = m->cols / G;
    for (int t = 0; t < n; t++)
        for (int r = 0; r < m->rows; r++) {
            float acc = 0.0f;
            for (int g = 0; g < groups; g++) {
                float s = 0.0f;
                for (int i = 0; i < G; i++)
                    s += (float)quant_value(m, r, g * G + i) *
                         x[(size_t)t * (size_t)m->cols + (size_t)(g * G + i)];
                acc += quant_scale(m, r, g) * s;
            }
            y[(size_t)t * (size_t)m->rows + (size_t)r] = acc;
        }
}

int quant_f16_exponent(const quant_matrix *m, int *e) {
    if (m->dtype != QUANT_INT4) return -1;
    /* A bf16 scale is M * 2^x with the integer significand M = 128 + mantissa (normal, biased
     * exponent E: x = E - 134) or M = mantissa (subnormal: x = -133). top: the binade of its
     * leading bit; low: that of its lowest set bit. One pass over every scale of the matrix at
     * upload (E4B at group 32 has 1.2e8), so each is a few instructions. */
    int top_max = INT32_MIN, low_min = INT32_MAX;
    const size_t n = (size_t)m->rows * (size_t)(m->cols / m->group);
    for (size_t i = 0; i < n; i++) {
        const unsigned h = m->scales[i] & 0x7fffu, E = h >> 7;
        if (!h) continue;
        if (E == 0xffu) return -1; /* inf or NaN */
        const unsigned M = E ? 128u + (h & 0x7fu) : h;
        const int x = E ? (int)E - 134 : -133;
        const int top = x + 31 - __builtin_clz(M), low = x + __builtin_ctz(M);
        if (top > top_max) top_max = top;
        if (low < low_min) low_min = low;
    }
    if (top_max == INT32_MIN) {
        *e = 0;
        return 0;
    }
    /* |q * s| < 8 * 2^(top + 1) = 2^(top + 4): below 2^16 after the shift */
    const int hi = 12 - top_max, lo = -24 - low_min;
    if (hi < lo) return -1;
    *e = hi;
    return 0;
}
