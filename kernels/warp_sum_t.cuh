/* warp_sum_t.cuh: a warp's sums of many values at once, transposed - each lane ends with the sum
 * of one of them - in about one shuffle a value instead of five (kernels/mlp.cu, and the
 * experiment it came from, dev/cuda/mlp_slice.cu). */
#ifndef WARP_SUM_T_CUH
#define WARP_SUM_T_CUH

/* One step of warp_sum_t: lanes with bit OFF keep the upper HALF of their values, the others the
 * lower half, each adding its partner's copy of the half it keeps. */
template <int HALF, int OFF> __device__ __forceinline__ void warp_fold(float *v, int lane, int &r) {
    const bool hi = lane & OFF;
#pragma unroll
    for (int i = 0; i < HALF; i++) {
        const float send = hi ? v[i] : v[i + HALF], keep = hi ? v[i + HALF] : v[i];
        v[i] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
    }
    if (hi) r += HALF;
    if constexpr (HALF > 1) warp_fold<HALF / 2, OFF / 2>(v, lane, r);
}

/* The warp's sums of v[0 .. NV) (NV a power of two up to 32), transposed: NV - 1 shuffles in all
 * plus log2(32 / NV) for the offsets left over, not 5 a value. Lane l ends with the sum of value
 * *row; the 32 / NV lanes that differ from l only in their low bits hold the same. Each value is
 * summed over the same pairs of lanes (distance 16, 8, ..., 1) as warp_sum's butterfly; a lane may
 * add its partner's half to its own where warp_sum's adds the other way round, and floating-point
 * addition commutes exactly, so the bits are warp_sum's. */
template <int NV> __device__ __forceinline__ float warp_sum_t(float *v, int lane, int *row) {
    int r = 0;
    warp_fold<NV / 2, 16>(v, lane, r);
#pragma unroll
    for (int off = 16 / NV; off >= 1; off >>= 1)
        v[0] += __shfl_xor_sync(0xffffffffu, v[0], off);
    *row = r;
    return v[0];
}

/* The power of two at or above n: the slots of warp_sum_t that n values take (a form of n inputs
 * sums zeros in the slots past n; each value's sum involves that value alone, so the live ones
 * keep their bits). */
__host__ __device__ constexpr int pow2_at_least(int n) {
    return n <= 1 ? 1 : 2 * pow2_at_least((n + 1) / 2);
}

#endif
