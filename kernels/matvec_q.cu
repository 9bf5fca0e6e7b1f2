/* matvec_q.cu: matrix-vector products with int4 or int8 weights and bf16 group scales (the layout
 * of matvec_q.h), fp32 inputs and outputs, for the decode step (n = 1) and the speculative verify
 * pass (n = 2 .. 9 inputs dotted with every weight from one read of it). Under k_matvec_q_set_mma
 * int4 launches go to matvec_q_mma.cu (the tensor cores) instead.
 *
 * Bytes moved by a launch: the weights, rows * cols / 2 (int4) or rows * cols (int8), read once
 * whatever n is; the scales, rows * cols / group * 2; x, n * cols * 4 (from L2, once a block);
 * y, n * rows * 4. At 4 bits a byte of weights carries four times the arithmetic of a bf16 byte,
 * so at n = 1 an int4 launch is bound by its instructions as much as by the memory (about 3.6
 * instructions a weight: a LOP3 and an FADD to dequantize, an FFMA, and the rest). With n inputs
 * the FFMAs (and the reads of x) grow n-fold while the weights are read once: a verify pass of 8
 * costs 2 - 4 decode launches, not 8.
 *
 * The work. A warp takes R rows (1, 2 or 4) and streams them together; each lane reads 16 bytes of
 * a row at a time (a chunk: 32 int4 or 16 int8 weights), lane l taking chunks l, l + 32, l + 64,
 * ... of every row, so a warp's load is 512 contiguous bytes of a row. A block of WB warps takes
 * `sets` consecutive sets of WB x R rows. The first U = 2 chunks of each row (and their scales)
 * are loaded before the wait for the previous kernel (kcommon.cuh: programmatic dependent launch;
 * weights never depend on it), x only after it; from then on the next U chunks of the warp's rows
 * are in flight while the current ones are dotted. The dequantized weights of a row serve all n
 * inputs, and each read of x serves the R rows of the warp.
 *
 * The last pass of a pair. A row of 2560 int4 weights is 80 chunks: two passes of the
 * warp and a third in which lanes 16 .. 31 would idle (a sixth of the issue slots of a launch
 * bound by them). When a row's last pass has at most 16 chunks, the rows go in pairs (2m, 2m + 1)
 * and share it: its chunk 32 nfull + i is lane i's in the even row, lane 16 + i's in the odd one,
 * and the warp dots both in one pass (same instructions, each lane on its own row's data). The
 * assignment depends on the row's index alone, so a warp of one row (R = 1) does the same with
 * the lanes of its row's parity. E4B at int4, H100: the head 167 -> 156 us, gate / up 10.0 ->
 * 9.1, the keep-set head 10.4 -> 9.6.
 *
 * x in shared memory. A lane's chunk covers 32 (int4) or 16 (int8) consecutive columns, so its x
 * is 128 or 64 contiguous bytes: read through L1, the 16-byte reads of a quarter warp all fall in
 * the same banks (lanes 128 bytes apart). So each block copies x into shared memory first (after
 * the wait), a 16-byte unit of padding after every 128 bytes (q_pad): a quarter warp's reads then
 * hit eight different bank groups, and a lane's units stay consecutive (one base register, the
 * rest immediate offsets). x is staged in tiles of P passes (a pass: 32 chunks a row, 1024 columns
 * int4, 512 int8) when n x cols does not fit K_QX_SMEM bytes, else once a block. Or x is read
 * through L1 (int8's mid-sized launches, q_form_for: it loses on int4's).
 *
 * Dequantization without conversion instructions: a nibble u at bits 4i (i = 0 .. 3) or-ed into
 * the float 2^(23 - 4i), whose mantissa bit 4i is worth 1, gives 2^(23 - 4i) + u; one add of the
 * immediate -(2^(23 - 4i) + 8) leaves q = u - 8, exactly. One LOP3 (q_or: the compiler's own form
 * was an AND and an OR, with the magic constants as immediates) and one FADD a weight, and a shift
 * a word for its upper four nibbles. int8: one xor a word (q + 128), then a byte permute into
 * 0x4B0000uu = 2^23 + u and an add of -(2^23 + 128) a weight.
 *
 * Reproducibility: the exact order. For a row r and an input t, lane l:
 *   for each of its chunks, in column order (l, l + 32, ...; in a shared last pass, chunk
 *   32 nfull + l - 16 (r & 1) when that is in 32 nfull + [0, 16)):
 *     for each 32-bit word j = 0 .. 3 of the chunk (8 int4 or 4 int8 weights, columns in order):
 *       p_j = q_0 * x_0 (rounded product), then p_j = fma(q_i, x_i, p_j) for i = 1, 2, ...
 *     s = ((p_0 + p_1) + p_2) + p_3                  (the chunk's part of its group's sum)
 *     acc = fma(s, scale, acc)                        (acc starts at 0; scale: the chunk's group's)
 *   then y = the warp's butterfly sum of acc (distances 16, 8, 4, 2, 1).
 * Nothing of it depends on n, R, WB, sets, P, the staging of x or the grid (q_warp_sum_t gives each
 * value the butterfly's bits however many are summed at once), so a row's result is the same bits
 * in a verify pass as in the decode step: speculation stays lossless. The products and sums are
 * written with the _rn intrinsics so that the compiler cannot contract them differently in
 * different forms.
 */
#include "kcommon.cuh"
#include "matvec_q.h"
#include "matvec_q_mma.cuh"
#include "mma.cuh"
#include "qdequant.cuh"

#define K_QX_SMEM (48 * 1024) /* bytes of x a block stages at most (static limit: no opt-in) */
#define Q_U       2           /* chunks a row loaded ahead */

/* Columns a 16-byte chunk holds, and a 32-bit word of it. */
template <int B> struct qfmt;
template <> struct qfmt<4> { static constexpr int cw = 32, vpw = 8; };
template <> struct qfmt<8> { static constexpr int cw = 16, vpw = 4; };

__device__ __forceinline__ unsigned q_word(const uint4 &c, int j) {
    return j == 0 ? c.x : j == 1 ? c.y : j == 2 ? c.z : c.w;
}

/* Where 16-byte unit u of a staged input lives: a unit of padding after every eight (128
 * bytes), so that the lanes of a quarter warp, reading the same unit of consecutive 128-byte
 * blocks (int4: lane l reads block 32k + l) or of consecutive half-blocks (int8), hit different
 * banks; a lane's units stay consecutive. */
__device__ __forceinline__ int q_pad(int u) {
    return u + (u >> 3);
}

/* One step of q_warp_sum_t: lanes with bit OFF keep the upper HALF of their values, the others
 * the lower half, each adding its partner's copy of the half it keeps. */
template <int HALF, int OFF> __device__ __forceinline__ void q_fold(float *v, int lane, int &r) {
    const bool hi = lane & OFF;
#pragma unroll
    for (int i = 0; i < HALF; i++) {
        const float send = hi ? v[i] : v[i + HALF], keep = hi ? v[i + HALF] : v[i];
        v[i] = __fadd_rn(keep, __shfl_xor_sync(0xffffffffu, send, OFF));
    }
    if (hi) r += HALF;
    if constexpr (HALF > 1) q_fold<HALF / 2, OFF / 2>(v, lane, r);
}

/* The warp's sums of v[0 .. NV) (NV a power of two up to 32), transposed: lane l ends with the sum
 * of value *idx (the 32 / NV lanes that differ from l in their low bits hold the same). Every value
 * is summed over the pairs of lanes at distance 16, 8, 4, 2, 1, as kcommon.cuh's warp_sum: a lane
 * adds its partner's half to its own where warp_sum adds the other way round, and floating-point
 * addition commutes exactly, so each value has warp_sum's bits whatever NV is. */
template <int NV> __device__ __forceinline__ float q_warp_sum_t(float *v, int lane, int *idx) {
    int r = 0;
    if constexpr (NV > 1) q_fold<NV / 2, 16>(v, lane, r);
#pragma unroll
    for (int off = 16 / NV; off >= 1; off >>= 1)
        v[0] = __fadd_rn(v[0], __shfl_xor_sync(0xffffffffu, v[0], off));
    *idx = r;
    return v[0];
}

__host__ __device__ constexpr int q_pow2_at_least(int n) {
    return n <= 1 ? 1 : 2 * q_pow2_at_least((n + 1) / 2);
}

/* The matrices of one launch (k_matvec_q_multi): blocks block0 .. of segment i take its rows. */
struct q_seg {
    const uint4 *wq;
    const uint16_t *sc;
    float *y;
    int rows, block0;
};
struct q_segs {
    q_seg seg[K_MATVEC_Q_SEGS];
    int n;
};

/* y[t][r] for N inputs, B-bit weights, R rows a warp, of the segment of L this block belongs to.
 * gshift: log2(group). P: passes of x a tile (shared memory: N * P * 9 * CW float4, q_pad's
 * layout). sets: row sets a block takes in turn. */
template <int B, int R, int N, bool ST>
__global__ void __launch_bounds__(256, B == 4 && R == 2 && N == 1 ? 3 : 1)
    matvec_q_kernel(const __grid_constant__ q_segs L, const float *x, int cols, int gshift, int P,
                    int sets) {
    static_assert(R * N <= 32, "a warp sums at most 32 values at once");
    int si = 0;
#pragma unroll
    for (int i = 1; i < K_MATVEC_Q_SEGS; i++)
        if (i < L.n && (int)blockIdx.x >= L.seg[i].block0) si = i;
    const uint4 *const wq = L.seg[si].wq;
    const uint16_t *const sc = L.seg[si].sc;
    float *const y = L.seg[si].y;
    const int rows = L.seg[si].rows, bx = (int)blockIdx.x - L.seg[si].block0;
    constexpr int CW = qfmt<B>::cw, VPW = qfmt<B>::vpw, XU = VPW / 4; /* float4 of x a word */
    constexpr int NV = q_pow2_at_least(R * N);
    extern __shared__ float4 xs[]; /* [N][P * 9 * CW] units, q_pad's layout */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wb = blockDim.x >> 5;
    const int nc = cols / CW;        /* chunks a row */
    const int ng = cols >> gshift;   /* scales a row */
    const int nmax = (nc + 31) >> 5; /* passes: lane 0's chunks */
    const int nfull = nc >> 5, ntail = nc & 31;
    /* A last pass of at most 16 chunks is shared by the two rows of a pair (the header). */
    const bool pair = ntail != 0 && ntail <= 16;
    const int nch = pair ? nfull : (nc - lane + 31) >> 5; /* this lane's chunks before it */
    const int nloop = pair ? nfull : nmax;                /* the passes of the main loop */
    const int tu = P * 9 * CW; /* units an input a tile, padding included */
    const int xu = cols >> 2;  /* units an input of x */
    /* the lane's first unit of a pass: consecutive from there */
    const float4 *xl = xs + q_pad(lane * CW / 4);
    const q_magics mg = q_magics_make();

    const uint4 *wr[R];
    const uint16_t *sr[R];
    uint4 wc[Q_U][R];
    uint16_t sv[Q_U][R];
    constexpr int PR = (R + 1) / 2; /* pairs of rows (one row when R = 1) */
    uint4 wt[PR];                   /* the last pass's chunk of the lane's row of each pair */
    uint16_t st[PR];
    auto locate = [&](int set) {
        const int row0 = (bx * sets + set) * wb * R + warp * R;
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int row = row0 + r < rows ? row0 + r : rows - 1; /* dead rows read the last */
            wr[r] = wq + (size_t)row * nc + lane;
            sr[r] = sc + (size_t)row * ng;
        }
        return row0;
    };
    /* The last pass of a pair: lanes 0 .. 15 take chunk nfull * 32 + lane of the even row, lanes
     * 16 .. 31 chunk nfull * 32 + lane - 16 of the odd row (the header: the last pass of a pair).
     */
    auto tail_live = [&](int row0) {
        return (lane & 15) < ntail && (R > 1 || (lane >> 4) == (row0 & 1));
    };
    auto load_tail = [&](int row0) {
        if (!pair || !tail_live(row0)) return;
#pragma unroll
        for (int p = 0; p < PR; p++) {
            /* the lane's row of the pair, by a select (compile-time indices: no local memory) */
            const int ra = R == 1 ? 0 : 2 * p, rb = R == 1 ? 0 : 2 * p + 1;
            const bool odd = lane >= 16;
            const int c = 32 * nfull + (lane & 15);
            wt[p] = __ldcs((odd ? wr[rb] : wr[ra]) - lane + c);
            st[p] = __ldg((odd ? sr[rb] : sr[ra]) + ((c * CW) >> gshift));
        }
    };
    auto load = [&](int k0, uint4(&w)[Q_U][R], uint16_t(&s)[Q_U][R]) {
#pragma unroll
        for (int u = 0; u < Q_U; u++)
            if (k0 + u < nch)
#pragma unroll
                for (int r = 0; r < R; r++) {
                    w[u][r] = __ldcs(wr[r] + 32 * (k0 + u));
                    s[u][r] = __ldg(sr[r] + (((32 * (k0 + u) + lane) * CW) >> gshift));
                }
    };

    int row0 = locate(0);
    k_launch_next();
    load(0, wc, sv);
    if (nloop == 0) load_tail(row0);
    k_wait_only();

    for (int set = 0; set < sets; set++) {
        float acc[R][N];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int t = 0; t < N; t++)
                acc[r][t] = 0.0f;
        int tile0 = set == 0 || P < nmax ? -P : 0; /* the pass the staged tile starts at */
        /* A new tile of x at pass k (uniform over the block) - once a block when x fits in one. */
        auto stage = [&](int k) {
            if (!ST || k >= nmax || k != tile0 + P) return;
            tile0 = k;
            __syncthreads(); /* the last tile's readers are done */
            const int c0 = k * 8 * CW, n_u = min(P * 8 * CW, xu - c0);
            for (int i = threadIdx.x; i < N * n_u; i += blockDim.x) {
                const int t = i / n_u, e = i - t * n_u;
                xs[t * tu + q_pad(e)] =
                    k_ld_act(reinterpret_cast<const float4 *>(x) + (size_t)t * xu + c0 + e);
            }
            __syncthreads();
        };
        for (int k0 = 0; k0 < nloop; k0 += Q_U) {
            uint4 wn[Q_U][R];
            uint16_t sn[Q_U][R];
            load(k0 + Q_U, wn, sn);
            if (k0 + Q_U >= nloop) load_tail(row0); /* with the last group of the loop */
#pragma unroll
            for (int u = 0; u < Q_U; u++) {
                const int k = k0 + u;
                stage(k);
                if (k >= nch) continue;
                /* this chunk's x, input 0: staged, or in memory (through L1) */
                const float4 *xk =
                    ST ? xl + (k - tile0) * 9 * CW
                       : reinterpret_cast<const float4 *>(x) + (32 * k + lane) * CW / 4;
                const int xstride = ST ? tu : xu;
                float s[R][N];
#pragma unroll
                for (int j = 0; j < 4; j++) {
                    float dq[R][VPW];
#pragma unroll
                    for (int r = 0; r < R; r++)
                        q_dequant<B>(q_word(wc[u][r], j), dq[r], mg);
#pragma unroll
                    for (int t = 0; t < N; t++) {
                        float xv[VPW];
#pragma unroll
                        for (int h = 0; h < XU; h++) {
                            const float4 f = ST ? xk[t * xstride + j * XU + h]
                                                : k_ld_act(xk + t * xstride + j * XU + h);
                            xv[4 * h] = f.x;
                            xv[4 * h + 1] = f.y;
                            xv[4 * h + 2] = f.z;
                            xv[4 * h + 3] = f.w;
                        }
#pragma unroll
                        for (int r = 0; r < R; r++) {
                            float p = __fmul_rn(dq[r][0], xv[0]);
#pragma unroll
                            for (int i = 1; i < VPW; i++)
                                p = __fmaf_rn(dq[r][i], xv[i], p);
                            s[r][t] = j == 0 ? p : __fadd_rn(s[r][t], p);
                        }
                    }
                }
#pragma unroll
                for (int r = 0; r < R; r++) {
                    const float scale = __uint_as_float((unsigned)sv[u][r] << 16);
#pragma unroll
                    for (int t = 0; t < N; t++)
                        acc[r][t] = __fmaf_rn(s[r][t], scale, acc[r][t]);
                }
            }
#pragma unroll
            for (int u = 0; u < Q_U; u++)
#pragma unroll
                for (int r = 0; r < R; r++) {
                    wc[u][r] = wn[u][r];
                    sv[u][r] = sn[u][r];
                }
        }
        if (pair) { /* the shared last pass: one chunk a lane, of the even or the odd row */
            stage(nfull);
            const int i = lane & 15;
            const float4 *xk = ST ? xs + q_pad(i * CW / 4) + (nfull - tile0) * 9 * CW
                                  : reinterpret_cast<const float4 *>(x) + (32 * nfull + i) * CW / 4;
            const int xstride = ST ? tu : xu;
            if (tail_live(row0))
#pragma unroll
                for (int p = 0; p < PR; p++) {
                    float s[N];
#pragma unroll
                    for (int j = 0; j < 4; j++) {
                        float dq[VPW];
                        q_dequant<B>(q_word(wt[p], j), dq, mg);
#pragma unroll
                        for (int t = 0; t < N; t++) {
                            float xv[VPW];
#pragma unroll
                            for (int h = 0; h < XU; h++) {
                                const float4 f = ST ? xk[t * xstride + j * XU + h]
                                                    : k_ld_act(xk + t * xstride + j * XU + h);
                                xv[4 * h] = f.x;
                                xv[4 * h + 1] = f.y;
                                xv[4 * h + 2] = f.z;
                                xv[4 * h + 3] = f.w;
                            }
                            float q = __fmul_rn(dq[0], xv[0]);
#pragma unroll
                            for (int e = 1; e < VPW; e++)
                                q = __fmaf_rn(dq[e], xv[e], q);
                            s[t] = j == 0 ? q : __fadd_rn(s[t], q);
                        }
                    }
                    const float scale = __uint_as_float((unsigned)st[p] << 16);
#pragma unroll
                    for (int t = 0; t < N; t++) {
                        if (R == 1 || lane < 16)
                            acc[2 * p][t] = __fmaf_rn(s[t], scale, acc[2 * p][t]);
                        else
                            acc[R == 1 ? 0 : 2 * p + 1][t] =
                                __fmaf_rn(s[t], scale, acc[R == 1 ? 0 : 2 * p + 1][t]);
                    }
                }
        }
        /* The next set's rows start streaming before this one is reduced. */
        const int done_row0 = row0;
        if (set + 1 < sets) {
            row0 = locate(set + 1);
            load(0, wc, sv);
            if (nloop == 0) load_tail(row0);
        }
        float v[NV];
#pragma unroll
        for (int i = 0; i < NV; i++)
            v[i] = i < R * N ? acc[i / N][i % N] : 0.0f;
        int idx;
        const float sum = q_warp_sum_t<NV>(v, lane, &idx);
        const int r = idx / N, t = idx % N, row = done_row0 + r;
        if ((lane & (32 / NV - 1)) == 0 && idx < R * N && row < rows)
            y[(size_t)t * rows + row] = sum;
    }
}

typedef void (*q_fn)(q_segs, const float *, int, int, int, int);

/* The kernel for (B, R, N, ST); NULL where R * N > 32. */
template <int B, int R, bool ST> static q_fn q_kernel_n(int n) {
    static const q_fn forms[] = {
        matvec_q_kernel<B, R, 1, ST>,
        matvec_q_kernel<B, R, 2, ST>,
        matvec_q_kernel<B, R, 3, ST>,
        matvec_q_kernel<B, R, 4, ST>,
        matvec_q_kernel<B, R, 5, ST>,
        matvec_q_kernel<B, R, 6, ST>,
        matvec_q_kernel<B, R, 7, ST>,
        matvec_q_kernel<B, R, 8, ST>,
        R * 9 <= 32 ? matvec_q_kernel<B, R, (R * 9 <= 32 ? 9 : 1), ST> : (q_fn) nullptr,
    };
    return forms[n - 1];
}

template <int B, bool ST> static q_fn q_kernel_st(int R, int n) {
    return R == 1   ? q_kernel_n<B, 1, ST>(n)
           : R == 2 ? q_kernel_n<B, 2, ST>(n)
                    : q_kernel_n<B, 4, ST>(n);
}

template <int B> static q_fn q_kernel(int R, int n, bool st) {
    return st ? q_kernel_st<B, true>(R, n) : q_kernel_st<B, false>(R, n);
}

static int q_sms(void) {
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            sms < 1)
            sms = 132;
    }
    return sms;
}

static int q_force_r = 0, q_force_wb = 0, q_force_sets = 0, q_force_stage = 0, q_int4_mma = 0;

struct q_form {
    int R, wb, sets, P;
    bool st; /* x staged in shared memory (else read through L1) */
};

/* The form of a launch: rows a warp R, warps a block, row sets a block, passes of x a tile, x
 * staged in shared memory or read through L1. Bit for bit, any form gives the same results, so
 * this is speed alone. The rules come from `bench/matvec_q_check --sweep` on an H100, every form
 * timed on each of E4B's shapes (q 2048 x 2560, k / v 512 x 2560, o 2560 x 2048, gate / up
 * 10240 x 2560, down 2560 x 10240, the keep-set head 12000 x 2560, the head 262144 x 2560):
 *   int4, n = 1: four rows a warp where a row is whole passes (no shared last pass: o, down),
 *     else two where that still gives every multiprocessor two blocks (the pair then shares its
 *     last pass), else one. down 12.1 us against 14.9 with two rows, o 3.5 against 4.0.
 *   int4, n > 1: four rows a warp on launches of 2560 rows or more (each read of x serves R rows:
 *     the head at n = 2 / 4 225 / 371 us against 342 / 609 with two), else one (n = 2) or two.
 *   int8, n = 1: two rows a warp, x staged, for the head and rows of 8 passes or more (down 14.3
 *     against 19.8 with one); four rows, blocks of 2 warps, x through L1 on the other launches of
 *     2560 rows or more (gate / up 13.7 against 16.3, the keep-set head 14.5 against 17.2); one
 *     row, x staged, on smaller ones.
 *   int8, n > 1: four rows a warp; blocks of 2 warps and x through L1 (k / v at n = 8 8.6 us
 *     against 12.8 with blocks of 8, x staged), but for the head from n = 4 and for launches of
 *     2048 rows or more from n = 5, which keep blocks of 8 and x staged (the head at n = 4 343
 *     against 432).
 * Blocks of 8 warps stage x once a block for all of them; row sets (a block taking several sets
 * of rows in turn) pay in launches of many blocks: 4 from 4096 blocks, 2 from 600 at n = 1, and
 * 4 from 600 for int4's verify passes (gate / up at n = 2 15.8 against 18.1 with 2). Per layer
 * (q, k, v, o, gate, up, down and a 42nd of the keep-set head) the rules take int4 34.4 / 50.4 /
 * 74.7 / 122.1 us at n = 1 / 2 / 4 / 8, against 37.8 / 66.3 / 98.0 / 127.3 with the previous ones
 * and 34.2 / 49.8 / 74.6 / 120.8 with each shape's best form; int8 44.3 / 54.9 / 80.4 / 129.9,
 * against 54.0 / 64.8 / 114.2 / 138.3 (best 43.0 / 53.6 / 78.4 / 128.3).
 * Registers: int4's two-row decode kernel is held to 85 (3 blocks a multiprocessor; 94 unbounded);
 * every other form is declared for one block a multiprocessor, which lets the compiler use more
 * registers than its own occupancy-driven choice (that one spilled in several forms): faster on
 * most decode shapes (int4 q 3.6 against 4.6 us, int8 q / o / down 4.7 / 4.3 / 13.5 against 5.3 /
 * 5.0 / 15.7), slower on int8 k / v (4.2 against 3.5). */
/* R, or fewer rows a warp where R x n accumulators would pass 32 (two, or one past 16 inputs). */
static int q_rows_fit(int R, int n) {
    return R * n > 32 ? (32 / n >= 2 ? 2 : 1) : R;
}

static q_form q_form_for(int dtype, int rows, int cols, int n) {
    const int cw = dtype == KQ_INT4 ? 32 : 16, nc = cols / cw, nmax = (nc + 31) / 32;
    q_form f;
    f.wb = 8;
    f.st = true;
    if (dtype == KQ_INT4 && n == 1)
        f.R = nc % 32 == 0 ? 4 : rows >= 16 * q_sms() ? 2 : 1;
    else if (dtype == KQ_INT4)
        f.R = rows >= 2560 ? 4 : n <= 2 ? 1 : 2;
    else if (n == 1)
        f.R = rows >= 65536 || nmax >= 8 ? 2 : rows >= 2560 ? 4 : 1;
    else
        f.R = 4;
    if (dtype == KQ_INT8 && f.R == 4 && !(rows >= 65536 && n >= 4) && !(rows >= 2048 && n >= 5)) {
        f.wb = 2;
        f.st = false;
    }
    f.R = q_rows_fit(f.R, n);
    const long blocks = ((long)rows + f.wb * f.R - 1) / (f.wb * f.R);
    if (!f.st)
        f.sets = 1;
    else if (dtype == KQ_INT4 && n > 1)
        f.sets = blocks >= 600 ? 4 : 1;
    else
        f.sets = blocks >= 4096 ? 4 : blocks >= 600 ? 2 : 1;
    if (q_force_stage) f.st = q_force_stage == 1;
    if (q_force_r) f.R = q_force_r;
    f.R = q_rows_fit(f.R, n);
    if (q_force_wb) f.wb = q_force_wb;
    const int pass_bytes = n * 9 * cw * 16;
    f.P = K_QX_SMEM / pass_bytes;
    if (f.P < 1) f.P = 1;
    if (f.P > nmax) f.P = nmax;
    if (q_force_sets) f.sets = q_force_sets;
    if (f.st && f.P < nmax) f.sets = 1; /* x is staged again for every set */
    return f;
}

/* One launch of up to K_MATVEC_Q_MAX_N inputs over the segments (same dtype, cols and group);
 * segment i's outputs at its y + t0 * rows. The form follows the rows of all of them. */
static int q_launch(cudaStream_t s, const k_qseg *segs, int n_segs, const float *x, int t0, int n) {
    const k_qmat *w = &segs[0].w;
    int total = 0;
    for (int i = 0; i < n_segs; i++)
        total += segs[i].w.rows;
    const q_form f = q_form_for(w->dtype, total, w->cols, n);
    const q_fn kernel = w->dtype == KQ_INT4 ? q_kernel<4>(f.R, n, f.st) : q_kernel<8>(f.R, n, f.st);
    if (!kernel) return -1;
    const int cw = w->dtype == KQ_INT4 ? 32 : 16;
    const int gshift = w->group == 32 ? 5 : w->group == 64 ? 6 : 7;
    const int per_block = f.wb * f.R * f.sets;
    q_segs L = {};
    int blocks = 0;
    for (int i = 0; i < n_segs; i++) {
        const k_qmat *m = &segs[i].w;
        L.seg[i] = {reinterpret_cast<const uint4 *>(m->q), m->scales,
                    segs[i].y + (size_t)t0 * m->rows, m->rows, blocks};
        blocks += (m->rows + per_block - 1) / per_block;
    }
    L.n = n_segs;
    const size_t smem = f.st ? (size_t)n * f.P * 9 * cw * 16 : 0;
    k_launch_ex(kernel, dim3((unsigned)blocks), dim3(32 * f.wb), 0, smem, s, L,
                x + (size_t)t0 * w->cols, w->cols, gshift, f.P, f.sets);
    K_CHECK_LAUNCH();
    return 0;
}

extern "C" int k_matvec_q_shape_ok(int dtype, int cols, int group) {
    return (dtype == KQ_INT4 || dtype == KQ_INT8) && (group == 32 || group == 64 || group == 128) &&
           cols >= 128 && cols % 128 == 0;
}

static bool q_mat_ok(const k_qmat *w) {
    return k_matvec_q_shape_ok(w->dtype, w->cols, w->group) && w->rows >= 1 && w->q && w->scales &&
           !((uintptr_t)w->q & 15) && !((uintptr_t)w->scales & 1);
}

/* Whether a launch's int4 segments take matvec_q_mma.cu: its scales are copied in 16-byte units,
 * so every matrix's must be 16-byte aligned, and the launch must fit the device's shared memory
 * at every n - properties of the allocation, the shapes and the device, never of n, so a decode
 * step and its verify passes take the same kernel. (The rule is per launch: the backend groups
 * matrices the same way for every n.) */
static bool q_mma_ok(const k_qseg *segs, int n_segs) {
    for (int i = 0; i < n_segs; i++)
        if ((uintptr_t)segs[i].w.scales & 15) return false;
    return qm_fits(segs, n_segs, q_sms());
}

extern "C" int k_matvec_q_multi(cudaStream_t s, const k_qseg *segs, int n_segs, const float *x,
                                int n) {
    if (!segs || n_segs < 1 || n_segs > K_MATVEC_Q_SEGS || !x || n < 1 || ((uintptr_t)x & 15))
        return -1;
    for (int i = 0; i < n_segs; i++) {
        const k_qmat *w = &segs[i].w;
        if (!q_mat_ok(w) || !segs[i].y || ((uintptr_t)segs[i].y & 3) ||
            w->dtype != segs[0].w.dtype || w->cols != segs[0].w.cols || w->group != segs[0].w.group)
            return -1;
    }
    for (int t0 = 0; t0 < n; t0 += K_MATVEC_Q_MAX_N) {
        const int m = n - t0 < K_MATVEC_Q_MAX_N ? n - t0 : K_MATVEC_Q_MAX_N;
        if (segs[0].w.dtype == KQ_INT4 && q_int4_mma && q_mma_ok(segs, n_segs)) {
            if (qm_launch(s, segs, n_segs, x, t0, m, q_sms())) return -1;
        } else if (q_launch(s, segs, n_segs, x, t0, m))
            return -1;
    }
    return 0;
}

extern "C" int k_matvec_q(cudaStream_t s, const k_qmat *w, const float *x, float *y, int n) {
    if (!w) return -1;
    const k_qseg seg = {*w, y};
    return k_matvec_q_multi(s, &seg, 1, x, n);
}

/* Value k of a 32-bit word of weights: nibble / byte k is column 8i + k / 4i + k of word i. */
__device__ __forceinline__ int q_value(uint32_t w, int k, int bits) {
    return bits == 4 ? (int)((w >> (4 * k)) & 15u) - 8 : (int)(int8_t)(w >> (8 * k));
}

/* One 32-bit word of weights a thread (8 int4 or 4 int8), as two bf16 matrices, hi and lo, with
 * hi + lo = q * s exactly: q * s is exact in fp32 with at most 15 significant bits (11 at int4), hi
 * is its top 16 bits (a bf16, truncated) and lo the rest, exact in fp32 and of at most 7
 * significant bits, so a bf16 too (mma.cuh bf16_rest, split3's first step). Every bit of q * s lies
 * at or above 2^-133, so this holds for every finite scale, subnormal products included (no flush
 * to zero here). Written only after the wait: the previous product may still read the buffer. */
__global__ void dequant_q_bf16x2_kernel(const uint32_t *__restrict__ q,
                                        const uint16_t *__restrict__ sc, uint16_t *hi, uint16_t *lo,
                                        size_t words, int cols, int group, int bits) {
    k_wait_prior();
    const int vpw = 32 / bits, groups = cols / group;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint32_t w = __ldg(q + i);
        const size_t e0 = i * vpw, r = e0 / cols;
        const int c = (int)(e0 % cols);
        const float s = __uint_as_float((uint32_t)__ldg(sc + r * groups + c / group) << 16);
        uint4 vh, vl;
        uint16_t *h = reinterpret_cast<uint16_t *>(&vh), *l = reinterpret_cast<uint16_t *>(&vl);
        for (int k = 0; k < vpw; k++) {
            const float x = (float)q_value(w, k, bits) * s;
            h[k] = (uint16_t)(__float_as_uint(x) >> 16);
            l[k] = (uint16_t)(__float_as_uint(bf16_rest(x)) >> 16);
        }
        if (bits == 4) {
            *reinterpret_cast<uint4 *>(hi + e0) = vh;
            *reinterpret_cast<uint4 *>(lo + e0) = vl;
        } else {
            *reinterpret_cast<uint2 *>(hi + e0) = make_uint2(vh.x, vh.y);
            *reinterpret_cast<uint2 *>(lo + e0) = make_uint2(vl.x, vl.y);
        }
    }
}

/* A grid-stride loop over the matrix's words: 8 blocks of 256 a multiprocessor at most. */
static unsigned dequant_blocks(const k_qmat *w, size_t *words) {
    *words = (size_t)w->rows * w->cols / (32 / w->dtype);
    const unsigned most = 8u * (unsigned)q_sms();
    return *words < 256u * most ? k_blocks(*words, 256) : most;
}

extern "C" int k_dequant_q_bf16x2(cudaStream_t s, const k_qmat *w, uint16_t *out) {
    if (!w || !out || !q_mat_ok(w) || ((uintptr_t)out & 15)) return -1;
    size_t words;
    const unsigned blocks = dequant_blocks(w, &words);
    k_launch(dequant_q_bf16x2_kernel, dim3(blocks), dim3(256), s, (const uint32_t *)w->q, w->scales,
             out, out + (size_t)w->rows * w->cols, words, w->cols, w->group, (int)w->dtype);
    K_CHECK_LAUNCH();
    return 0;
}

/* One 32-bit word of int4 weights a thread (8 values), as one fp16 matrix holding q * s 2^e,
 * exact when e is quant_f16_exponent's: s 2^e (a shift of a bf16, in range) and q times it are
 * exact in fp32, and the result is an fp16 value, so the rounding to fp16 changes nothing. Written
 * after the wait, as dequant_q_bf16x2_kernel. */
__global__ void dequant_q4_f16_kernel(const uint32_t *__restrict__ q,
                                      const uint16_t *__restrict__ sc, __half *out, size_t words,
                                      int cols, int group, int e) {
    k_wait_prior();
    const int groups = cols / group;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x) {
        const uint32_t w = __ldg(q + i);
        const size_t e0 = i * 8, r = e0 / cols;
        const int c = (int)(e0 % cols);
        const float s =
            ldexpf(__uint_as_float((uint32_t)__ldg(sc + r * groups + c / group) << 16), e);
        uint4 v;
        __half *h = reinterpret_cast<__half *>(&v);
#pragma unroll
        for (int k = 0; k < 8; k++)
            h[k] = __float2half_rn(__fmul_rn((float)q_value(w, k, 4), s));
        *reinterpret_cast<uint4 *>(out + e0) = v;
    }
}

extern "C" int k_dequant_q4_f16(cudaStream_t s, const k_qmat *w, int e, uint16_t *out) {
    if (!w || !out || !q_mat_ok(w) || w->dtype != KQ_INT4 || ((uintptr_t)out & 15)) return -1;
    size_t words;
    const unsigned blocks = dequant_blocks(w, &words);
    k_launch(dequant_q4_f16_kernel, dim3(blocks), dim3(256), s, (const uint32_t *)w->q, w->scales,
             reinterpret_cast<__half *>(out), words, w->cols, w->group, e);
    K_CHECK_LAUNCH();
    return 0;
}

extern "C" void k_matvec_q_set_mma(int on) {
    q_int4_mma = on != 0;
}

extern "C" int k_matvec_q_set_form(int rows_per_warp, int warps_per_block, int sets_per_block,
                                   int stage) {
    if ((rows_per_warp != 0 && rows_per_warp != 1 && rows_per_warp != 2 && rows_per_warp != 4) ||
        (warps_per_block != 0 && warps_per_block != 1 && warps_per_block != 2 &&
         warps_per_block != 4 && warps_per_block != 8) ||
        sets_per_block < 0 || sets_per_block > 16 || stage < 0 || stage > 2)
        return -1;
    q_force_stage = stage;
    q_force_r = rows_per_warp;
    q_force_wb = warps_per_block;
    q_force_sets = sets_per_block;
    return 0;
}
