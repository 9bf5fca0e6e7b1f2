/* head_norm.cuh: one head vector's RMSNorm, scale and rotate-half RoPE, the arithmetic of
 * rmsnorm.cu's norm_rope_store_kernel, shared with the attention's fold (attention.cu), which
 * normalises and rotates a decode step's q, k and v itself. A verify chunk (the norm-RoPE-KV
 * kernel, then the attention) and the decode steps it stands for (the attention with the fold)
 * must agree bit for bit, so both take every value from these functions: one definition, and
 * explicit roundings (__fmul_rn and friends), so that no fma contraction can differ between the
 * two call sites.
 *
 * The layout is norm_rope_store_kernel's: a group of G = ceil(half / 32) warps takes one vector
 * of dim = 2 half values; thread i of the group holds the pair (i, i + half) when i < half,
 * nothing (zeros) above. Device code; included by rmsnorm.cu and attention.cu. */
#ifndef HEAD_NORM_CUH
#define HEAD_NORM_CUH

#include "kcommon.cuh"

/* Warps a group takes for a vector of dim values. */
__host__ __device__ __forceinline__ int hn_warps(int dim) {
    return (dim / 2 + 31) / 32;
}

/* Element i of a scale in its dtype (kernels.h KDT_*). */
__device__ __forceinline__ float hn_weight(const void *w, int dtype, int i) {
    return dtype == KDT_BF16  ? to_f32(((const __nv_bfloat16 *)w)[i])
           : dtype == KDT_F16 ? to_f32(((const __half *)w)[i])
                              : ((const float *)w)[i];
}

/* The group's sum of x1^2 + x2^2 over its threads: each warp's warp_sum, then the G warp sums as
 * block_sum adds a block of G warps. wg: this warp's index in the group; red: 32 floats of
 * shared memory for this group alone. Every thread of the block must call it (two barriers). */
__device__ __forceinline__ float hn_sum_sq(float x1, float x2, float *red, int G, int wg,
                                           int lane) {
    float v = warp_sum(__fmaf_rn(x1, x1, __fmul_rn(x2, x2)));
    __syncthreads(); /* red may still be read by a previous call */
    if (lane == 0) red[wg] = v;
    __syncthreads();
    v = lane < G ? red[lane] : 0.0f;
    return warp_sum(v);
}

/* The angle of pair i at position pos: false when the pair is not rotated (no RoPE, or a zero
 * frequency: proportional RoPE), else its sine and cosine. */
__device__ __forceinline__ bool hn_angle(const float *inv_freq, int i, int pos, float &sn,
                                         float &cs) {
    sn = 0.0f;
    cs = 1.0f;
    if (!inv_freq) return false;
    const float f = inv_freq[i];
    if (f == 0.0f) return false;
    sincosf(__fmul_rn(f, (float)pos), &sn, &cs);
    return true;
}

/* The pair (x1, x2) of a vector of dim values whose squares sum to ss: normalised, times
 * (w1, w2) when has_w, rotated by (sn, cs) when rot. */
__device__ __forceinline__ void hn_pair(float x1, float x2, float ss, int dim, float eps,
                                        bool has_w, float w1, float w2, bool rot, float sn,
                                        float cs, float &a, float &b) {
    const float inv = __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, (float)dim), eps)));
    a = __fmul_rn(x1, inv);
    b = __fmul_rn(x2, inv);
    if (has_w) {
        a = __fmul_rn(a, w1);
        b = __fmul_rn(b, w2);
    }
    if (rot) {
        const float ra = __fsub_rn(__fmul_rn(a, cs), __fmul_rn(b, sn));
        const float rb = __fadd_rn(__fmul_rn(b, cs), __fmul_rn(a, sn));
        a = ra;
        b = rb;
    }
}

#endif
