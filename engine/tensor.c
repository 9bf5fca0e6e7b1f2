/* tensor.c: scalar conversions between fp32 and the 16-bit weight formats, reading one
 * element of a tensor, and a tensor over a checkpoint's bytes (type and shape checked). The hot
 * loops (backend_cpu.c) inline bf16_to_f32 from model.h; these are for tests, loaders and
 * single values such as scales. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "model.h"

uint16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest, ties to even */
    return (uint16_t)(u >> 16);
}

float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    int exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ffu;
    float f;
    if (exp == 0) { /* zero or subnormal: mant * 2^-24 */
        f = ldexpf((float)mant, -24);
        uint32_t u;
        memcpy(&u, &f, 4);
        u |= sign;
        memcpy(&f, &u, 4);
        return f;
    }
    uint32_t u;
    if (exp == 31)
        u = sign | 0x7f800000u | (mant << 13); /* inf / NaN */
    else
        u = sign | ((uint32_t)(exp - 15 + 127) << 23) | (mant << 13);
    memcpy(&f, &u, 4);
    return f;
}

uint16_t f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    float a = fabsf(f);
    if (isnan(f)) return sign | 0x7e00u;
    if (a >= 65520.0f) return sign | 0x7c00u; /* rounds to infinity */
    if (a < 6.103515625e-05f) {               /* subnormal half: multiple of 2^-24 */
        return sign | (uint16_t)lrintf(a * 16777216.0f);
    }
    int e;
    float m = frexpf(a, &e);                         /* a = m * 2^e, m in [0.5, 1) */
    long mant = lrintf((m * 2.0f - 1.0f) * 1024.0f); /* 10 fraction bits, nearest even */
    int he = e - 1 + 15;
    if (mant == 1024) {
        mant = 0;
        he++;
    }
    if (he >= 31) return sign | 0x7c00u;
    return sign | (uint16_t)(he << 10) | (uint16_t)mant;
}

float tensor_get(const tensor *t, size_t i) {
    switch (t->dtype) {
    case DT_F32:
        return ((const float *)t->data)[i];
    case DT_BF16:
        return bf16_to_f32(((const uint16_t *)t->data)[i]);
    case DT_F16:
        return f16_to_f32(((const uint16_t *)t->data)[i]);
    }
    return NAN;
}

int tensor_from_checkpoint(tensor *out, const st_tensor *t, const char *file, const char *name,
                           int rows, int cols, const char *dir, char *err, size_t errlen) {
    if (!st_dtype_is_float(t->dtype)) {
        snprintf(err, errlen, "%s: tensor '%s' has dtype %s; weights must be BF16, F16 or F32",
                 file, name, st_dtype_name(t->dtype));
        return -1;
    }
    int ok = cols ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols
                  : t->ndim == 1 && t->shape[0] == rows;
    if (!ok) {
        char got[128], want[64];
        if (cols)
            snprintf(want, sizeof want, "[%d, %d]", rows, cols);
        else
            snprintf(want, sizeof want, "[%d]", rows);
        snprintf(err, errlen, "%s: tensor '%s' has shape %s, but %s/config.json implies %s", file,
                 name, st_shape_str(t, got, sizeof got), dir, want);
        return -1;
    }
    out->data = t->data;
    out->dtype = t->dtype == ST_F32 ? DT_F32 : t->dtype == ST_BF16 ? DT_BF16 : DT_F16;
    out->rows = cols ? rows : 1;
    out->cols = cols ? cols : rows;
    return 0;
}
