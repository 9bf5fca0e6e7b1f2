/* matvec_mma.cu: bf16 matrix-vector products on the tensor cores (GEMMA_CUDA_MV_MMA=1).
 *
 * What it is for: speculative verify passes. matvec.cu's kernels multiply on the CUDA cores, and
 * for every 16 bytes of weights a lane loads 32 bytes of fp32 x through L1 - once per input
 * and row, so a verify over 8 positions costs 3.2 decode steps on an E4B-sized model. Here a
 * warp owns a tile of 16 rows and multiplies with mma.sync m16n8k16: the weights go from the
 * load into the mma's A operand with no conversion, one load of x serves the tile's 16 rows,
 * and two inputs ride in B's 8 columns for the price of one. On the H200 (s18 call 8,
 * docs/bench_gpu.md) a verify over 8 positions of E4B costs 5.1 ms instead of 10.7, over 4
 * 4.2 instead of 6.4 - but a plain decode step 3.91 ms instead of 3.36: a tile of 16 rows
 * gives a launch 16 times fewer warps to spread over the GPU (a small launch is latency-bound,
 * the gate + up pair holds 2 blocks a multiprocessor), and its loads read 64 bytes from each
 * of 8 rows instead of 512 from one. So it is a switch (and a knob of the GPU search spaces),
 * off by default: on when most steps are verify passes.
 *
 * Numbers. x is split into three bf16 that sum to it exactly (mma_b), so a product differs from
 * the CUDA cores' only in its summation order. Session 18's split into two (16 significant bits
 * of x, four inputs a pass over B) left the bf16 fixtures' logits 1-5e-3 from the CPU's (the
 * CUDA cores: about 1e-4) and flipped a greedy near-tie in one of five runs (s18 call 9).
 * Speculation with the switch on stays lossless against plain decoding with it on: decode and
 * verify are the same kernels and bits.
 *
 * The layout. Lane (g, t) (g = lane / 4, t = lane % 4) loads 16 bytes - 8 columns - of rows g
 * and g + 8 of its tile at column c + 8 t of a 32-column step; those 2 x 4 words are the A
 * operands of two mmas (A is [16 rows][16 k]; k = 2t, 2t + 1, 2t + 8, 2t + 9 of lane (g, t) stand
 * for columns c + 8t .. c + 8t + 3 in the first mma and c + 8t + 4 .. c + 8t + 7 in the second:
 * a permutation of the step's columns, the same for A and B).
 *
 * x is fp32, the mma takes bf16. x = hi + mid + lo, hi = bf16(x), mid = bf16(x - hi), lo =
 * bf16(x - hi - mid), exactly (the products are exact in the tensor cores and summed in fp32).
 * B is [16 k][8 columns] and a decode step has one input, so the split costs no extra mma:
 * columns 3i, 3i + 1 and 3i + 2 hold input i's hi, mid and lo - lane (g, t) gives column g -
 * and the row's result is D[row][3i] + (D[row][3i + 1] + D[row][3i + 2]). Two inputs a pass
 * over B (a verify pass of up to 8 runs two or four passes with the same A registers); columns
 * 6 and 7, and inputs that do not exist, are zeros.
 *
 * Split-K. A tile's 32-column steps are dealt to K warps of a block: warp slice k takes steps
 * k, k + K, ... (at any moment the K warps read K x 64 adjacent bytes of each row). K doubles
 * while the launch still fits MMA_WAVE_BLOCKS blocks a multiprocessor and every warp keeps a
 * step (mma_split). The K partial tiles are added in slice order through shared memory.
 *
 * Reproducibility. A row's result depends on its matrix's shape only: the mma computes output
 * column j from B's column j alone, so an input's products are the same bits whether it is the
 * only input (decode) or one of eight (verify), whichever matrices share the launch. They are not
 * matvec.cu's bits (x is split, and summed in another order), so the switch is all or nothing:
 * with it on, every bf16 product that can take it does (16-byte aligned, cols a multiple of 32 -
 * a function of the shape and the model, the same for decode and verify). */
#include "matvec.cuh"

#define MMA_WARPS  8 /* warps per block */
#define MMA_INPUTS 2 /* inputs per pass over B: a column each for hi, mid and lo (6 of 8) */
/* Blocks a multiprocessor mma_split plans for: what every form of the kernel fits (fixed: K must
 * not depend on which form runs). */
#define MMA_WAVE_BLOCKS 2

/* d += A B, m16n8k16, bf16 operands, fp32 accumulators (the fragment layouts of the PTX ISA). */
__device__ __forceinline__ void mma_bf16(float d[4], unsigned a0, unsigned a1, unsigned a2,
                                         unsigned a3, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/* Two fp32 as a bf16 pair, round to nearest even (lo in the low half, as the mma reads k). */
__device__ __forceinline__ unsigned bf16x2_rn(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const unsigned *>(&v);
}

/* This lane's B operands for one step: x[c .. c + 8) of its input (xp) as its part of the split
 * (0 hi, 1 mid, 2 lo), b[i] holding k = 2i and 2i + 1; zeros when !live (a column no input
 * uses, or an input that does not exist: xp then points at one that does, so that no lane
 * branches before the warp-wide mma). x = hi + mid + lo exactly: x - hi has at most 16
 * significant bits and is exact in fp32, its rest after mid at most 8, which bf16 holds. An
 * infinite x (or one beyond bf16's range) gives a NaN mid, so the row is NaN where the CUDA
 * cores give an infinity: either way the model has already overflowed. */
__device__ __forceinline__ void mma_b(const float *xp, int part, bool live, unsigned b[4]) {
    const float4 p = __ldg(reinterpret_cast<const float4 *>(xp)),
                 q = __ldg(reinterpret_cast<const float4 *>(xp) + 1);
    const float v[8] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        /* a bf16 pair's two values by shift and mask (kcommon.cuh unpack16) */
        const unsigned h = bf16x2_rn(v[2 * i], v[2 * i + 1]);
        const float r0 = v[2 * i] - __uint_as_float(h << 16),
                    r1 = v[2 * i + 1] - __uint_as_float(h & 0xffff0000u);
        const unsigned m = bf16x2_rn(r0, r1);
        const unsigned l =
            bf16x2_rn(r0 - __uint_as_float(m << 16), r1 - __uint_as_float(m & 0xffff0000u));
        b[i] = !live ? 0u : part == 0 ? h : part == 1 ? m : l;
    }
}

/* d += the step's 16 x 32 weights (wa: rows g, wb: rows g + 8) times B. (Summing each step from
 * zero and adding it to d on the CUDA cores, in case the tensor cores' accumulator keeps fewer
 * bits than fp32, did not bring the logits closer to the CPU's: s18 call 9.) */
__device__ __forceinline__ void mma_step(float d[4], const uint4 &wa, const uint4 &wb,
                                         const unsigned b[4]) {
    mma_bf16(d, wa.x, wb.x, wa.y, wb.y, b[0], b[1]);
    mma_bf16(d, wa.z, wb.z, wa.w, wb.w, b[2], b[3]);
}

/* Steps s0 .. s0 + S - 1 (those below nst) of a lane's rows: rows g (a) and g + 8 (b) of the
 * tile, and of the up matrix (u, v) when pair; ss: uint4 between steps. */
template <int S>
__device__ __forceinline__ void mma_load(uint4 *a, uint4 *b, uint4 *u, uint4 *v, const uint4 *pa,
                                         const uint4 *pb, const uint4 *qa, const uint4 *qb, int s0,
                                         int nst, int ss, bool pair) {
#pragma unroll
    for (int i = 0; i < S; i++)
        if (s0 + i < nst) {
            a[i] = __ldcs(pa + (s0 + i) * ss);
            b[i] = __ldcs(pb + (s0 + i) * ss);
            if (pair) {
                u[i] = __ldcs(qa + (s0 + i) * ss);
                v[i] = __ldcs(qb + (s0 + i) * ss);
            }
        }
}

/* The mmas of those steps: d[j] (and du[j], the up matrix) += A B for each pass j over B, B
 * from x at xp[j] + step x cstride columns. */
template <int S, int NB, bool PAIR>
__device__ __forceinline__ void mma_steps(float (*d)[4], float (*du)[4], const uint4 *a,
                                          const uint4 *b, const uint4 *u, const uint4 *v,
                                          const float *const *xp, const bool *live, int part,
                                          int s0, int nst, int cstride, bool pair) {
#pragma unroll
    for (int i = 0; i < S; i++)
        if (s0 + i < nst)
#pragma unroll
            for (int j = 0; j < NB; j++) {
                unsigned bx[4];
                mma_b(xp[j] + (size_t)(s0 + i) * cstride, part, live[j], bx);
                mma_step(d[j], a[i], b[i], bx);
                if (PAIR && pair) mma_step(du[j], u[i], v[i], bx);
            }
}

/* The block's row tiles for inputs t0 .. t0 + MMA_INPUTS x NB - 1 (those below n): each warp's
 * accumulators through shared memory, then a thread per (tile, input, row) adds its slices in
 * order - hi + (mid + lo) of each - and stores the row by the segment's epilogue. */
template <int NB, bool PAIR>
__device__ __forceinline__ void mma_finish(float (*part)[16][8 * NB], float (*part_up)[16][8 * NB],
                                           const float (*d)[4], const float (*du)[4],
                                           const mv_seg &sg, int warp, int g, int t, int K, int per,
                                           int tile0, int t0, int n) {
    /* Lane (g, t) holds D[g][2t], D[g][2t + 1], D[g + 8][2t], D[g + 8][2t + 1]: columns 2t
     * and 2t + 1 of rows g and g + 8 in pass j (column 3i + p: input t0 + j * MMA_INPUTS + i's
     * part p). */
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
     * neighbouring rows; a row's value is hi + (mid + lo) of each slice, slices in order. */
    for (int i = threadIdx.x; i < per * MMA_INPUTS * NB * 16; i += MMA_WARPS * 32) {
        const int rr = i & 15, in = (i >> 4) % (MMA_INPUTS * NB), tl = (i >> 4) / (MMA_INPUTS * NB);
        const int row = (tile0 + tl) * 16 + rr, c = in / MMA_INPUTS * 8 + 3 * (in % MMA_INPUTS);
        if (row >= sg.rows || t0 + in >= n) continue;
        float v = 0.0f, vu = 0.0f;
        for (int k = 0; k < K; k++) {
            const int wk = tl * K + k;
            v += part[wk][rr][c] + (part[wk][rr][c + 1] + part[wk][rr][c + 2]);
            if (PAIR) vu += part_up[wk][rr][c] + (part_up[wk][rr][c + 1] + part_up[wk][rr][c + 2]);
        }
        mv_store(sg, t0 + in, row, v, vu);
    }
}

/* Tiles of 16 rows of every segment for inputs 0 .. n - 1, MMA_INPUTS a pass over B (NB passes
 * over B share each load of A: NB = 4 runs up to 8 inputs a pass over the rows). U: steps a warp
 * loads at once (a group: all loads, then their mmas). F: steps loaded before waiting for the
 * previous kernel when prefetch (weights never depend on it). PAIR: some segment is a gate + up
 * pair (the up matrix's loads exist only then). */
template <bool PAIR, int U, int NB>
__global__ void __launch_bounds__(MMA_WARPS * 32, PAIR || NB > 1 ? 2 : 3)
    matvec_mma_kernel(const __grid_constant__ mv_launch L, const float *__restrict__ x, int cols,
                      int n, int prefetch) {
    constexpr int F = 2;
    __shared__ float part[MMA_WARPS][16][8 * NB], part_up[PAIR ? MMA_WARPS : 1][16][8 * NB];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const mv_seg &sg = L.seg[mv_seg_of(L, (int)blockIdx.x)];
    const int K = sg.k, slice = warp % K, per = MMA_WARPS / K; /* per: tiles a block */
    const int tile0 = ((int)blockIdx.x - sg.block0) * per;
    const int r0 = (tile0 + warp / K) * 16 + g;
    const bool pair = PAIR && sg.epilogue == K_MV_GELU_PAIR;
    const int steps = cols >> 5;
    const int nst = r0 - g < sg.rows && slice < steps ? (steps - slice + K - 1) / K : 0;
    /* rows past the end read row 0, and are never stored */
    const size_t ca = (size_t)slice * 32 + t * 8;
    const size_t oa = (size_t)(r0 < sg.rows ? r0 : 0) * cols + ca,
                 ob = (size_t)(r0 + 8 < sg.rows ? r0 + 8 : 0) * cols + ca;
    const __nv_bfloat16 *w = (const __nv_bfloat16 *)sg.w, *wu = (const __nv_bfloat16 *)sg.w_up;
    const uint4 *pa = reinterpret_cast<const uint4 *>(w + oa),
                *pb = reinterpret_cast<const uint4 *>(w + ob);
    const uint4 *qa = pair ? reinterpret_cast<const uint4 *>(wu + oa) : pa,
                *qb = pair ? reinterpret_cast<const uint4 *>(wu + ob) : pb;
    const int ss = K * 4; /* uint4 between a lane's steps: K x 32 columns */

    uint4 fa[F], fb[F], fu[F], fv[F];
    k_launch_next();
    if (!prefetch) k_wait_only();
    mma_load<F>(fa, fb, fu, fv, pa, pb, qa, qb, 0, nst, ss, pair);
    if (prefetch) k_wait_only();

    for (int t0 = 0; t0 < n; t0 += MMA_INPUTS * NB) {
        /* the next inputs stream the rows again */
        if (t0 > 0) mma_load<F>(fa, fb, fu, fv, pa, pb, qa, qb, 0, nst, ss, pair);
        float d[NB][4] = {}, du[NB][4] = {};
        /* this lane's input in pass j: t0 + j * MMA_INPUTS + g / 3, its part g % 3 (g 6 and 7:
         * B's unused columns) */
        const float *xp[NB];
        bool live[NB];
#pragma unroll
        for (int j = 0; j < NB; j++) {
            const int in = t0 + j * MMA_INPUTS + g / 3;
            live[j] = g < 3 * MMA_INPUTS && in < n;
            xp[j] = x + (size_t)(live[j] ? in : t0) * cols + ca;
        }
        mma_steps<F, NB, PAIR>(d, du, fa, fb, fu, fv, xp, live, g % 3, 0, nst, K * 32, pair);
        for (int s0 = F; s0 < nst; s0 += U) {
            uint4 ga[U], gb[U], gu[U], gv[U];
            mma_load<U>(ga, gb, gu, gv, pa, pb, qa, qb, s0, nst, ss, pair);
            mma_steps<U, NB, PAIR>(d, du, ga, gb, gu, gv, xp, live, g % 3, s0, nst, K * 32, pair);
        }

        mma_finish<NB, PAIR>(part, part_up, d, du, sg, warp, g, t, K, per, tile0, t0, n);
        __syncthreads(); /* part is reused by the next inputs */
    }
}

/* Up to MMA_INPUTS x NB inputs in one pass over the rows (decode: one; a verify: up to 8): the
 * same operands and the same mma order per row as matvec_mma_kernel (so the same bits), the
 * steps in full groups of U with no branch between a group's loads and its mmas, then one at a
 * time. matvec_mma_kernel's form, with a predicate per step, leaves each step's x load and
 * conversion in front of its mma: E4B step 4.45 ms against 3.85 (s18 calls 1-2). */
template <bool PAIR, int U, int NB>
__global__ void __launch_bounds__(MMA_WARPS * 32, PAIR || NB > 1 ? 2 : 3)
    matvec_mma_pass_kernel(const __grid_constant__ mv_launch L, const float *__restrict__ x,
                           int cols, int n, int prefetch) {
    constexpr int F = 2;
    __shared__ float part[MMA_WARPS][16][8 * NB], part_up[PAIR ? MMA_WARPS : 1][16][8 * NB];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const mv_seg &sg = L.seg[mv_seg_of(L, (int)blockIdx.x)];
    const int K = sg.k, slice = warp % K, per = MMA_WARPS / K;
    const int tile0 = ((int)blockIdx.x - sg.block0) * per, tile = tile0 + warp / K;
    const int r0 = tile * 16 + g;
    const bool pair = PAIR && sg.epilogue == K_MV_GELU_PAIR;
    const int steps = cols >> 5;
    const int nst = tile * 16 < sg.rows && slice < steps ? (steps - slice + K - 1) / K : 0;
    const size_t ca = (size_t)slice * 32 + t * 8;
    const size_t oa = (size_t)(r0 < sg.rows ? r0 : 0) * cols + ca,
                 ob = (size_t)(r0 + 8 < sg.rows ? r0 + 8 : 0) * cols + ca;
    const int ss = K * 4;
    const __nv_bfloat16 *w = (const __nv_bfloat16 *)sg.w, *wu = (const __nv_bfloat16 *)sg.w_up;
    const uint4 *pa = reinterpret_cast<const uint4 *>(w + oa),
                *pb = reinterpret_cast<const uint4 *>(w + ob);
    const uint4 *qa = pair ? reinterpret_cast<const uint4 *>(wu + oa) : pa,
                *qb = pair ? reinterpret_cast<const uint4 *>(wu + ob) : pb;

    uint4 fa[F], fb[F], fu[F], fv[F];
    k_launch_next();
    if (!prefetch) k_wait_only();
    mma_load<F>(fa, fb, fu, fv, pa, pb, qa, qb, 0, nst, ss, pair);
    if (prefetch) k_wait_only();
    /* this lane's input in pass j over B: j * MMA_INPUTS + g / 3, its part g % 3 */
    const int xpart = g % 3;
    bool live[NB];
    const float *xj[NB];
#pragma unroll
    for (int j = 0; j < NB; j++) {
        const int in = j * MMA_INPUTS + g / 3;
        live[j] = g < 3 * MMA_INPUTS && in < n;
        xj[j] = x + (size_t)(live[j] ? in : 0) * cols;
    }
    float d[NB][4] = {}, du[NB][4] = {};
    /* step s: this lane's 8 columns are chunk (slice + s K) 4 + t of x */
    auto mma_at = [&](int s, const uint4 &a, const uint4 &b, const uint4 &u, const uint4 &v) {
        const int c8 = (slice + s * K) * 4 + t;
#pragma unroll
        for (int j = 0; j < NB; j++) {
            unsigned bx[4];
            mma_b(xj[j] + (size_t)c8 * 8, xpart, live[j], bx);
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
        for (int u = 0; u < U; u++) {
            ga[u] = __ldcs(pa + (s + u) * ss);
            gb[u] = __ldcs(pb + (s + u) * ss);
            if (pair) {
                gu[u] = __ldcs(qa + (s + u) * ss);
                gv[u] = __ldcs(qb + (s + u) * ss);
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++)
            mma_at(s + u, ga[u], gb[u], gu[u], gv[u]);
    }
    for (; s < nst; s++) {
        const uint4 a = __ldcs(pa + s * ss), b = __ldcs(pb + s * ss);
        uint4 u = a, v = b;
        if (pair) {
            u = __ldcs(qa + s * ss);
            v = __ldcs(qb + s * ss);
        }
        mma_at(s, a, b, u, v);
    }
    mma_finish<NB, PAIR>(part, part_up, d, du, sg, warp, g, t, K, per, tile0, 0, n);
}

/* Warps per row tile (split-K), a function of the shape alone (and of the multiprocessors). */
static int mma_split(int rows, int cols, int sms) {
    const long tiles = (rows + 15) / 16, wave = (long)MMA_WAVE_BLOCKS * sms;
    const int steps = cols / 32;
    int k = 1;
    while (k < MMA_WARPS && steps >= 2 * k && (tiles * 2 * k + MMA_WARPS - 1) / MMA_WARPS <= wave)
        k *= 2;
    return k;
}

typedef void (*mma_fn)(const mv_launch, const float *, int, int, int);

void mv_mma_launch(cudaStream_t s, const k_mv_seg *segs, int n_segs, const float *x, int cols,
                   int n, int prefetch, int sms) {
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
    /* Up to 8 inputs (decode, verify) in one pass over the rows with 1, 2 or 4 passes over B,
     * more (prefill) 8 a pass. U: 4 KB of weights a warp in flight (a pair step loads two
     * matrices); 2 KB for a pair with four passes over B, whose accumulators take the registers
     * (128 without spilling). */
    const mma_fn kernel =
        n > 4 * MMA_INPUTS ? (pair ? matvec_mma_kernel<true, 1, 4> : matvec_mma_kernel<false, 4, 4>)
        : n > 2 * MMA_INPUTS
            ? (pair ? matvec_mma_pass_kernel<true, 1, 4> : matvec_mma_pass_kernel<false, 4, 4>)
        : n > MMA_INPUTS
            ? (pair ? matvec_mma_pass_kernel<true, 2, 2> : matvec_mma_pass_kernel<false, 4, 2>)
            : (pair ? matvec_mma_pass_kernel<true, 2, 1> : matvec_mma_pass_kernel<false, 4, 1>);
    k_launch(kernel, dim3((unsigned)blocks), dim3(MMA_WARPS * 32), s, L, x, cols, n, prefetch);
}
