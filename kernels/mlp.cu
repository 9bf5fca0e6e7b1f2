/* mlp.cu: a Gemma MLP - down(gelu_tanh(gate(x)) * up(x)) - as one kernel in which a block owns a
 * slice of the intermediate dimension (sm_90 and later; bf16, int8 or int4 weights), for any number
 * of inputs (passes of 1 .. 8 inputs over the weights, chunks of 16 a reduction).
 *
 * Why. matvec.cu gives a warp a row; every row needs all of x, so for every 16 bytes of weights
 * a lane loads 32 bytes of fp32 x through L1, which is what keeps the gate + up pair at 83 % and
 * down at 70 % of copy bandwidth on an E4B-sized layer (an H200).
 * Here nothing is loaded twice (dev/cuda/mlp_slice.cu measures the layout alone at 99 % of copy):
 *
 *   - one block a multiprocessor owns intermediate indices [k0, k1); its H / 8 consumer threads
 *     each own 8 columns of the hidden size and hold those 8 floats of x in registers for the
 *     whole kernel, so a gate or up row is one 16-byte read of shared memory and 8 fmas a thread,
 *     then a sum over the block (warp_sum_t, then the warps in order);
 *   - down is stored transposed on the device (backend_cuda.c cuda_weight_t: row k = column k
 *     of down), so the block's slice of it is k1 - k0 contiguous rows, and h[k] = gelu(g) * u
 *     times row k is added into 8 accumulators a thread - no x at all;
 *   - a producer warp streams the block's rows (batch j's B gate rows, its up rows, batch
 *     j - 1's down rows, batch j + 1's gate rows...) into a ring of one-row stages with
 *     cp.async.bulk, waiting only for a free stage and for fewer than mlp_depth rows in
 *     flight. Weights depend on no earlier kernel, so the ring fills while the kernel before
 *     this one (programmatic dependent launch) is still running;
 *   - a batch's down rows come after the next batch's gate and up rows, so that one barrier a
 *     batch covers both (the warps' sums of batch j are in; the h of batch j - 1 is made), and
 *     the chains of sums that make a batch's h (a lane of each warp in turn, where the block has
 *     several) run while the warps work on. Over several inputs the kernel is bound by its
 *     instructions, not by memory, and its two barriers a batch were 13.5 % of its stalls over 8
 *     inputs (Nsight Compute); without the second and with the chains spread, a verify pass
 *     over 4 / 5 / 8 inputs on E4B is 6 / 12 / 11 % faster, the decode step unchanged;
 *   - over several inputs (the verify forms) a reducer warp makes each batch's h, one (input,
 *     index) pair a lane, while the consumer warps go on to the next batch: it meets them at
 *     the batch's barrier, the sums of batch j in, and has made h of j by the next one. So the
 *     consumers do not run the chains of sums, and a warp's sums of a batch are one
 *     transposed warp sum over 2 B NT = 32 values (one a lane). The one-input form (decode,
 *     bound by memory) keeps its chains in the consumers. E4B verify over
 *     2 / 4 / 8 positions 3.116 / 3.941 / 6.107 ms against 3.143 / 4.058 / 7.083 with the chains
 *     in the consumers (an H200);
 *   - the block's H partial outputs go to partial[t][block]; mlp_reduce_kernel sums the partials
 *     of each output in block order.
 *
 * Reproducibility. An input's result does not depend on n, on the batch B or on which inputs
 * share a launch: a thread's 8-column dot is one fma chain in column order, the warp sum is a
 * fixed butterfly (16, 8, 4, 2, 1: floating-point addition commutes, so which lane of a pair
 * adds gives the same bits), the warps and the partials add in order, and the down accumulation
 * runs over k in order. Only the grid (the multiprocessor count) and the shapes decide the bits,
 * so a verify pass reproduces the decode steps it stands for - speculation stays lossless. They
 * are not matvec.cu's bits: a backend takes the kernel for every MLP it fits or for none.
 *
 * int8 and int4 weights (quant.h's layout: a bf16 scale a group of 32, 64 or 128 columns of a
 * row). A thread's 8 columns of a row are then 8 or 4 bytes, and a ring stage holds 2 or 4 rows
 * (2H bytes, as a bf16 row), so that a stage's wait and arrival are spread over as many weights.
 * The 8 columns lie in one group of gate's and up's rows: the thread's dot of the integers q is
 * multiplied by that row's scale. down is held transposed (quant_transpose: row k is column k of
 * down, its scales [I / group][H]), so each of a thread's 8 columns has its own scale, constant
 * over a group of rows: the thread keeps the 8 scales of the current group in registers and makes
 * each weight q s exactly in one fma (qdequant.cuh's q_dequant_scaled). The block's scales - gate's
 * and up's rows k0 .. k1 - 1, and down's groups of rows that the slice touches - are copied into
 * shared memory while the producer starts the ring, before the wait for the previous kernel.
 *
 * What it leaves in memory is what the four ops it replaces leave: h in the gate buffer, u in
 * the up buffer, the product in out. */
#include "bulk.cuh"
#include "kcommon.cuh"
#include "mlp.cuh"
#include "qdequant.cuh"
#include "warp_sum_t.cuh"

/* Where a launch's dynamic shared memory goes (host and device compute it alike): the ring (S
 * stages of 2H bytes), full[S] and empty[S]; over several inputs the block's h (hd: a slot for
 * every (input, index) of a block, at most 8 inputs times the block's indices rounded up to whole
 * batches, < kmax + 16); for quantized weights the block's scales, copied there before the wait
 * for the previous kernel: gate's and up's rows k0 .. k1 - 1 ([2][kmax][H / group]) and the
 * groups of down's transposed rows the slice touches ([kmax / group + 2][H]: at most
 * ceil((kmax - 1) / group) + 1 of them). kmax = ceil(I / G), the most indices a block owns. */
struct mlp_layout {
    size_t bars, hd, sgu, sd, bytes;
};
__host__ __device__ inline mlp_layout mlp_layout_of(int H, int I, int G, int S, bool red, int wb,
                                                    int group) {
    mlp_layout L;
    const size_t kmax = (size_t)(I + G - 1) / G;
    L.bars = (size_t)S * 2 * H;
    L.hd = L.bars + (size_t)S * 16;
    L.sgu = L.hd + (red ? (size_t)8 * (kmax + 16) * sizeof(float) : 0);
    L.sgu = (L.sgu + 15) & ~(size_t)15;
    const size_t ngu = wb < 16 ? 2 * kmax * (H / group) : 0;
    L.sd = (L.sgu + ngu * 2 + 15) & ~(size_t)15;
    L.bytes = L.sd + (wb < 16 ? (kmax / group + 2) * (size_t)H * 2 : 0);
    return L;
}

/* A thread's 8 columns of a row, WB bytes at p: bf16 16, int8 8, int4 4 (the rest zero). */
template <int WB> __device__ __forceinline__ uint4 ld_cols(const unsigned char *p) {
    if constexpr (WB == 16) return *reinterpret_cast<const uint4 *>(p);
    if constexpr (WB == 8) {
        const uint2 v = *reinterpret_cast<const uint2 *>(p);
        return make_uint4(v.x, v.y, 0, 0);
    }
    return make_uint4(*reinterpret_cast<const unsigned *>(p), 0, 0, 0);
}

/* The ring's next stage st (of S; ph: the parity of its fill): wait until it holds its rows,
 * read this thread's columns of its first nr rows (a stage holds 16 / WB rows of H * WB / 8
 * bytes: 1 bf16, 2 int8 or 4 int4 rows, so that its wait and arrival - about 9 instructions a
 * thread - are spread over as many weights whatever the dtype), free it, step on. No division by
 * S: at one stage a row, a runtime modulo per row doubles a consumer's instructions (E4B: 55 us
 * a layer against 38 in dev/cuda/mlp_slice.cu).
 * Every thread frees the stage itself (an arrival count of 32 a consumer warp): with lane 0
 * freeing it for the warp after a __syncwarp, racecheck does not take the __syncwarp as ordering
 * the other lanes' reads before that arrival - it reports every read of lanes 1-31 against the
 * producer's next copy into the stage once the ring wraps (dev/cuda/ring_race.cu, forms 0 and
 * 8). */
template <int WB>
__device__ __forceinline__ void ring_take(const unsigned char *ring, uint64_t *full,
                                          uint64_t *empty, unsigned &st, unsigned &ph, int S, int H,
                                          int c, int nr, uint4 *u) {
    constexpr int RPS = 16 / WB;
    mbar_wait(&full[st], ph);
    const unsigned char *p = ring + (size_t)st * 2 * H + c * WB;
#pragma unroll
    for (int r = 0; r < RPS; r++)
        if (r < nr) u[r] = ld_cols<WB>(p + (size_t)r * (H * WB / 8));
    mbar_arrive(&empty[st]);
    if (++st == (unsigned)S) st = 0, ph ^= 1;
}

/* A thread's 8 weights of a gate or up row as fp32 (int8 / int4: the integers q; the row's scale
 * multiplies the thread's dot). */
template <int WB>
__device__ __forceinline__ void cols_values(const uint4 &u, float *w, const q_magics &mg) {
    if constexpr (WB == 16) unpack16<__nv_bfloat16>(u, w);
    if constexpr (WB == 8) q_dequant<8>(u.x, w, mg), q_dequant<8>(u.y, w + 4, mg);
    if constexpr (WB == 4) q_dequant<4>(u.x, w, mg);
}

/* Warps a block has besides its H / 256 consumers: the producer, and for several inputs the
 * reducer. */
__host__ __device__ constexpr int mlp_extra_warps(int nt) {
    return nt > 1 ? 2 : 1;
}

/* The weights as the kernel reads them: gate and up [I][H] and down transposed [I][H] in WB bytes
 * a thread's 8 columns (bf16 16, int8 8, int4 4: quant.h's packing along H), and for int8 / int4
 * the scales: gate's and up's [I][H / group], down's transposed [I / group][H] (group 1 << gshift).
 */
struct mlp_w {
    const unsigned char *gate, *up, *downt;
    const uint16_t *gs, *us, *ds;
    int gshift;
};

/* Inputs t0 .. t0 + NL - 1 (those below n) of x[n][H]; B intermediate indices a batch; a warp's
 * sums of a batch in NT = pow2_at_least(NL) slots an index (those past NL hold zeros: a pass over
 * 3 or 5 .. 7 inputs loads and dots only its own). WB: the bytes of a thread's 8 columns of a row
 * (16 bf16, 8 int8, 4 int4). Dynamic shared memory: mlp_layout_of. */
#define MLP_MAX_THREADS  512 /* up to 128 registers a thread (NL <= 4; H <= 3584) */
#define MLP_WIDE_THREADS 384 /* NL = 5 .. 8, H <= 2560: up to 168 registers a thread */

template <int NL, int B, int WB>
__global__ void __launch_bounds__(NL > 4 ? MLP_WIDE_THREADS : MLP_MAX_THREADS, 1)
    mlp_kernel(const __grid_constant__ mlp_w W, const float *x, float *h_out, float *u_out,
               float *partial, int H, int I, int n, int t0, int p0, int S, int depth) {
    constexpr int NT = pow2_at_least(NL), RPS = 16 / WB;
    constexpr bool Q = WB < 16;
    extern __shared__ __align__(128) unsigned char ring[];
    const int CT = H / 8, CW = CT / 32, RB = H * WB / 8; /* RB: a row's bytes */
    static_assert(NT * B == 16, "a batch's sums: one value a lane (warp_sum_t over 2 B NT)");
    static_assert(B % RPS == 0 || RPS % B == 0, "a batch's rows in whole stages");
    constexpr bool RED = mlp_extra_warps(NL) == 2; /* a reducer warp makes the h */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, G = gridDim.x;
    const mlp_layout L = mlp_layout_of(H, I, G, S, RED, WB, 1 << W.gshift);
    uint64_t *full = reinterpret_cast<uint64_t *>(ring + L.bars), *empty = full + S;
    float *hd = reinterpret_cast<float *>(ring + L.hd);         /* RED: the block's h */
    uint16_t *sgu = reinterpret_cast<uint16_t *>(ring + L.sgu); /* Q: gate's, up's scales */
    uint16_t *sd = reinterpret_cast<uint16_t *>(ring + L.sd);   /* Q: down's */
    __shared__ float red[2][32][2 * B * NT], hs[2][B * NT];     /* batch j in [j & 1] */
    const int k0 = (int)((long long)I * blockIdx.x / G),
              k1 = (int)((long long)I * (blockIdx.x + 1) / G);
    const int nb = (k1 - k0 + B - 1) / B; /* batches */
    const int kmax = (I + G - 1) / G, ngh = H >> W.gshift, gd0 = k0 >> W.gshift;
    ring_init(full, empty, S, 32 * CW);
    __syncthreads();
    k_launch_next();
    /* The h of input tt's index kb + i. One input: in hs[jb], two batches' worth, reused every
     * other batch. RED: every (input, index) of the block has its own slot in hd, written once.
     * Both are ordered by the barriers (racecheck clean either way); the slots a block measured
     * faster (E4B verify over 2 / 4 / 8 positions 3.116 / 3.941 / 6.107 ms against 3.129 / 3.946 /
     * 6.249 with hs). */
    auto h_at = [&](int tt, int i, int kb, int jb) -> float & {
        if constexpr (RED)
            return hd[tt * (nb * B) + (kb - k0) + i];
        else
            return hs[jb][tt * B + i];
    };
    /* The h of (input, index) pair q of the batch at kb: the warps' sums, in order */
    auto make_h = [&](int q, int kb, int nk, int jb) {
        if (q >= NT * B) return;
        const int tt = q / B, i = q % B;
        if (i < nk && tt < NL && t0 + tt < n) {
            float gs = 0.0f, us = 0.0f;
            for (int w = 0; w < CW; w++)
                gs += red[jb][w][tt * 2 * B + i], us += red[jb][w][tt * 2 * B + B + i];
            const float h = gelu_tanh(gs) * us;
            h_at(tt, i, kb, jb) = h;
            h_out[(size_t)(t0 + tt) * I + kb + i] = h;
            u_out[(size_t)(t0 + tt) * I + kb + i] = us;
        }
    };
    if (warp == CW) { /* the producer: weights need nothing of an earlier kernel */
        if (lane == 0) {
            ring_producer p; /* rows in the consumers' order: gate, up of j, down of j - 1 */
            auto put_rows = [&](const unsigned char *m, int k, int nk) {
                for (int i = 0; i < nk; i += RPS)
                    p.put(ring, full, empty, S, depth, m + (size_t)(k + i) * RB,
                          min(RPS, nk - i) * RB, 2 * H);
            };
            for (int j = 0; j <= nb; j++) {
                const int kb = k0 + j * B;
                if (j < nb)
                    put_rows(W.gate, kb, min(B, k1 - kb)), put_rows(W.up, kb, min(B, k1 - kb));
                if (j > 0) put_rows(W.downt, kb - B, min(B, k1 - (kb - B)));
            }
        }
        return; /* the consumers' wait is the block's (kcommon.cuh) */
    }
    /* int8 / int4: the block's scales into shared memory (scales, like weights, depend on no
     * earlier kernel), by the consumers and the reducer while the producer starts the ring */
    const int nw = CT + (RED ? 32 : 0), tid = warp > CW ? threadIdx.x - 32 : threadIdx.x;
    if constexpr (Q) {
        const int gw = (k1 - k0) * ngh / 2; /* 32-bit words of gate's rows (ngh is even) */
        const unsigned *g32 = reinterpret_cast<const unsigned *>(W.gs + (size_t)k0 * ngh),
                       *u32 = reinterpret_cast<const unsigned *>(W.us + (size_t)k0 * ngh);
        unsigned *s32 = reinterpret_cast<unsigned *>(sgu), *t32 = s32 + (size_t)kmax * ngh / 2;
        for (int i = tid; i < gw; i += nw)
            s32[i] = __ldg(g32 + i), t32[i] = __ldg(u32 + i);
        const int dw = (((k1 - 1) >> W.gshift) - gd0 + 1) * H / 8; /* 16-byte units */
        const uint4 *d16 = reinterpret_cast<const uint4 *>(W.ds + (size_t)gd0 * H);
        for (int i = tid; i < dw; i += nw)
            reinterpret_cast<uint4 *>(sd)[i] = __ldg(d16 + i);
        bar_consumers(nw);
    }
    k_wait_only();
    /* The reducer meets the consumers at each batch's barrier (bar_consumers over CT + 32
     * threads; the producer is not one of them): after round j's, the sums of batch j are in
     * red[j & 1], and h of batch j - 1, made since round j - 1's, is in its slot. red[j & 1] is
     * written again in round j + 2, after round j + 1's barrier, which follows the reducer's
     * reads of it. Both sides only wait (barrier.sync): racecheck reported hazards on h in every
     * form in which the consumers only arrived at a barrier (bar.arrive, which the PTX memory
     * model orders as a release), and a consumer
     * warp has the reducer's chains of sums off its path either way. */
    if (RED && warp == CW + 1) { /* the reducer: batch j's h once its sums are in, lane q pair q */
        for (int j = 0; j <= nb; j++) {
            const int kb = k0 + j * B;
            bar_consumers(CT + 32);
            if (j < nb) make_h(lane, kb, min(B, k1 - kb), j & 1);
            __syncwarp(); /* lanes 16-31 made none: converged (barrier.sync does not need it;
                             kept, as measured) */
        }
        return;
    }
    const int c = threadIdx.x; /* columns 8c .. 8c + 7 */
    float xr[NL][8], out[NL][8];
#pragma unroll
    for (int tt = 0; tt < NL; tt++) {
        const bool live = t0 + tt < n;
        const float4 *xp =
            reinterpret_cast<const float4 *>(x + (size_t)(live ? t0 + tt : t0) * H) + 2 * c;
        const float4 a = k_ld_act(xp), b = k_ld_act(xp + 1);
        xr[tt][0] = a.x, xr[tt][1] = a.y, xr[tt][2] = a.z, xr[tt][3] = a.w;
        xr[tt][4] = b.x, xr[tt][5] = b.y, xr[tt][6] = b.z, xr[tt][7] = b.w;
#pragma unroll
        for (int j = 0; j < 8; j++)
            out[tt][j] = 0.0f;
    }
    unsigned st = 0, ph = 0;
    const q_magics mg = q_magics_make();
    const uint16_t *my_gs = sgu + ((8 * c) >> W.gshift); /* this thread's group of gate's rows */
    /* A batch's gate and up rows (nk of each): each thread's 8-column dots (times the row's
     * scale for int8 / int4), summed over the warp into red[jb] */
    auto gate_up = [&](int nk, int kb, int jb) {
        float acc[NT][2 * B];
#pragma unroll
        for (int m = 0; m < 2; m++)
#pragma unroll
            for (int i0 = 0; i0 < B; i0 += RPS) {
                uint4 u[RPS];
                if (i0 < nk) ring_take<WB>(ring, full, empty, st, ph, S, H, c, nk - i0, u);
#pragma unroll
                for (int r = 0; r < RPS && i0 + r < B; r++) {
                    const int i = i0 + r;
#pragma unroll
                    for (int tt = 0; tt < NT; tt++)
                        acc[tt][m * B + i] = 0.0f;
                    if (i < nk) {
                        float w[8];
                        cols_values<WB>(u[r], w, mg);
                        float sc = 1.0f;
                        if constexpr (Q)
                            sc = __uint_as_float(
                                (unsigned)my_gs[((size_t)m * kmax + kb - k0 + i) * ngh] << 16);
#pragma unroll
                        for (int tt = 0; tt < NL; tt++) {
                            float a = 0.0f;
#pragma unroll
                            for (int j = 0; j < 8; j++)
                                a = fmaf(w[j], xr[tt][j], a);
                            acc[tt][m * B + i] = Q ? a * sc : a;
                        }
                    }
                }
            }
        int row; /* this lane's value: acc's row-th, tt * 2B + m B + i, as red holds them */
        const float v = warp_sum_t<2 * B * NT>(&acc[0][0], lane, &row);
        red[jb][warp][row] = v;
    };
    /* int8 / int4: the scales of this thread's columns in down's group gcur (k >> gshift) */
    q_scales8<WB == 4 ? 4 : 8> dsc;
    int gcur = -1;
    /* A batch's down rows (nk), each times its h, into the outputs */
    auto down_rows = [&](int nk, int kb, int jb) {
#pragma unroll
        for (int i0 = 0; i0 < B; i0 += RPS) {
            uint4 u[RPS];
            if (i0 < nk) ring_take<WB>(ring, full, empty, st, ph, S, H, c, nk - i0, u);
#pragma unroll
            for (int r = 0; r < RPS && i0 + r < B; r++) {
                const int i = i0 + r;
                if (i < nk) {
                    float w[8];
                    if constexpr (Q) {
                        if (((kb + i) >> W.gshift) != gcur) {
                            gcur = (kb + i) >> W.gshift;
                            dsc.set(
                                reinterpret_cast<const uint4 *>(sd + (size_t)(gcur - gd0) * H)[c]);
                        }
                        if constexpr (WB == 4)
                            q_dequant_scaled4(u[r].x, dsc, w, mg);
                        else
                            q_dequant_scaled8(make_uint2(u[r].x, u[r].y), dsc, w, mg);
                    } else {
                        unpack16<__nv_bfloat16>(u[r], w);
                    }
#pragma unroll
                    for (int tt = 0; tt < NL; tt++) {
                        const float h = h_at(tt, i, kb, jb);
#pragma unroll
                        for (int j = 0; j < 8; j++)
                            out[tt][j] = fmaf(h, w[j], out[tt][j]);
                    }
                }
            }
        }
    };
    /* Batch j: its gate and up; the barrier (every warp's sums of j are in red, and batch j - 1's
     * h, made in the round before, is in hs); batch j's h; batch j - 1's down. red[j & 1] is
     * written again in round j + 2 before that round's barrier, but after every thread has
     * passed round j + 1's, that is, after its reads of red[j & 1] (batch j's h); hs[j & 1] is
     * written again after round j + 2's barrier, when every thread has read it (batch j's down
     * rows, round j + 1). */
    for (int j = 0; j <= nb; j++) {
        const int kb = k0 + j * B, nk = j < nb ? min(B, k1 - kb) : 0;
        if (nk > 0) gate_up(nk, kb, j & 1);
        bar_consumers(CT + (RED ? 32 : 0));
        if (!RED && nk > 0) make_h(warp + lane * CW, kb, nk, j & 1);
        if (j > 0) down_rows(min(B, k1 - (kb - B)), kb - B, (j - 1) & 1);
    }
#pragma unroll
    for (int tt = 0; tt < NL; tt++)
        if (t0 + tt < n) {
            float4 *po = reinterpret_cast<float4 *>(partial +
                                                    ((size_t)(t0 + tt - p0) * G + blockIdx.x) * H) +
                         2 * c;
            po[0] = make_float4(out[tt][0], out[tt][1], out[tt][2], out[tt][3]);
            po[1] = make_float4(out[tt][4], out[tt][5], out[tt][6], out[tt][7]);
        }
}

/* out[t][j] = the sum over blocks b of partial[t][b][j], b in order: 32 outputs a block of 256
 * threads, each of its 8 warps summing every 8th partial, then the 8 sums in order. */
__global__ void __launch_bounds__(256)
    mlp_reduce_kernel(const float *partial, float *out, int H, int G) {
    __shared__ float sums[8][33];
    k_wait_prior();
    const int t = blockIdx.y, lane = threadIdx.x & 31, p = threadIdx.x >> 5;
    const int j = blockIdx.x * 32 + lane;
    float s = 0.0f;
    if (j < H)
        for (int b = p; b < G; b += 8)
            s += partial[((size_t)t * G + b) * H + j];
    sums[p][lane] = s;
    __syncthreads();
    if (p == 0 && j < H) {
        float r = sums[0][lane];
        for (int q = 1; q < 8; q++)
            r += sums[q][lane];
        out[(size_t)t * H + j] = r;
    }
}

/* ---- launchers ---- */

#define MLP_RING_BYTES                                                                             \
    (100 * 1024) /* two blocks' rings fit a multiprocessor's shared memory, so that the            \
                    next launch's block may fill its ring under this one (PDL) where the           \
                    form's registers leave room too (on E4B none of the forms does) */

typedef void (*mlp_fn)(mlp_w, const float *, float *, float *, float *, int, int, int, int, int,
                       int, int);

/* The form for a pass of nt = 1 .. 8 inputs: 1 input and batches of 16, 2 and 8, 3 - 4 and 4,
 * 5 - 8 and 2 (the accumulators' registers stay about the same; x and the outputs grow with the
 * inputs). Each nt has its own form, whose inputs are all live: a pass over 3 in the 4-input
 * form, or one over 5 .. 7 in the 8-input form, would dot the dead inputs too (measured with the
 * rows kernel's forms of each n: matvec_rows.cu, mv_rows_form). wb: bytes of 8 columns (16 bf16,
 * 8 int8, 4 int4). */
#define MLP_FORMS(WB)                                                                              \
    {                                                                                              \
        mlp_kernel<1, 16, WB>, mlp_kernel<2, 8, WB>, mlp_kernel<3, 4, WB>, mlp_kernel<4, 4, WB>,   \
            mlp_kernel<5, 2, WB>, mlp_kernel<6, 2, WB>, mlp_kernel<7, 2, WB>, mlp_kernel<8, 2, WB> \
    }
static int mlp_wi(int wb) { /* 16, 8, 4 -> 0, 1, 2 */
    return wb == 16 ? 0 : wb == 8 ? 1 : 2;
}
static mlp_fn mlp_form(int nt, int wb) {
    static const mlp_fn forms[3][8] = {MLP_FORMS(16), MLP_FORMS(8), MLP_FORMS(4)};
    return forms[mlp_wi(wb)][(nt < 1 ? 1 : nt > 8 ? 8 : nt) - 1];
}

static int mlp_stages(int H) {
    const int s = MLP_RING_BYTES / (2 * H);
    return s < 4 ? 4 : s > 48 ? 48 : s;
}

/* The most stages a block's producer keeps asked for and not landed: MLP_INFLIGHT_BYTES. The ring
 * (MLP_RING_BYTES) may still fill further ahead; the limit is on requests in the memory system.
 * Why. Memory needs about its latency times its bandwidth in flight to stay busy (~3 MB on an
 * H200); past that, requests only queue. With the whole ring asked for at once (100 KB a
 * multiprocessor, 13 MB over the GPU: 3 us of bandwidth), every request on the step's critical
 * path - the consumers' first reads of x, the kernels before this one that it overlaps, the
 * reduction's partials - waits behind microseconds of weights. Measured (an H200, E4B's step,
 * one process alternating): 8 rows in flight 3.11 ms, 10-16 rows 3.05-3.07, no
 * limit 3.10-3.14; dev/cuda/step_slice.cu's chain of such kernels 2.46-2.47 ms at 8-10 rows
 * against 2.55-2.56 without. 4 rows (20 KB) starves memory (3.49-3.53 ms). A stage is 2H bytes
 * whatever the dtype, so the limit is the same in bytes where stages are full (int4's passes of
 * 5 - 8 inputs, batches of 2 rows, fill half of each stage: half the bytes in flight). */
#define MLP_INFLIGHT_BYTES (60 * 1024)

static int mlp_depth(int H) {
    const int d = MLP_INFLIGHT_BYTES / (2 * H);
    return d < 4 ? 4 : d;
}

static int mlp_grid(void) {
    static int sms;
    if (!sms) {
        int dev;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            sms = -1;
    }
    return sms;
}

/* A launch's dynamic shared memory (mlp_layout_of). */
static size_t mlp_smem(int H, int I, int nt, int wb, int group) {
    return mlp_layout_of(H, I, mlp_grid(), mlp_stages(H), mlp_extra_warps(nt) == 2, wb, group)
        .bytes;
}

/* What k_mlp_supported found for a shape and kind of weights: every form fits (ok), the 8-input
 * form too (wide). A process asks about few shapes (one or two a model); the device is the
 * current one at the first ask. */
typedef struct {
    int H, I, wb, group, ok, wide;
} mlp_shape;

/* Whether every form runs this shape on this device: sm_90 (the copy engine), H / 8 consumer
 * threads in whole warps, the block's registers and shared memory within a multiprocessor's, and
 * at least 8 intermediate indices a block; for int8 / int4, a group of 32, 64 or 128 that divides
 * I (down's groups; H is a multiple of 256, so of the group too). Asked once per shape (cheap
 * afterwards). */
static mlp_shape *mlp_shape_of(int H, int I, int wb, int group) {
    static mlp_shape seen[8];
    static int n_seen;
    if (wb == 16) group = 1;
    for (int i = 0; i < n_seen; i++)
        if (seen[i].H == H && seen[i].I == I && seen[i].wb == wb && seen[i].group == group)
            return &seen[i];
    mlp_shape *e = &seen[n_seen < 8 ? n_seen++ : 7]; /* past 8 shapes, the last slot is reused */
    *e = (mlp_shape){H, I, wb, group, 0, 0};
    int ok = H > 0 && H % 256 == 0 && H / 8 + 32 <= MLP_MAX_THREADS && mlp_grid() > 0 &&
             I >= 8 * mlp_grid() &&
             (wb == 16 || ((group == 32 || group == 64 || group == 128) && I % group == 0));
    int dev, major = 0, regs_sm = 0, smem_optin = 0;
    if (ok && cudaGetDevice(&dev) == cudaSuccess) {
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&regs_sm, cudaDevAttrMaxRegistersPerMultiprocessor, dev);
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    }
    ok = ok && major >= 9;
    /* Each form's dynamic shared memory limit only grows, so that it fits every shape said yes
     * to, whichever was asked last. */
    static size_t smem_set[3][9];
    size_t *set = smem_set[mlp_wi(wb)];
    int wide = 1; /* the forms of 5 .. 8 inputs are optional: passes of 4 at most instead */
    for (int nt = 1; ok && nt <= 8; nt++) {
        cudaFuncAttributes fa;
        const mlp_fn fn = mlp_form(nt, wb);
        const size_t smem = mlp_smem(H, I, nt, wb, group), want = smem > set[nt] ? smem : set[nt];
        const int threads = H / 8 + 32 * mlp_extra_warps(nt);
        const int form_ok =
            threads <= (nt <= 4 ? MLP_MAX_THREADS : MLP_WIDE_THREADS) &&
            cudaFuncGetAttributes(&fa, fn) == cudaSuccess && fa.numRegs * threads <= regs_sm &&
            want + fa.sharedSizeBytes <= (size_t)smem_optin &&
            cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)want) ==
                cudaSuccess;
        if (form_ok) set[nt] = want;
        if (nt <= 4)
            ok = form_ok;
        else
            wide = wide && form_ok;
    }
    cudaGetLastError(); /* a refusal above is an answer, not an error for the next launch */
    e->ok = ok;
    e->wide = ok && wide;
    return e;
}

extern "C" int k_mlp_supported(int H, int I, int bits, int group, int form) {
    if (bits != 16 && bits != 8 && bits != 4) return 0;
    if (form == K_MLP_MMA)
        return bits == 16 && mlp_grid() > 0 && mlp_mma_max_inputs(H, I, mlp_grid()) > 0;
    return mlp_shape_of(H, I, bits, group)->ok; /* a thread's 8 columns: bits bytes */
}

extern "C" size_t k_mlp_partial_floats(int H, int n) {
    return (size_t)(n < K_MLP_CHUNK ? n : K_MLP_CHUNK) * (mlp_grid() > 0 ? mlp_grid() : 1) * H;
}

extern "C" void k_mlp(cudaStream_t s, float *out, float *h_out, float *u_out, const float *x,
                      const k_mlp_weights *w, float *partial, int H, int I, int n, int form) {
    if (n <= 0 || (k_skip & K_SKIP_MATVEC)) return;
    const int G = mlp_grid(), depth = mlp_depth(H), wb = w->bits; /* 8 columns: bits bytes */
    const int group = wb == 16 ? 1 : w->group;
    const int mma = form == K_MLP_MMA && wb == 16, mma_max = mma ? mlp_mma_max_inputs(H, I, G) : 0;
    const int S = mma ? 0 : mlp_stages(H), wide = mma ? 0 : mlp_shape_of(H, I, wb, group)->wide;
    const mlp_w W = {(const unsigned char *)w->gate,
                     (const unsigned char *)w->up,
                     (const unsigned char *)w->down_t,
                     w->gate_scales,
                     w->up_scales,
                     w->down_t_scales,
                     __builtin_ctz((unsigned)group)}; /* group: a power of two */
    for (int c0 = 0; c0 < n; c0 += K_MLP_CHUNK) {     /* a prefill: chunks of K_MLP_CHUNK inputs */
        const int c1 = n - c0 < K_MLP_CHUNK ? n : c0 + K_MLP_CHUNK;
        for (int t0 = c0; mma && t0 < c1;) { /* passes of as many inputs as fit */
            const int nt = c1 - t0 < mma_max ? c1 - t0 : mma_max;
            mlp_mma_launch(s, w->gate, w->up, w->down_t, x, h_out, u_out, partial, H, I, G, c1, t0,
                           c0, nt, depth);
            t0 += nt;
        }
        for (int t0 = c0; !mma && t0 < c1;) {
            const int r = c1 - t0, nt = r < (wide ? 8 : 4) ? r : wide ? 8 : 4;
            k_launch_ex(mlp_form(nt, wb), dim3(G), dim3(H / 8 + 32 * mlp_extra_warps(nt)), 0,
                        mlp_smem(H, I, nt, wb, group), s, W, x, h_out, u_out, partial, H, I, c1, t0,
                        c0, S, depth);
            K_CHECK_LAUNCH();
            t0 += nt;
        }
        k_launch(mlp_reduce_kernel, dim3((H + 31) / 32, c1 - c0), dim3(256), s,
                 (const float *)partial, out + (size_t)c0 * H, H, G);
        K_CHECK_LAUNCH();
    }
}

/* down [H][I] -> down_t [I][H], 16-bit elements, through 32 x 32 tiles of shared memory. */
__global__ void transpose16_kernel(const uint16_t *__restrict__ in, uint16_t *__restrict__ outp,
                                   int rows, int cols) {
    __shared__ uint16_t tile[32][33];
    k_wait_prior();
    const int c0 = blockIdx.x * 32, r0 = blockIdx.y * 32;
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int r = r0 + i, cc = c0 + threadIdx.x;
        if (r < rows && cc < cols) tile[i][threadIdx.x] = in[(size_t)r * cols + cc];
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
        const int cc = c0 + i, r = r0 + threadIdx.x;
        if (cc < cols && r < rows) outp[(size_t)cc * rows + r] = tile[threadIdx.x][i];
    }
}

extern "C" void k_transpose16(cudaStream_t s, void *out, const void *in, int rows, int cols) {
    k_launch(transpose16_kernel, dim3((cols + 31) / 32, (rows + 31) / 32), dim3(32, 8), s,
             (const uint16_t *)in, (uint16_t *)out, rows, cols);
    K_CHECK_LAUNCH();
}
