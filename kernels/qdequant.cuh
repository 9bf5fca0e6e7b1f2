/* qdequant.cuh: int4 / int8 weights (quant.h's layout) to fp32 without conversion instructions,
 * shared by matvec_q.cu (rows of a matrix) and mlp.cu (the whole MLP); q_or also serves
 * matvec_q_mma.cu's bf16 pairs.
 *
 * The trick. A nibble (or byte) u or-ed into the mantissa of a power of two 2^e at the bit worth
 * 1 gives the float 2^e + u exactly; subtracting 2^e + 8 (int4, stored q + 8) or 2^e + 128 (int8
 * after an xor of the sign bits) leaves q exactly. q_dequant does that, one LOP3 (or byte
 * permute) and one FADD a weight. q_dequant_scaled goes one step further for weights that are
 * then multiplied by their scale anyway (mlp.cu's down): fma(2^e + u, s, -(2^e + bias) s) is
 * q s exactly, one LOP3 and one FFMA a weight, when -(2^e + bias) s is itself exact - true for
 * e = 15 or 11 (2^15 + 8 and 2^11 + 8 have at most 13 significant bits, 2^15 + 128 has 9, a bf16
 * scale 8: at most 21 < 24), and not for matvec_q's 2^23 + 8 (21 bits). So the nibbles and bytes
 * go to bits 8 - 15 first (a shift a pair of nibbles). Exact while the bias product stays finite
 * (|s| < 2^112); quant.h's scales are a weight's magnitude over 8 or 128. */
#ifndef QDEQUANT_CUH
#define QDEQUANT_CUH

/* (v & MASK) | magic, one instruction: the compiler's own form is an and, then an or (both
 * constants immediates, which one LOP3 cannot take), twice the integer work. */
template <unsigned MASK> __device__ __forceinline__ float q_or(unsigned v, unsigned magic) {
    unsigned d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(v), "n"(MASK), "r"(magic));
    return __uint_as_float(d);
}

/* The exponents that give bit 4i of the mantissa the weight 1 (i = 0 .. 3): 2^(23 - 4i), as
 * float bits. A nibble u at bits 4i or-ed into mg[i] is the float 2^(23 - 4i) + u; minus
 * 2^(23 - 4i) + 8 it is u - 8 = q, exactly (one add with an immediate). */
struct q_magics {
    unsigned m[4];
};
__device__ __forceinline__ q_magics q_magics_make() {
    q_magics g;
    const unsigned e[4] = {0x4B000000u, 0x49000000u, 0x47000000u, 0x45000000u};
#pragma unroll
    for (int i = 0; i < 4; i++) /* kept in registers: an opaque move, not an immediate */
        asm volatile("mov.b32 %0, %1;" : "=r"(g.m[i]) : "r"(e[i]));
    return g;
}

/* The eight int4 weights of word v (column order: nibble i at bits 4i), exactly, as fp32:
 * nibbles 0 .. 3 in place, 4 .. 7 shifted down by 16 bits first. */
template <int B> __device__ __forceinline__ void q_dequant(unsigned v, float *q, const q_magics &g);

template <> __device__ __forceinline__ void q_dequant<4>(unsigned v, float *q, const q_magics &g) {
    const unsigned h = v >> 16;
    q[0] = __fadd_rn(q_or<0xFu>(v, g.m[0]), -8388616.0f); /* 2^23 + 8 */
    q[1] = __fadd_rn(q_or<0xF0u>(v, g.m[1]), -524296.0f); /* 2^19 + 8 */
    q[2] = __fadd_rn(q_or<0xF00u>(v, g.m[2]), -32776.0f); /* 2^15 + 8 */
    q[3] = __fadd_rn(q_or<0xF000u>(v, g.m[3]), -2056.0f); /* 2^11 + 8 */
    q[4] = __fadd_rn(q_or<0xFu>(h, g.m[0]), -8388616.0f);
    q[5] = __fadd_rn(q_or<0xF0u>(h, g.m[1]), -524296.0f);
    q[6] = __fadd_rn(q_or<0xF00u>(h, g.m[2]), -32776.0f);
    q[7] = __fadd_rn(q_or<0xF000u>(h, g.m[3]), -2056.0f);
}

/* The four int8 weights of word v (byte i = column i), exactly: q + 128 by an xor of the sign
 * bits, each byte permuted into 0x4B0000uu = 2^23 + u, minus 2^23 + 128. */
template <> __device__ __forceinline__ void q_dequant<8>(unsigned v, float *q, const q_magics &g) {
    const unsigned u = v ^ 0x80808080u;
    q[0] = __fadd_rn(__uint_as_float(__byte_perm(u, g.m[0], 0x7650)), -8388736.0f);
    q[1] = __fadd_rn(__uint_as_float(__byte_perm(u, g.m[0], 0x7651)), -8388736.0f);
    q[2] = __fadd_rn(__uint_as_float(__byte_perm(u, g.m[0], 0x7652)), -8388736.0f);
    q[3] = __fadd_rn(__uint_as_float(__byte_perm(u, g.m[0], 0x7653)), -8388736.0f);
}

/* Scales of 8 columns of a transposed int4 or int8 row (mlp.cu's down: column j of the thread's
 * eight has its own scale), with the biases q_dequant_scaled needs: s[j] and
 * b[j] = -(2^e_j + offset) s[j], e_j 15 for int8 and for int4's even columns, 11 for int4's odd
 * ones. Exact products (the header). */
template <int B> struct q_scales8 {
    float s[8], b[8];
    __device__ __forceinline__ void set(const uint4 &bf) { /* 8 bf16 scales */
        const unsigned w[4] = {bf.x, bf.y, bf.z, bf.w};
#pragma unroll
        for (int j = 0; j < 8; j++) {
            s[j] = __uint_as_float(j & 1 ? w[j / 2] & 0xFFFF0000u : w[j / 2] << 16);
            const float off = B == 8 ? 32896.0f : j & 1 ? 2056.0f : 32776.0f;
            b[j] = __fmul_rn(-off, s[j]);
        }
    }
};

/* The eight weights q s of a thread's 8 columns of a transposed row: int4, one 32-bit word
 * (column j in nibble j); int8, two words (column j in byte j). g: q_magics_make's registers. */
__device__ __forceinline__ void q_dequant_scaled4(unsigned v, const q_scales8<4> &sc, float *w,
                                                  const q_magics &g) {
    const unsigned p[4] = {v << 8, v, v >> 8, v >> 16}; /* nibbles 2i, 2i + 1 at bits 8 - 15 */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        w[2 * i] = __fmaf_rn(q_or<0xF00u>(p[i], g.m[2]), sc.s[2 * i], sc.b[2 * i]);
        w[2 * i + 1] = __fmaf_rn(q_or<0xF000u>(p[i], g.m[3]), sc.s[2 * i + 1], sc.b[2 * i + 1]);
    }
}

__device__ __forceinline__ void q_dequant_scaled8(uint2 v, const q_scales8<8> &sc, float *w,
                                                  const q_magics &g) {
    const unsigned u[2] = {v.x ^ 0x80808080u, v.y ^ 0x80808080u};
    const unsigned sel[4] = {0x7504, 0x7514, 0x7524, 0x7534}; /* byte i at bits 8 - 15 of 2^15 */
#pragma unroll
    for (int j = 0; j < 8; j++)
        w[j] =
            __fmaf_rn(__uint_as_float(__byte_perm(u[j / 4], g.m[2], sel[j % 4])), sc.s[j], sc.b[j]);
}

#endif
