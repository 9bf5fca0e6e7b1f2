/* matvec_mma.cu: bf16 matrix-vector products on the tensor cores (kernels.h k_matvec_set_mma).
 *
 * What it is for: speculative verify passes. matvec.cu's kernels multiply on the CUDA cores, and
 * for every 16 bytes of weights a lane loads 32 bytes of fp32 x through L1 - once per input
 * and row, so a verify over 8 positions costs 3.2 decode steps on an E4B-sized model. Here a
 * warp owns a tile of 16 rows and multiplies with mma.sync m16n8k16: the weights go from the
 * load into the mma's A operand with no conversion, one load of x serves the tile's 16 rows,
 * and an input takes 2 or 3 of B's 8 columns. The plain decode step is slower than on the CUDA
 * cores: a tile of 16 rows gives a launch 16 times fewer
 * warps to spread over the GPU (a small launch is latency-bound, the gate + up pair holds 2
 * blocks a multiprocessor), and its loads read 64 bytes from each of 8 rows instead of 512 from
 * one. So it is a switch (and a knob of the GPU search spaces), off by default: on when most
 * steps are verify passes.
 *
 * The layout. Lane (g, t) (g = lane / 4, t = lane % 4) loads 16 bytes - 8 columns - of rows g
 * and g + 8 of its tile at column c + 8 t of a 32-column step; those 2 x 4 words are the A
 * operands of two mmas (A is [16 rows][16 k]; k = 2t, 2t + 1, 2t + 8, 2t + 9 of lane (g, t) stand
 * for columns c + 8t .. c + 8t + 3 in the first mma and c + 8t + 4 .. c + 8t + 7 in the second:
 * a permutation of the step's columns, the same for A and B).
 *
 * x is fp32, the mma takes bf16, so x is split into SPLIT bf16 (mma_b) that take an input's
 * SPLIT columns of B - lane (g, t) gives column g. A decode step has one input, so the split
 * costs no extra mma; a verify pass's inputs fill B's columns in order, across passes over B
 * that share the A registers (column 8j + g of pass j is input (8j + g) / SPLIT's part), and
 * the row's result sums its input's columns.
 *   - mma 1, SPLIT 3: x = hi + mid + lo exactly (|x| >= 2^-110). A product differs from the
 *     CUDA cores' in its summation order (and the tensor cores' own fp32 adds) only, and the
 *     fixtures' logits are as close to the CPU's (2.6e-5 - 2.6e-4 against the CUDA cores'
 *     2.2e-5 - 2.5e-4). 8 inputs take 3 passes over B.
 *   - mma 2, SPLIT 2: x = hi + lo to 16 significant bits (2^-17 of x), 4 inputs a pass over B
 *     and fewer conversions: faster, but the bf16 fixtures' logits are 1-5e-3 from the CPU's,
 *     and a greedy near-tie of a random-weight fixture flipped in one of five runs. The tuner's
 * quality budget is what decides whether that is a cost.
 *
 * Split-K. A tile's 32-column steps are dealt to K warps of a block: warp slice k takes steps
 * k, k + K, ... (at any moment the K warps read K x 64 adjacent bytes of each row). K doubles
 * while the launch still fits MMA_WAVE_BLOCKS blocks a multiprocessor and every warp keeps a
 * step (mma_split). The K partial tiles are added in slice order through shared memory.
 *
 * Reproducibility. A row's result depends on its matrix's shape and the split only: the mma
 * computes output column j from B's column j alone, so an input's products are the same bits
 * whether it is the only input (decode) or one of eight (verify), whichever matrices share the
 * launch - speculation with the switch on stays lossless against plain decoding with it on. They
 * are not matvec.cu's bits (summed in another order), so the switch is all or nothing: with it
 * on, every bf16 product that can take it does (16-byte aligned, cols a multiple of 32 - a
 * function of the shape and the model, the same for decode and verify). */
#include "matvec.cuh"
#include "mma.cuh"

#define MMA_WARPS 8 /* warps per block */
#define MMA_CHUNK 8 /* inputs a launch: a verify pass in one, a prefill in launches of 8 */
/* Blocks a multiprocessor mma_split plans for: what every form of the kernel fits (fixed: K must
 * not depend on which form runs). */
#define MMA_WAVE_BLOCKS 2

/* Two fp32 as a bf16 pair, round to nearest even (lo in the low half, as the mma reads k). */
__device__ __forceinline__ unsigned bf16x2_rn(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned *>(&v);
}

/* This lane's B operands for one step: x[c .. c + 8) of its input (xp) as its part of the split
 * (0 hi, 1 mid - or lo when SPLIT is 2 -, 2 lo), b[i] holding k = 2i and 2i + 1; zeros when !live
 * (a column no input uses, or an input that does not exist: xp then points at one that does, so
 * that no lane branches before the warp-wide mma).
 *   SPLIT 3: x = hi + mid + lo, each part the top 16 bits of what the parts before it leave (a
 * bf16 truncated): x - hi has at most 16 significant bits and is exact in fp32, its rest after
 * mid at most 8, which bf16 holds - exactly, for |x| >= 2^-110 (below, x is not a multiple of
 * bf16's smallest subnormal 2^-133, and the parts miss it by less than that; every 2^32 bit
 * pattern checked on the host; the build does not flush subnormals). A lane peels
 * its own part only - a mask and a subtraction a peel, no conversion, no select (4
 * instructions a value fewer than rounding each part and choosing one). An infinite x gives a
 * NaN mid (inf - inf), so the row is NaN where the CUDA cores give an infinity: either way the
 * model has already overflowed.
 *   SPLIT 2: hi = bf16(x), lo = bf16(x - hi), rounded: 16 significant bits (at most 2^-17 of x
 * off); an x beyond bf16's range also gives a NaN part. */
template <int SPLIT>
__device__ __forceinline__ void mma_b(const float *xp, int part, bool live, unsigned b[4]) {
    const float4 p = k_ld_act(reinterpret_cast<const float4 *>(xp)),
                 q = k_ld_act(reinterpret_cast<const float4 *>(xp) + 1);
    const float v[8] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
    if constexpr (SPLIT == 3) {
        const unsigned m1 = part >= 1 ? 0xffff0000u : 0u, m2 = part >= 2 ? 0xffff0000u : 0u;
        unsigned y[8];
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float f = v[i];
            f -= __uint_as_float(__float_as_uint(f) & m1);
            f -= __uint_as_float(__float_as_uint(f) & m2);
            y[i] = __float_as_uint(f);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) /* the top halves of k = 2i and 2i + 1 */
            b[i] = live ? bf16_pair(y[2 * i], y[2 * i + 1]) : 0u;
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            /* a bf16 pair's two values by shift and mask (kcommon.cuh unpack16) */
            const unsigned h = bf16x2_rn(v[2 * i], v[2 * i + 1]);
            const unsigned l = bf16x2_rn(v[2 * i] - __uint_as_float(h << 16),
                                         v[2 * i + 1] - __uint_as_float(h & 0xffff0000u));
            b[i] = !live ? 0u : part == 0 ? h : l;
        }
    }
}

/* d += the step's 16 x 32 weights (wa: rows g, wb: rows g + 8) times B. (Summing each step from
 * zero and adding it to d on the CUDA cores, in case the tensor cores' accumulator keeps fewer
 * bits than fp32, does not bring the logits closer to the CPU's; the split of x does.) */
__device__ __forceinline__ void mma_step(float d[4], const uint4 &wa, const uint4 &wb,
                                         const unsigned b[4]) {
    mma_bf16(d, wa.x, wb.x, wa.y, wb.y, b[0], b[1]);
    mma_bf16(d, wa.z, wb.z, wa.w, wb.w, b[2], b[3]);
}

/* The block's row tiles for the launch's inputs (those below n): each warp's accumulators
 * through shared memory, then a thread per (tile, input, row) adds its slices in order - the
 * parts of each, hi + (mid + lo) - and stores the row by the segment's epilogue. */
template <int NB, bool PAIR, int SPLIT>
__device__ __forceinline__ void mma_finish(float (*part)[16][8 * NB], float (*part_up)[16][8 * NB],
                                           const float (*d)[4], const float (*du)[4],
                                           const mv_seg &sg, int warp, int g, int t, int K, int per,
                                           int tile0, int n) {
    constexpr int CAP = 8 * NB / SPLIT; /* inputs the passes over B hold */
    /* Lane (g, t) holds D[g][2t], D[g][2t + 1], D[g + 8][2t], D[g + 8][2t + 1] of pass j:
     * columns 8j + 2t and 8j + 2t + 1 of the launch (column SPLIT i + p: input i's part p) of
     * rows g and g + 8. */
#pragma unroll
    for (int j = 0; j < NB; j++) {
        part[warp][g][j * 8 + 2 * t] = d[j][0];
        part[warp][g][j * 8 + 2 * t + 1] = d[j][1];
        part[warp][g + 8][j * 8 + 2 * t] = d[j][2];
        part[warp][g + 8][j * 8 + 2 * t + 1] = d[j][3];
        if (PAIR) {
            part_up[warp][g][j * 8 + 2 * t] = du[j][0];
            part_up[warp][g][j * 8 + 2 * t + 1] = du[j][1];
            part_up[warp][g + 8][j * 8 + 2 * t] = du[j][2];
            part_up[warp][g + 8][j * 8 + 2 * t + 1] = du[j][3];
        }
    }
    __syncthreads();
    /* (tile, input, row) with the row fastest, so that neighbouring threads store
     * neighbouring rows; slices in order. */
    for (int i = threadIdx.x; i < per * CAP * 16; i += MMA_WARPS * 32) {
        const int rr = i & 15, in = (i >> 4) % CAP, tl = (i >> 4) / CAP;
        const int row = (tile0 + tl) * 16 + rr, c = SPLIT * in;
        if (row >= sg.rows || in >= n) continue;
        float v = 0.0f, vu = 0.0f;
        for (int k = 0; k < K; k++) {
            const float *pk = part[tl * K + k][rr] + c,
                        *uk = part_up[PAIR ? tl * K + k : 0][rr] + c;
            v += SPLIT == 3 ? pk[0] + (pk[1] + pk[2]) : pk[0] + pk[1];
            if (PAIR) vu += SPLIT == 3 ? uk[0] + (uk[1] + uk[2]) : uk[0] + uk[1];
        }
        mv_store(sg, in, row, v, vu);
    }
}

/* Tiles of 16 rows of every segment for inputs 0 .. n - 1 (n <= 8 NB / SPLIT: decode one, a
 * verify pass up to 8, a prefill's chunk 8) in one pass over the rows: NB passes over B share
 * each load of A. The steps go in full groups of U (all loads, then their mmas, with no branch
 * between them), then one at a time; a form with a predicate per step leaves each step's x
 * load and conversion in front of its mma (E4B step 4.45 ms against 3.85 on an H200). F:
 * steps loaded before waiting for the previous kernel (weights never depend on it). PAIR: some
 * segment is a gate + up pair (the up matrix's loads exist only then). */
template <bool PAIR, int U, int NB, int SPLIT>
__global__ void __launch_bounds__(MMA_WARPS * 32, PAIR || NB > 1 ? 2 : 3)
    matvec_mma_kernel(const __grid_constant__ mv_launch L, const float *x, int cols, int n) {
    constexpr int F = 2, CAP = 8 * NB / SPLIT;
    __shared__ float part[MMA_WARPS][16][8 * NB], part_up[PAIR ? MMA_WARPS : 1][16][8 * NB];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const mv_seg &sg = L.seg[mv_seg_of(L, (int)blockIdx.x)];
    const int K = sg.k, slice = warp % K, per = MMA_WARPS / K; /* per: tiles a block */
    const int tile0 = ((int)blockIdx.x - sg.block0) * per, tile = tile0 + warp / K;
    const int r0 = tile * 16 + g;
    const bool pair = PAIR && sg.epilogue == K_MV_GELU_PAIR;
    const int steps = cols >> 5;
    const int nst = tile * 16 < sg.rows && slice < steps ? (steps - slice + K - 1) / K : 0;
    /* rows past the end read row 0, and are never stored */
    const size_t ca = (size_t)slice * 32 + t * 8;
    const size_t oa = (size_t)(r0 < sg.rows ? r0 : 0) * cols + ca,
                 ob = (size_t)(r0 + 8 < sg.rows ? r0 + 8 : 0) * cols + ca;
    const int ss = K * 4; /* uint4 between a lane's steps: K x 32 columns */
    const __nv_bfloat16 *w = (const __nv_bfloat16 *)sg.w, *wu = (const __nv_bfloat16 *)sg.w_up;
    const uint4 *pa = reinterpret_cast<const uint4 *>(w + oa),
                *pb = reinterpret_cast<const uint4 *>(w + ob);
    const uint4 *qa = pair ? reinterpret_cast<const uint4 *>(wu + oa) : pa,
                *qb = pair ? reinterpret_cast<const uint4 *>(wu + ob) : pb;

    /* step s's weights: rows g (a) and g + 8 (b), and the up matrix's (u, v) when pair */
    auto load_at = [&](int s, uint4 &a, uint4 &b, uint4 &u, uint4 &v) {
        a = __ldcs(pa + s * ss);
        b = __ldcs(pb + s * ss);
        if (pair) {
            u = __ldcs(qa + s * ss);
            v = __ldcs(qb + s * ss);
        }
    };
    uint4 fa[F], fb[F], fu[F], fv[F];
    k_launch_next();
#pragma unroll
    for (int s = 0; s < F; s++)
        if (s < nst) load_at(s, fa[s], fb[s], fu[s], fv[s]);
    k_wait_only();
    /* lane (g, t) gives B's column g in pass j: column 8j + g of the launch, input
     * (8j + g) / SPLIT's part (8j + g) % SPLIT; the columns past CAP inputs stay zero */
    bool live[NB];
    int xpart[NB];
    const float *xj[NB];
#pragma unroll
    for (int j = 0; j < NB; j++) {
        const int c = 8 * j + g, in = c / SPLIT;
        live[j] = in < CAP && in < n;
        xpart[j] = c % SPLIT;
        xj[j] = x + (size_t)(live[j] ? in : 0) * cols;
    }
    float d[NB][4] = {}, du[NB][4] = {};
    /* step s: this lane's 8 columns are chunk (slice + s K) 4 + t of x */
    auto mma_at = [&](int s, const uint4 &a, const uint4 &b, const uint4 &u, const uint4 &v) {
        const int c8 = (slice + s * K) * 4 + t;
#pragma unroll
        for (int j = 0; j < NB; j++) {
            unsigned bx[4];
            mma_b<SPLIT>(xj[j] + (size_t)c8 * 8, xpart[j], live[j], bx);
            mma_step(d[j], a, b, bx);
            if (PAIR && pair) mma_step(du[j], u, v, bx);
        }
    };
#pragma unroll
    for (int s = 0; s < F; s++)
        if (s < nst) mma_at(s, fa[s], fb[s], fu[s], fv[s]);
    int s = F;
    for (; s + U <= nst; s += U) {
        uint4 ga[U], gb[U], gu[U], gv[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            load_at(s + u, ga[u], gb[u], gu[u], gv[u]);
#pragma unroll
        for (int u = 0; u < U; u++)
            mma_at(s + u, ga[u], gb[u], gu[u], gv[u]);
    }
    for (; s < nst; s++) {
        /* not load_at: with u and v left unset when !pair, ptxas allocates the pair kernels'
         * registers otherwise (122 instead of 128); as written the code is the measured one */
        const uint4 a = __ldcs(pa + s * ss), b = __ldcs(pb + s * ss);
        uint4 u = a, v = b;
        if (pair) {
            u = __ldcs(qa + s * ss);
            v = __ldcs(qb + s * ss);
        }
        mma_at(s, a, b, u, v);
    }
    mma_finish<NB, PAIR, SPLIT>(part, part_up, d, du, sg, warp, g, t, K, per, tile0, n);
}

/* Warps per row tile (split-K): slices of at least one step of 32 columns. */
static int mma_split(int rows, int cols, int sms) {
    return mma_split_k(rows, cols / 32, 1, MMA_WARPS, (long)MMA_WAVE_BLOCKS * sms);
}

typedef void (*mma_fn)(const mv_launch, const float *, int, int);

/* The kernel for n <= MMA_CHUNK inputs: as few passes over B as hold them (SPLIT columns an
 * input). U: 4 KB of weights a warp in flight (a pair step loads two matrices). */
static mma_fn mma_kernel_for(int split, bool pair, int n) {
    if (split == 2)
        return n <= 4
                   ? (pair ? matvec_mma_kernel<true, 2, 1, 2> : matvec_mma_kernel<false, 4, 1, 2>)
                   : (pair ? matvec_mma_kernel<true, 2, 2, 2> : matvec_mma_kernel<false, 4, 2, 2>);
    return n <= 2   ? (pair ? matvec_mma_kernel<true, 2, 1, 3> : matvec_mma_kernel<false, 4, 1, 3>)
           : n <= 5 ? (pair ? matvec_mma_kernel<true, 2, 2, 3> : matvec_mma_kernel<false, 4, 2, 3>)
                    : (pair ? matvec_mma_kernel<true, 2, 3, 3> : matvec_mma_kernel<false, 4, 3, 3>);
}

void mv_mma_launch(cudaStream_t s, const k_mv_seg *segs, int n_segs, const float *x, int cols,
                   int n, int split, int sms) {
    mv_launch L = {};
    L.n_segs = n_segs;
    int blocks = 0;
    bool pair = false;
    for (int i = 0; i < n_segs; i++) {
        const int k = mma_split(segs[i].rows, cols, sms), per = MMA_WARPS / k;
        L.seg[i] = mv_seg_make(segs[i], k, blocks);
        blocks += ((segs[i].rows + 15) / 16 + per - 1) / per; /* tiles of 16 rows, per a block */
        pair = pair || segs[i].epilogue == K_MV_GELU_PAIR;
    }
    L.blocks = blocks;
    /* Up to MMA_CHUNK inputs (decode, verify) in one launch, more (prefill) in launches of
     * MMA_CHUNK, each its inputs' rows of out (and out_up, mul) */
    for (int t0 = 0; t0 < n; t0 += MMA_CHUNK) {
        const int m = n - t0 < MMA_CHUNK ? n - t0 : MMA_CHUNK;
        mv_launch C = L;
        for (int i = 0; i < n_segs; i++) {
            mv_seg &c = C.seg[i];
            c.out += (size_t)t0 * c.rows;
            if (c.out_up) c.out_up += (size_t)t0 * c.rows;
            if (c.mul) c.mul += (size_t)t0 * c.mul_stride;
        }
        k_launch(mma_kernel_for(split, pair, m), dim3((unsigned)blocks), dim3(MMA_WARPS * 32), s, C,
                 x + (size_t)t0 * cols, cols, m);
    }
}
