/* matvec_rows.cu: matrix products with 2 .. 8 inputs (a speculative verify pass, a short chunk)
 * on the CUDA cores, R rows a warp - the kernel matvec.cu's launcher hands such launches of at
 * least 1 MiB of weights to (mv_rows_launch), with the same sums as its
 * one-input kernels, bit for bit. */
#include "kcommon.cuh"
#include "matvec.cuh"
#include "warp_sum_t.cuh"

/* Two to eight inputs (a speculative verify, a short chunk), R rows per warp. The general
 * kernel loads 32 bytes of x per input for every 16 bytes of weights, and at n = 4 on E4B that
 * stalls it on L1 (Nsight Compute: o_proj at 19 % of DRAM bandwidth, L1 79 % busy; a verify
 * over 4 positions cost 2.2 decode steps). Here a warp loads each chunk of x once for R
 * rows: warp w takes slice w % K of rows r, r + 8 / K, ... of its block. A row's sum is the
 * general kernel's - the lane's chunks in column order, the warp sum, the K slices in order -
 * so verify and decode still agree bit for bit. Inputs NL at a time (more inputs would pass
 * over the rows again); the vector path only (16-byte loads). Used in launches of at least
 * 1 MiB of weights (matvec.cu mv_rows_min_bytes): halving the blocks costs a small,
 * latency-bound launch more than the x loads it saves (the small model's verify over 4 positions
 * 2.0 decode steps instead of 1.5, while E4B's fell from 2.22 to 1.97). E4B's per-layer
 * products (1.25 MiB each) gain too: on an H200, verify over 2 / 3 / 4 / 5 / 8 positions 3.011
 * / 3.548 / 3.856 / 5.514 / 5.963 ms against 3.114 / 3.623 / 3.936 / 5.575 / 6.110 with a
 * threshold of 4 MiB. The small model's matrices stay below it but for its head (3 MiB), which
 * a verify pass reads through the fused argmax.
 *
 * Its loads. Bound by their latency, not by any bandwidth (Nsight Compute: q + k + v over 8
 * inputs at 0.26 instructions a scheduler a cycle, 12 of 22 cycles a warp waiting on L1TEX,
 * DRAM 9 % busy). So a chunk's x for all NL inputs is asked for at once, before its products,
 * and the next chunk's weights before them too; the first chunk's weights go out before the
 * wait for the previous kernel (weights never depend on it). Measured on E4B (an H200, one
 * process alternating): verify passes over 2 / 4 / 8 positions 3.73 / 4.65 / 8.45 ms against
 * 3.75 / 4.89 / 8.85 with a loop of 4 chunks unrolled, each input's x loaded just before its
 * products, and with the MLP as grouped products (GEMMA_CUDA_MLP=0, the gate + up pair through
 * this kernel) 4.86 / 9.00 ms over 4 / 8 against 6.00 / 9.74. Slower: half the inputs' x at a
 * time, and every line of x asked of L1 first (prefetch.global.L1) in this kernel and in the
 * general one.
 *
 * The warp's R x NL sums (x 2 with the pair) are taken at once, transposed (warp_sum_t: the same
 * butterfly as warp_sum, so the same bits, in one shuffle a value instead of five). */
typedef void (*mv_rows_fn)(const mv_launch, const float *, int, int);

/* NL inputs a pass (their x loaded and dotted), NT = pow2_at_least(NL) slots of the warp's sums:
 * a slot past NL holds a constant zero, summed beside the live ones and never stored (each
 * value's sum in warp_sum_t involves that value alone, so a live input's bits do not depend on
 * NT). */
template <typename T, int NL, int R, bool PAIR>
__global__ void __launch_bounds__(MV_WARPS * 32)
    matvec_rows_kernel(const __grid_constant__ mv_launch L, const float *x, int cols, int n) {
    constexpr int NT = pow2_at_least(NL);
    const mv_seg &sg = L.seg[mv_seg_of(L, (int)blockIdx.x)];
    __shared__ float part[R][MV_WARPS][NT], part_up[R][MV_WARPS][NT];
    constexpr int V = vec16<T>::n;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int K = sg.k, slice = warp % K, per = MV_WARPS / K; /* rows of one pass of the block */
    const int row0 = ((int)blockIdx.x - sg.block0) * (R * per) + warp / K;
    const int stride = K * 32 * V, c0 = (slice * 32 + lane) * V;
    const int nch = c0 < cols ? (cols - c0 + stride - 1) / stride : 0;
    const bool pair = PAIR && sg.epilogue == K_MV_GELU_PAIR;
    const T *w1[R], *w2[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int row = row0 + r * per;
        const size_t off = (size_t)(row < sg.rows ? row : 0) * cols + c0; /* dead rows: row 0 */
        w1[r] = (const T *)sg.w + off;
        w2[r] = pair ? (const T *)sg.w_up + off : w1[r];
    }
    /* wn, wn2: the raw weights of the next chunk of each row */
    uint4 wn[R], wn2[R];
    auto load_chunk = [&](int c) {
#pragma unroll
        for (int r = 0; r < R; r++) {
            wn[r] = __ldcs(reinterpret_cast<const uint4 *>(w1[r] + c));
            if (pair) wn2[r] = __ldcs(reinterpret_cast<const uint4 *>(w2[r] + c));
        }
    };
    if (nch > 0) load_chunk(0);
    k_wait_prior();

    for (int t0 = 0; t0 < n; t0 += NL) {
        float acc[R][NT], acc_up[R][NT];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int t = 0; t < NT; t++)
                acc[r][t] = acc_up[r][t] = 0.0f;
        /* mv_rows_launch sends n <= 8 with NL = n, so one pass; a second would stream the rows
         * again */
        if (t0 > 0 && nch > 0) load_chunk(0);
#pragma unroll 1
        for (int ch = 0; ch < nch; ch++) {
            const int c = ch * stride;
            float wf[R][V], wf2[R][V];
#pragma unroll
            for (int r = 0; r < R; r++) {
                unpack16<T>(wn[r], wf[r]);
                if (pair) unpack16<T>(wn2[r], wf2[r]);
            }
            if (ch + 1 < nch) load_chunk(c + stride);
            float4 xv[NL][V / 4]; /* inputs past n read input t0's x; their sums are never stored */
#pragma unroll
            for (int t = 0; t < NL; t++) {
                const float4 *xp = reinterpret_cast<const float4 *>(
                    x + (size_t)(t0 + t < n ? t0 + t : t0) * cols + c0 + c);
#pragma unroll
                for (int q = 0; q < V / 4; q++)
                    xv[t][q] = k_ld_act(xp + q);
            }
#pragma unroll
            for (int t = 0; t < NL; t++)
#pragma unroll
                for (int r = 0; r < R; r++)
#pragma unroll
                    for (int q = 0; q < V / 4; q++) {
                        acc[r][t] = mv_dot4(wf[r] + 4 * q, xv[t][q], acc[r][t]);
                        if (pair) acc_up[r][t] = mv_dot4(wf2[r] + 4 * q, xv[t][q], acc_up[r][t]);
                    }
        }
        /* value (m R + r) NT + t (m = 1: the up matrix) ends at the lanes warp_sum_t names; the
         * up value of a pair is 16 lanes from its gate value (the index's top bit is the first
         * fold's) */
        constexpr int NV = (PAIR ? 2 : 1) * R * NT;
        float v[NV];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int t = 0; t < NT; t++) {
                v[r * NT + t] = acc[r][t];
                if constexpr (PAIR) v[(R + r) * NT + t] = acc_up[r][t];
            }
        int idx;
        const float sum = warp_sum_t<NV>(v, lane, &idx);
        const float sum_up = PAIR ? __shfl_xor_sync(0xffffffffu, sum, 16) : 0.0f;
        const int ri = (idx / NT) % R, ti = idx % NT, row_i = row0 + ri * per;
        const bool own = (lane & (32 / NV - 1)) == 0 && idx < R * NT && ti < NL;
        if (K == 1) {
            if (own && row_i < sg.rows && t0 + ti < n) mv_store(sg, t0 + ti, row_i, sum, sum_up);
        } else { /* uniform over the block: K is the segment's, and a block has one */
            if (own) {
                part[ri][warp][ti] = sum;
                part_up[ri][warp][ti] = sum_up;
            }
            __syncthreads();
            /* Lane q of a row's first slice adds and stores value q (row r = q / NT, input t =
             * q % NT): the R x NT stores go out at once, not one after another from lane 0, as in
             * matvec.cu's epilogue (the slices still add in order: the same bits). */
            const int r = lane / NT, t = lane % NT, row = row0 + r * per;
            if (slice == 0 && lane < R * NT && t < NL && row < sg.rows && t0 + t < n) {
                float s = 0.0f, su = 0.0f;
                for (int k = 0; k < K; k++) {
                    s += part[r][warp + k][t];
                    su += part_up[r][warp + k][t];
                }
                mv_store(sg, t0 + t, row, s, su);
            }
            __syncthreads(); /* part is reused by the next group of inputs */
        }
    }
}

/* The form for R rows a warp (2, or 4 without the pair) and n = 2 .. 8 inputs, each its own
 * (one pass over the rows). Inputs past n cost a form as much as live ones (their x is loaded and
 * dotted), so every n has a form whose inputs are all live. On E4B (an H200, one process each,
 * alternating), verify passes over 2 / 4 / 8 positions 3.139 / 4.057 / 7.085 ms with a 2-input
 * form against 3.385 / 4.200 / 7.205 with the 4-input one (over 2 positions a sliding layer's q +
 * k + v launch 5.5 us against 7.4 and o 4.4 against 7.2); and with a form for each n here and in
 * mlp.cu, verify over 3 / 5 / 6 / 7 positions 3.382 / 4.494 / 4.843 / 5.248 ms against 3.554 /
 * 5.326 / 5.395 / 5.469 with the 4- and 8-input forms. */
template <typename T, int R, bool PAIR> static mv_rows_fn mv_rows_form(int n) {
    static const mv_rows_fn forms[] = {
        matvec_rows_kernel<T, 2, R, PAIR>, matvec_rows_kernel<T, 3, R, PAIR>,
        matvec_rows_kernel<T, 4, R, PAIR>, matvec_rows_kernel<T, 5, R, PAIR>,
        matvec_rows_kernel<T, 6, R, PAIR>, matvec_rows_kernel<T, 7, R, PAIR>,
        matvec_rows_kernel<T, 8, R, PAIR>};
    return forms[(n < 2 ? 2 : n > 8 ? 8 : n) - 2];
}

template <typename T>
void mv_rows_launch(cudaStream_t s, const mv_launch &L, unsigned blocks, const float *x, int cols,
                    int n, int R, bool pair) {
    const mv_rows_fn kernel = pair     ? mv_rows_form<T, 2, true>(n)
                              : R == 4 ? mv_rows_form<T, 4, false>(n)
                                       : mv_rows_form<T, 2, false>(n);
    k_launch(kernel, dim3(blocks), dim3(MV_WARPS * 32), s, L, x, cols, n);
}

template void mv_rows_launch<float>(cudaStream_t, const mv_launch &, unsigned, const float *, int,
                                    int, int, bool);
template void mv_rows_launch<__half>(cudaStream_t, const mv_launch &, unsigned, const float *, int,
                                     int, int, bool);
template void mv_rows_launch<__nv_bfloat16>(cudaStream_t, const mv_launch &, unsigned,
                                            const float *, int, int, int, bool);
