/* float16.c: bf16 / f16 <-> fp32 scalar conversions (see float16.h). */
#include "float16.h"

#include <math.h>
#include <string.h>

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
