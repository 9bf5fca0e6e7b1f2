/* float16.h: the two 16-bit float formats of checkpoints, bf16 and IEEE f16, and their scalar
 * conversions to and from fp32. A leaf: the safetensors reader, the tensor views (model.h) and
 * the backends all use it, and it uses nothing of theirs. bf16_to_f32 is inline because the
 * CPU backend's hot loops call it once per weight. */
#ifndef FLOAT16_H
#define FLOAT16_H

#include <stdint.h>

static inline float bf16_to_f32(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } v = {.u = (uint32_t)h << 16};
    return v.f;
}

/* fp32 -> bf16, rounded to nearest even (a NaN stays a quiet NaN). */
uint16_t f32_to_bf16(float f);

/* IEEE half precision <-> fp32 (subnormals, infinities and NaN included; to f16 rounds to
 * nearest even, overflow to infinity). */
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);

#endif
