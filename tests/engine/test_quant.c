/* test_quant.c: the int8 / int4 group quantizer and its products (engine/quant.c).
 *
 * Hand-checked groups pin the rule of quant.h down to the bit: the signed extreme lands on -Q
 * (a positive extreme gives a negative scale), ties at .5 round to even, values past Q - 1
 * clamp, all-zero and underflowing groups get scale +0, the scale is rounded to bf16 once and
 * the values are divided by the rounded scale; int8 bytes are two's complement, int4 nibbles
 * offset-binary with the even column in the low nibble. Then random matrices: every value is the
 * nearest grid level within the error bound, the result does not depend on the thread count, bf16
 * input equals fp32 input of the same values, and both products match a double-precision product of
 * the dequantized weights. Last, every bad knob value and shape is refused with its message. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "float16.h"
#include "quant.h"
#include "../test_util.h"

static uint16_t f32_bits_exact(float f) { /* f must be a bf16 */
    uint32_t u;
    memcpy(&u, &f, 4);
    if (u & 0xffff) die("%g is not a bf16", (double)f);
    return (uint16_t)(u >> 16);
}

/* Quantize x[32] as one group through quant_from_f32 and check the scale bits, the signed
 * values and (when given) the first packed bytes. */
static void check_group(int line, quant_dtype dt, const float *x, uint16_t want_scale,
                        const int *want_q, int n_q, const uint8_t *want_bytes, int n_bytes) {
    quant_matrix m;
    char err[256];
    if (quant_from_f32(&m, "g", x, 1, 32, dt, 32, err, sizeof err)) die("%s", err);
    if (m.scales[0] != want_scale) {
        fprintf(stderr, "test_quant.c:%d: scale bits 0x%04x, expected 0x%04x\n", line, m.scales[0],
                want_scale);
        failures++;
    }
    for (int i = 0; i < 32; i++) {
        int want = i < n_q ? want_q[i] : 0;
        if (quant_value(&m, 0, i) != want) {
            fprintf(stderr, "test_quant.c:%d: q[%d] = %d, expected %d\n", line, i,
                    quant_value(&m, 0, i), want);
            failures++;
        }
    }
    for (int i = 0; i < n_bytes; i++)
        if (m.q[i] != want_bytes[i]) {
            fprintf(stderr, "test_quant.c:%d: byte %d = 0x%02x, expected 0x%02x\n", line, i, m.q[i],
                    want_bytes[i]);
            failures++;
        }
    /* quant_group_f32 directly gives the same */
    int8_t q[32];
    EXPECT(quant_group_f32(x, 32, quant_dtype_bits(dt), q) == want_scale);
    for (int i = 0; i < 32; i++)
        EXPECT(q[i] == (i < n_q ? want_q[i] : 0));
    quant_free(&m);
}

static void test_hand_groups(void) {
    /* int4, positive extreme: s = 1 / -8 = -0.125 (0xBE00); ties at .5 go to even; the
     * opposite side clamps at +7 (including -1.0, as large as the extreme but later). */
    float a[32] = {1.0f,     -0.5f,    0.25f, 0.1875f,  0.0625f,
                   -0.3125f, -0.9375f, -1.0f, -0.4375f, 0.4375f};
    const int qa[] = {-8, 4, -2, -2, 0, 2, 7, 7, 4, -4};
    const uint8_t ba[] = {0xC0, 0x66, 0xA8, 0xFF, 0x4C, 0x88, 0x88};
    check_group(__LINE__, QUANT_INT4, a, 0xBE00, qa, 10, ba, 7);

    /* int4, negative extreme: s = -2 / -8 = 0.25 (0x3E80) */
    float b[32] = {0.375f, 0.625f, -2.0f, -0.125f, 1.75f, 1.875f, 2.0f};
    const int qb[] = {2, 2, -8, 0, 7, 7, 7};
    check_group(__LINE__, QUANT_INT4, b, 0x3E80, qb, 7, NULL, 0);

    /* all zeros (and all negative zeros): scale +0, every value 0 (byte 0x88) */
    float z[32] = {0};
    const uint8_t bz[] = {0x88, 0x88, 0x88};
    check_group(__LINE__, QUANT_INT4, z, 0x0000, NULL, 0, bz, 3);
    float nz[32];
    for (int i = 0; i < 32; i++)
        nz[i] = -0.0f;
    check_group(__LINE__, QUANT_INT4, nz, 0x0000, NULL, 0, NULL, 0);

    /* a scale that must round: 1.01171875 / -8 = -0.12646484375 lies half way between the
     * bf16 values 0xBE01 and 0xBE02: ties to even give 0xBE02 = -0.126953125; values are
     * divided by that rounded scale (1.01171875 / s = -7.97 -> -8, 0.5 / s = -3.94 -> -4). */
    float d[32] = {1.01171875f, 0.5f};
    const int qd[] = {-8, -4};
    check_group(__LINE__, QUANT_INT4, d, 0xBE02, qd, 2, NULL, 0);
    EXPECT(bf16_to_f32(0xBE02) == -0.126953125f);

    /* a scale below bf16's range: treated as an all-zero group */
    float u[32] = {1e-45f, -1e-45f};
    check_group(__LINE__, QUANT_INT4, u, 0x0000, NULL, 0, NULL, 0);

    /* int8, negative extreme: s = -1 / -128 = 2^-7 (0x3C00); 127.5 clamps to 127; 1.5 -> 2,
     * 2.5 -> 2; bytes are q as int8 (two's complement) */
    float e[32] = {-1.0f, 0.5f, 0.99609375f, 0.01171875f, 0.01953125f, -0.01171875f};
    const int qe[] = {-128, 64, 127, 2, 2, -2};
    const uint8_t be[] = {0x80, 0x40, 0x7F, 0x02, 0x02, 0xFE, 0x00};
    check_group(__LINE__, QUANT_INT8, e, 0x3C00, qe, 6, be, 7);

    /* int8, positive extreme on a bf16 weight: s = 0.75 / -128, exact */
    float f[32] = {0.25f, 0.75f, -0.375f};
    const int qf[] = {-43, -128, 64}; /* 0.25 / (-0.75/128) = -42.67 -> -43 */
    check_group(__LINE__, QUANT_INT8, f, f32_bits_exact(0.75f / -128.0f), qf, 3, NULL, 0);
}

/* Two groups in one row and a second row: group and row addressing, dequant_row. */
static void test_addressing(void) {
    float w[2 * 64];
    for (int i = 0; i < 128; i++)
        w[i] = (float)((i * 7) % 13 - 6) * (i < 64 ? 0.5f : 0.125f) * (i % 64 < 32 ? 1 : 2);
    for (int dt = 0; dt < 2; dt++) {
        quant_dtype t = dt ? QUANT_INT8 : QUANT_INT4;
        quant_matrix m;
        char err[256];
        if (quant_from_f32(&m, "w", w, 2, 64, t, 32, err, sizeof err)) die("%s", err);
        EXPECT(m.row_bytes == (t == QUANT_INT4 ? 32u : 64u));
        EXPECT(((uintptr_t)m.q % QUANT_ALIGN) == 0);
        float row[64];
        for (int r = 0; r < 2; r++) {
            quant_dequant_row(&m, r, row);
            for (int g = 0; g < 2; g++) {
                int8_t q[32];
                uint16_t s = quant_group_f32(w + r * 64 + g * 32, 32, quant_dtype_bits(t), q);
                EXPECT(m.scales[r * 2 + g] == s);
                EXPECT(quant_scale(&m, r, g) == bf16_to_f32(s));
                for (int i = 0; i < 32; i++) {
                    EXPECT(quant_value(&m, r, g * 32 + i) == q[i]);
                    EXPECT(row[g * 32 + i] == (float)q[i] * bf16_to_f32(s));
                }
            }
        }
        quant_free(&m);
    }
}

/* quant_transpose: every value and scale at its transposed place, for int8 and int4, with
 * columns that do not fill the last tile of 64 (160) and a row count that is not a multiple of
 * 64 either; the thread count changes nothing. */
static void test_transpose(void) {
    const int rows = 70, cols = 160;
    float *w = malloc(sizeof(float) * rows * cols);
    for (int i = 0; i < rows * cols; i++)
        w[i] = (float)((i * 37) % 29 - 14) * (1 + (i % 7));
    for (int dt = 0; dt < 2; dt++) {
        const quant_dtype t = dt ? QUANT_INT8 : QUANT_INT4;
        const int bits = quant_dtype_bits(t), ng = cols / 32;
        quant_matrix m;
        char err[256];
        if (quant_from_f32(&m, "w", w, rows, cols, t, 32, err, sizeof err)) die("%s", err);
        const size_t orb = (size_t)rows * bits / 8;
        uint8_t *qt = malloc(orb * cols), *qt1 = malloc(orb * cols);
        uint16_t *st = malloc(sizeof(uint16_t) * ng * rows), *st1 = malloc(sizeof *st1 * ng * rows);
        quant_transpose(&m, qt, st);
        for (int c = 0; c < cols; c++)
            for (int r = 0; r < rows; r++) {
                const uint8_t *row = qt + (size_t)c * orb;
                const int v = bits == 8 ? (int8_t)row[r] : ((row[r / 2] >> 4 * (r & 1)) & 15) - 8;
                EXPECT(v == quant_value(&m, r, c));
            }
        for (int g = 0; g < ng; g++)
            for (int r = 0; r < rows; r++)
                EXPECT(st[(size_t)g * rows + r] == m.scales[(size_t)r * ng + g]);
        const int threads = omp_get_max_threads();
        omp_set_num_threads(1);
        quant_transpose(&m, qt1, st1);
        omp_set_num_threads(threads);
        EXPECT(!memcmp(qt, qt1, orb * cols) && !memcmp(st, st1, sizeof *st * ng * rows));
        free(qt), free(qt1), free(st), free(st1);
        quant_free(&m);
    }
    free(w);
}

/* Random weights: each value is the nearest level of its group's grid (away from exact ties),
 * within the error bound; bf16 and fp32 inputs agree; the thread count changes nothing. */
static void test_random_round_trip(void) {
    const int rows = 24, cols = 384;
    const size_t n = (size_t)rows * cols;
    float *w = xmalloc(n * sizeof(float));
    uint16_t *wb = xmalloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) {
        float v = rng_val() * (float)(1 + rng_int(4)) * 0.01f;
        if (rng_int(50) == 0) v = 0.0f;
        w[i] = v;
    }
    const quant_dtype dts[] = {QUANT_INT4, QUANT_INT8};
    const int groups[] = {32, 64, 128};
    for (int di = 0; di < 2; di++)
        for (int gi = 0; gi < 3; gi++) {
            const quant_dtype dt = dts[di];
            const int G = groups[gi], Q = 1 << (quant_dtype_bits(dt) - 1);
            char err[256];
            quant_matrix m, m1;
            omp_set_num_threads(3);
            if (quant_from_f32(&m, "w", w, rows, cols, dt, G, err, sizeof err)) die("%s", err);
            omp_set_num_threads(1);
            if (quant_from_f32(&m1, "w", w, rows, cols, dt, G, err, sizeof err)) die("%s", err);
            EXPECT(!memcmp(m.q, m1.q, m.row_bytes * rows), "thread count changed the values");
            EXPECT(!memcmp(m.scales, m1.scales, (size_t)rows * (cols / G) * 2));
            quant_free(&m1);
            int bad = 0;
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++) {
                    const float s = quant_scale(&m, r, c / G);
                    const int q = quant_value(&m, r, c);
                    const double x = w[(size_t)r * cols + c], t = x / s;
                    double near = nearbyint(t);
                    near = near < -Q ? -Q : near > Q - 1 ? Q - 1 : near;
                    const double frac = fabs(t - floor(t) - 0.5);
                    if (q < -Q || q > Q - 1 || (frac > 1e-4 && q != (int)near)) bad++;
                    const double e = fabs(x - (double)q * s);
                    const double bound =
                        fabs(t) <= Q - 0.5 ? 0.5 * fabs(s) * (1 + 1e-6) : fabs(s) * (1 + Q / 256.0);
                    if (e > bound) bad++;
                }
            EXPECT(bad == 0, " %d values off the grid or out of bounds (%s, group %d)", bad,
                   quant_dtype_name(dt), G);
            /* the extreme of each group is exact on a bf16 weight; bf16 input == fp32 input */
            float *wr = xmalloc(n * sizeof(float));
            for (size_t i = 0; i < n; i++) {
                uint32_t u;
                memcpy(&u, &w[i], 4);
                wb[i] = (uint16_t)(u >> 16); /* truncation: any bf16 will do */
                wr[i] = bf16_to_f32(wb[i]);
            }
            quant_matrix mb, mf;
            if (quant_from_bf16(&mb, "w", wb, rows, cols, dt, G, err, sizeof err)) die("%s", err);
            if (quant_from_f32(&mf, "w", wr, rows, cols, dt, G, err, sizeof err)) die("%s", err);
            EXPECT(!memcmp(mb.q, mf.q, mb.row_bytes * rows));
            EXPECT(!memcmp(mb.scales, mf.scales, (size_t)rows * (cols / G) * 2));
            int inexact = 0;
            for (int r = 0; r < rows; r++)
                for (int g = 0; g < cols / G; g++) {
                    float amax = 0, mx = 0;
                    for (int i = 0; i < G; i++) {
                        float v = wr[(size_t)r * cols + g * G + i];
                        if (fabsf(v) > amax) amax = fabsf(v), mx = v;
                    }
                    if (amax > 0 && quant_scale(&mb, r, g) * (float)-Q != mx) inexact++;
                }
            EXPECT(inexact == 0, " %d bf16 groups whose extreme is not exactly -Q * s", inexact);
            free(wr);
            quant_free(&mb);
            quant_free(&mf);
            quant_free(&m);
        }
    free(w);
    free(wb);
}

/* quant_matmul and quant_matmul_ref against a double product over the dequantized rows. */
static void test_products(void) {
    const int shapes[][2] = {{40, 384}, {256, 1024}, {3, 128}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int di = 0; di < 2; di++) {
            const int rows = shapes[si][0], cols = shapes[si][1];
            const quant_dtype dt = di ? QUANT_INT8 : QUANT_INT4;
            const int G = si == 2 ? 128 : si == 1 ? 64 : 32;
            float *w = rand_vec((size_t)rows * cols);
            quant_matrix m;
            char err[256];
            if (quant_from_f32(&m, "w", w, rows, cols, dt, G, err, sizeof err)) die("%s", err);
            float *deq = xmalloc((size_t)rows * cols * sizeof(float));
            for (int r = 0; r < rows; r++)
                quant_dequant_row(&m, r, deq + (size_t)r * cols);
            const int ns[] = {1, 3, 5};
            for (int k = 0; k < 3; k++) {
                const int n = ns[k];
                float *x = rand_vec((size_t)n * cols);
                float *y = xmalloc((size_t)n * rows * sizeof(float));
                float *yr = xmalloc((size_t)n * rows * sizeof(float));
                quant_matmul(&m, x, n, y, 2);
                quant_matmul_ref(&m, x, n, yr);
                int bad = 0;
                for (int t = 0; t < n; t++)
                    for (int r = 0; r < rows; r++) {
                        double ref = 0, mag = 0;
                        for (int c = 0; c < cols; c++) {
                            double p = (double)deq[(size_t)r * cols + c] * x[(size_t)t * cols + c];
                            ref += p;
                            mag += fabs(p);
                        }
                        const double tol = 1e-5 * mag + 1e-6;
                        if (fabs(y[(size_t)t * rows + r] - ref) > tol) bad++;
                        if (fabs(yr[(size_t)t * rows + r] - ref) > tol) bad++;
                    }
                EXPECT(bad == 0, " %d outputs off the double reference (%dx%d %s g%d n=%d)", bad,
                       rows, cols, quant_dtype_name(dt), G, n);
                free(x);
                free(y);
                free(yr);
            }
            free(deq);
            free(w);
            quant_free(&m);
        }
}

static void expect_err(int line, int rc, const char *err, const char *a, const char *b,
                       const char *c) {
    if (rc != -1 || !strstr(err, a) || (b && !strstr(err, b)) || (c && !strstr(err, c))) {
        fprintf(stderr, "test_quant.c:%d: rc %d, message \"%s\" (want \"%s\", \"%s\", \"%s\")\n",
                line, rc, err, a, b ? b : "", c ? c : "");
        failures++;
    }
}

static void test_knobs(void) {
    char err[256];
    quant_dtype t;
    EXPECT(!quant_dtype_parse("WEIGHT_DTYPE", "bf16", &t, err, sizeof err) && t == QUANT_BF16);
    EXPECT(!quant_dtype_parse("WEIGHT_DTYPE", "int8", &t, err, sizeof err) && t == QUANT_INT8);
    EXPECT(!quant_dtype_parse("HEAD_DTYPE", "int4", &t, err, sizeof err) && t == QUANT_INT4);
    const char *bad_dt[] = {"INT4", "int2", "", " int4", "int4 ", "fp8", "bfloat16", "4"};
    for (size_t i = 0; i < sizeof bad_dt / sizeof bad_dt[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "\"%s\"", bad_dt[i]);
        expect_err(__LINE__, quant_dtype_parse("HEAD_DTYPE", bad_dt[i], &t, err, sizeof err), err,
                   "HEAD_DTYPE", want, "allowed: bf16, int8, int4");
    }
    expect_err(__LINE__, quant_dtype_parse("WEIGHT_DTYPE", NULL, &t, err, sizeof err), err,
               "WEIGHT_DTYPE", "(null)", "allowed");
    int g;
    EXPECT(!quant_group_parse("WEIGHT_GROUP", "32", &g, err, sizeof err) && g == 32);
    EXPECT(!quant_group_parse("WEIGHT_GROUP", "64", &g, err, sizeof err) && g == 64);
    EXPECT(!quant_group_parse("WEIGHT_GROUP", "128", &g, err, sizeof err) && g == 128);
    const char *bad_g[] = {"16", "256", "", "64x", "-32", "032", "0x20", "0", " 32"};
    for (size_t i = 0; i < sizeof bad_g / sizeof bad_g[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "\"%s\"", bad_g[i]);
        expect_err(__LINE__, quant_group_parse("WEIGHT_GROUP", bad_g[i], &g, err, sizeof err), err,
                   "WEIGHT_GROUP", want, "allowed: 32, 64, 128");
    }
    EXPECT(quant_group_valid(32) && quant_group_valid(64) && quant_group_valid(128));
    EXPECT(!quant_group_valid(0) && !quant_group_valid(16) && !quant_group_valid(96));

    expect_err(__LINE__, quant_check_shape("q_proj", QUANT_INT4, 8, 100, 32, err, sizeof err), err,
               "q_proj", "100 input columns", "multiple of the group size 32");
    expect_err(__LINE__, quant_check_shape("q_proj", QUANT_INT4, 8, 256, 16, err, sizeof err), err,
               "q_proj", "group size 16", "32, 64, 128");
    expect_err(__LINE__, quant_check_shape("q_proj", QUANT_BF16, 8, 256, 32, err, sizeof err), err,
               "q_proj", "bf16", "int8 or int4");
    expect_err(__LINE__, quant_check_shape("q_proj", QUANT_INT8, 0, 256, 32, err, sizeof err), err,
               "q_proj", "[0, 256]", "empty");
    EXPECT(!quant_check_shape("q_proj", QUANT_INT8, 8, 256, 128, err, sizeof err));

    quant_matrix m;
    float w[2 * 64];
    for (int i = 0; i < 128; i++)
        w[i] = 0.5f;
    w[64 + 5] = NAN;
    expect_err(
        __LINE__,
        quant_from_f32(&m, "layers.3.mlp.up_proj", w, 2, 64, QUANT_INT4, 32, err, sizeof err), err,
        "layers.3.mlp.up_proj", "[1, 5]", "not finite");
    EXPECT(m.q == NULL && m.scales == NULL);
    w[64 + 5] = INFINITY;
    expect_err(__LINE__, quant_from_f32(&m, "w", w, 2, 64, QUANT_INT8, 32, err, sizeof err), err,
               "w", "[1, 5]", "not finite");
    uint16_t wb[64];
    for (int i = 0; i < 64; i++)
        wb[i] = 0x3f80;
    wb[40] = 0x7fc0; /* NaN */
    expect_err(__LINE__, quant_from_bf16(&m, "w", wb, 1, 64, QUANT_INT4, 64, err, sizeof err), err,
               "w", "[0, 40]", "not finite");

    /* bytes: values plus bf16 scales */
    EXPECT(quant_bytes(QUANT_INT4, 4, 256, 32) == 4 * 128 + 4 * 8 * 2);
    EXPECT(quant_bytes(QUANT_INT8, 4, 256, 128) == 4 * 256 + 4 * 2 * 2);
    EXPECT(quant_bytes(QUANT_BF16, 4, 256, 32) == 4 * 256 * 2);
    EXPECT(quant_bytes(QUANT_INT4, 2560, 10240, 32) == 2560u * 5120 + 2560u * 320 * 2);
    EXPECT(!strcmp(quant_dtype_name(QUANT_INT4), "int4") && quant_dtype_bits(QUANT_INT4) == 4);
    EXPECT(!strcmp(quant_dtype_name(QUANT_INT8), "int8") && quant_dtype_bits(QUANT_INT8) == 8);
    EXPECT(!strcmp(quant_dtype_name(QUANT_BF16), "bf16") && quant_dtype_bits(QUANT_BF16) == 16);
}

/* Whether v is an fp16 exactly: an fp32 that survives the round trip through fp16. */
static int f16_exact(double v) {
    const float f = (float)v;
    return f == v && f16_to_f32(f32_to_f16(f)) == f;
}

/* An int4 matrix of one row whose groups have the given scale bits (values: every level). */
static void one_row(quant_matrix *m, const uint16_t *scales, int groups) {
    char err[256];
    if (quant_alloc(m, "s", QUANT_INT4, 1, 32 * groups, 32, err, sizeof err)) die("%s", err);
    for (int g = 0; g < groups; g++)
        m->scales[g] = scales[g];
    for (int j = 0; j < 16 * groups; j++)
        m->q[j] = (uint8_t)(j % 16 | (15 - j % 16) << 4);
}

/* quant_f16_exponent against hand-worked exponents, then on random matrices with rows 40
 * binades apart at most: every q * s 2^e is an fp16. */
static void test_f16_exponent(void) {
    const struct {
        uint16_t s[2];
        int ok, e;
    } cases[] = {
        {{0x0000, 0x8000}, 1, 0},    /* all zero (either sign): any exponent, 0 */
        {{0x3f80, 0x0000}, 1, 12},   /* 1: |q s| <= 8 -> 2^15 */
        {{0xbf80, 0x3f80}, 1, 12},   /* -1 as 1 */
        {{0x3f40, 0x0000}, 1, 13},   /* 0.75 = 3 * 2^-2: leading bit 2^-1 */
        {{0x3f80, 0x3080}, 1, 12},   /* 1 and 2^-30: the low bit at 2^-18 after the shift */
        {{0x3f80, 0x2d80}, 1, 12},   /* 1 and 2^-36: the low bit at 2^-24 exactly */
        {{0x3f80, 0x2d00}, 0, 0},    /* 1 and 2^-37: 2^-25 is below every fp16 */
        {{0x4780, 0x3380}, 0, 0},    /* 2^16 and 2^-24: 40 binades apart */
        {{0x0001, 0x0000}, 1, 145},  /* the smallest subnormal bf16, 2^-133 */
        {{0x7f7f, 0x0000}, 1, -115}, /* the largest bf16, 255 * 2^120 */
        {{0x7fc0, 0x3f80}, 0, 0},    /* NaN */
        {{0x7f80, 0x3f80}, 0, 0},    /* inf */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        quant_matrix m;
        one_row(&m, cases[i].s, 2);
        int e = -999;
        const int ok = !quant_f16_exponent(&m, &e);
        EXPECT(ok == cases[i].ok);
        if (ok && cases[i].ok && e != cases[i].e) {
            fprintf(stderr, "test_quant.c: scales 0x%04x 0x%04x: exponent %d, expected %d\n",
                    cases[i].s[0], cases[i].s[1], e, cases[i].e);
            failures++;
        }
        quant_free(&m);
    }
    /* every finite non-zero bf16 as the one scale of a row: each q * s 2^e an fp16, and e the
     * largest exponent for which that holds */
    long bad = 0;
    for (unsigned b = 1; b < 0x10000u; b++) {
        if ((b & 0x7f80u) == 0x7f80u || !(b & 0x7fffu)) continue;
        const uint16_t sc[2] = {(uint16_t)b, 0};
        quant_matrix m;
        one_row(&m, sc, 2);
        int e;
        if (quant_f16_exponent(&m, &e)) {
            bad++;
            quant_free(&m);
            continue;
        }
        int all = 1, any_over = 0;
        for (int q = -8; q < 8; q++) {
            all &= f16_exact(ldexp((double)q * bf16_to_f32((uint16_t)b), e));
            any_over |= !f16_exact(ldexp((double)q * bf16_to_f32((uint16_t)b), e + 1));
        }
        bad += !all || !any_over;
        quant_free(&m);
    }
    EXPECT(bad == 0);
    /* int8 never: q * s has up to 15 significant bits */
    quant_matrix m8;
    char err[256];
    const float ones[32] = {1};
    EXPECT(!quant_from_f32(&m8, "i8", ones, 1, 32, QUANT_INT8, 32, err, sizeof err));
    int e8;
    EXPECT(quant_f16_exponent(&m8, &e8) == -1);
    quant_free(&m8);
    /* random matrices, rows of magnitudes 2^-10 .. 2^10 (a scale's bits then span at most 28
     * binades: 20, and 8 significant bits), then one with rows at 2^-16 and 2^16 (36 + 8 > 36) */
    for (int trial = 0; trial <= 20; trial++) {
        const int rows = trial < 20 ? 1 + rng_int(8) : 2, cols = 128;
        float *w = xmalloc(sizeof(float) * rows * cols);
        for (int r = 0; r < rows; r++) {
            const float mag = ldexpf(1.0f, trial < 20 ? rng_int(21) - 10 : r ? 16 : -16);
            for (int c = 0; c < cols; c++)
                w[r * cols + c] = mag * rng_val();
        }
        quant_matrix m;
        EXPECT(!quant_from_f32(&m, "r", w, rows, cols, QUANT_INT4, 32, err, sizeof err));
        int e;
        if (trial == 20) {
            EXPECT(quant_f16_exponent(&m, &e) == -1);
            free(w);
            quant_free(&m);
            continue;
        }
        EXPECT(!quant_f16_exponent(&m, &e));
        int all = 1;
        float *row = xmalloc(sizeof(float) * cols);
        for (int r = 0; r < rows; r++) {
            quant_dequant_row(&m, r, row);
            for (int c = 0; c < cols; c++) {
                all &= f16_exact(ldexp(row[c], e));
            }
        }
        EXPECT(all);
        free(row);
        free(w);
        quant_free(&m);
    }
}

int main(void) {
    uint64_t seed = rng_seed_from_env();
    printf("test_quant: seed %llu (TEST_SEED to replay)\n", (unsigned long long)seed);
    test_hand_groups();
    test_addressing();
    test_transpose();
    test_random_round_trip();
    test_products();
    test_knobs();
    test_f16_exponent();
    return test_exit("test_quant");
}
