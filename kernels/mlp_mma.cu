/* mlp_mma.cu: mlp.cu's whole MLP - down(gelu_tanh(gate(x)) * up(x)) in one kernel, a block a
 * multiprocessor owning a slice of the intermediate dimension, the weights streamed by a
 * producer warp through a ring of one-row stages - with its products on the tensor cores
 * (K_MLP_MMA; sm_90 and later, bf16 weights, passes of 1 .. 8 inputs).
 *
 * Why. On the CUDA cores every weight costs an fma per input, so a pass over 5 - 8 inputs
 * (a speculative verify) is bound by its instructions: 73.8 us a layer of E4B over 8 inputs
 * against 37 over one (an H200). An mma.sync takes 16 x 16 weights at a
 * time for all 8 inputs at once, so every pass of up to 8 inputs costs about what one does.
 *
 * The layout (lane (g, t); mma.cuh has the fragments):
 *   - x is fp32 and the mma takes bf16, so each input is split exactly into three bf16 parts,
 *     hi + mid + lo (mma.cuh split3), kept as rows of shared memory for the whole kernel:
 *     3 nl rows of H. The consumers' first act, once the kernel before this one is done.
 *   - gate and up, tiles of 8 intermediate indices: D[16][8] = A B with A the x parts and B
 *     the tile's 8 rows of weights (column n = index n), m16n8k16 over the warp's 256 columns
 *     of H (up to 4 inputs, one A tile: the hi, lo and mid parts of inputs 0 - 3 in rows 0 - 3,
 *     4 - 7 and 8 - 11; from 5, two: the hi and mid parts of inputs 0 - 7, then their lo
 *     parts). Lane (g, t) takes its B fragments - row g's words at k 2t and 2t + 8 of each k
 *     step, 32 - into registers and frees row g before its mmas: a stage is free once each of
 *     the 4 lanes of each warp that read it has said so (racecheck does not take a __syncwarp
 *     as ordering other lanes' reads before one lane's arrival: dev/cuda/ring_race.cu). Lane (g, t)
 * then holds input g's sums for indices 2t and 2t + 1 in its three parts and adds them, hi + (mid +
 * lo).
 *   - down is stored transposed (row k = column k of down, as for mlp.cu): out[c] over the
 *     batch's 8 indices is D[16 columns][8 inputs] += A B with A the 8 rows' 16 columns (through
 *     ldmatrix.trans) and B the batch's h of each input, m16n8k8, once for each of h's three
 *     parts into the same accumulators. A warp keeps the sums of its 256 columns (64 floats a
 *     lane) for the whole kernel.
 *   - the warps' sums of a batch meet in shared memory; a reducer warp makes the batch's h and
 *     u (in warp order) while the consumers go on, and they meet again at the next batch's
 *     barrier - mlp.cu's protocol, its barriers and its double buffers.
 *   - stages are 2H + 16 bytes apart, so that 8 consecutive stages (the 8 rows of an ldmatrix)
 *     lie in 8 different bank groups; a tile that wraps the ring keeps that only where the
 *     ring's stages are a multiple of 8. mlpm_stages still takes any count from 16 to 24
 *     (E4B's passes of 6 - 8 inputs get 22, 19 and 16): rounded down to 16, the passes of 6
 *     and 7 are slower (4.11 / 4.54 ms against 3.97 / 4.46 on an H200), so the
 *     stages pay more than the conflicts cost. Missing rows (past a block's last index, an
 *     input past the pass's last) read 16 bytes of zeros.
 *
 * Reproducibility. An input's results depend on the shapes and the grid only: an mma's output
 * element is its row of A times its column of B, every chain of mmas runs over the columns (or
 * the batches) in order, the warps add in order, and the blocks' partials are mlp.cu's, summed
 * by its mlp_reduce_kernel. So a verify pass reproduces the decode steps with the switch on,
 * bit for bit; the bits are not the CUDA cores' (a backend takes one form for every MLP). */
#include "bulk.cuh"
#include "kcommon.cuh"
#include "mlp.cuh"
#include "mma.cuh"

/* H / 8 consumer threads, a producer and a reducer warp: at most 384 threads, as the tile's B
 * fragments in registers make 165 registers a thread (H up to 2560: E2B's 1536, E4B's 2560) */
#define MLPM_THREADS 384
/* Intermediate indices a batch: a barrier and a round of the reducer each. 8 and 16 measured the
 * same (E4B decode 3.301 / 3.303 ms, verify over 5 rows 3.84 / 3.80 on an H200). */
#define MLPM_B 16
/* The consumers hold 8 rows of the ring at once (a tile of gate, up or down rows); the rest is
 * in flight or landed ahead: up to MLPM_RING_MAX stages, never fewer than 16. Up to 32 made the
 * E4B decode step slower (3.44 against 3.40 ms), and 16 or 20 rows in flight instead of mlp.cu's
 * 12 change nothing. */
#define MLPM_RING_MAX 24

/* Row r of the tile at stage st (parity ph) of S: wait until it has landed. Each lane waits for
 * the one row it reads (its B fragments' row, or the row whose address it gives ldmatrix) and
 * frees that row alone. The lanes leave their spin loops (bulk.cuh's mbar_wait: a branch inside
 * the asm, which the compiler does not see) at different times, and the frees diverge the warp
 * again; ldmatrix and mma.sync are .aligned, undefined on a diverged warp, so a __syncwarp comes
 * first. A lane that skips a row (past the tile's nk) never waits with a stale parity: a tile
 * holds at most 8 rows of at least 16 stages, so no stage twice, and the __syncwarp after a
 * tile's waits keeps every lane in the warp's tile. */
__device__ __forceinline__ void mlpm_wait_row(uint64_t *full, unsigned st, unsigned ph, int S,
                                              int r) {
    st += r;
    if (st >= (unsigned)S) st -= S, ph ^= 1;
    mbar_wait(&full[st], ph);
}

/* Free row `mine` of the tile's nk (this lane's, after its reads; none where mine >= nk) and
 * step the cursor past them. A row's stage needs 4 arrivals a consumer warp: the 4 lanes that
 * read it (a quad for gate and up, lanes r, r + 8, r + 16, r + 24 for down's ldmatrix). */
__device__ __forceinline__ void mlpm_free_rows(uint64_t *empty, unsigned &st, unsigned &ph, int S,
                                               int nk, int mine) {
    for (int r = 0; r < nk; r++) {
        if (r == mine) mbar_arrive(&empty[st]);
        if (++st == (unsigned)S) st = 0, ph ^= 1;
    }
}

/* Inputs t0 .. t0 + nl - 1 (those below n) of x[n][H]; B = MLPM_B intermediate indices a batch
 * (one barrier a batch, tiles of 8 rows inside it; the bits do not depend on B). Dynamic shared
 * memory (mlpm_smem): the ring (S stages of RS = 2H + 16 bytes), the x parts (3 nl rows of RS:
 * part p of input i at row p nl + i), full[S] and empty[S], the block's h (nl slots of cap
 * floats), then the warps' sums of two batches, red[2][CW][2][8][B]. */
__global__ void __launch_bounds__(MLPM_THREADS, 1)
    mlp_mma_kernel(const uint4 *__restrict__ gate, const uint4 *__restrict__ up,
                   const uint4 *__restrict__ downt, const float *x, float *h_out, float *u_out,
                   float *partial, int H, int I, int n, int t0, int p0, int nl, int S, int depth) {
    constexpr int B = MLPM_B;
    extern __shared__ __align__(128) unsigned char smem[];
    __shared__ __align__(16) uint4 zero16;
    const int RS = 2 * H + 16, CT = H / 8, CW = CT / 32, G = gridDim.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int k0 = (int)((long long)I * blockIdx.x / G),
              k1 = (int)((long long)I * (blockIdx.x + 1) / G);
    const int nb = (k1 - k0 + B - 1) / B, cap = nb * B;
    unsigned char *ring = smem, *xp = smem + (size_t)S * RS;
    uint64_t *full = reinterpret_cast<uint64_t *>(xp + (size_t)3 * nl * RS), *empty = full + S;
    float *hd = reinterpret_cast<float *>(empty + S), *red = hd + (size_t)nl * cap;
    const int live = min(nl, n - t0);
    ring_init(full, empty, S, 4 * CW);
    if (threadIdx.x == 0) zero16 = make_uint4(0, 0, 0, 0);
    __syncthreads();
    k_launch_next();
    /* red[jb][w][m][i][r]: warp w's sum of matrix m (gate, up), input i, index r of batch jb */
    auto red_at = [&](int jb, int w, int m, int i, int r) -> float & {
        return red[((((size_t)jb * CW + w) * 2 + m) * 8 + i) * B + r];
    };
    if (warp == CW) { /* the producer: gate and up of batch j, then down of batch j - 1 */
        if (lane == 0) {
            ring_producer p;
            for (int j = 0; j <= nb; j++) {
                const int kb = k0 + j * B;
                for (int m = 0; m < 2 && j < nb; m++)
                    for (int i = 0; i < min(B, k1 - kb); i++)
                        p.put(ring, full, empty, S, depth,
                              (m == 0 ? gate : up) + (size_t)(kb + i) * (H / 8), 2 * H, RS);
                for (int i = 0; j > 0 && i < min(B, k1 - (kb - B)); i++)
                    p.put(ring, full, empty, S, depth, downt + (size_t)(kb - B + i) * (H / 8),
                          2 * H, RS);
            }
        }
        return;
    }
    k_wait_only();
    if (warp == CW + 1) { /* the reducer: batch j's h once its sums are in, B / 4 pairs a lane */
        for (int j = 0; j <= nb; j++) {
            const int kb = k0 + j * B, nk = j < nb ? min(B, k1 - kb) : 0;
            bar_consumers(CT + 32);
            for (int q = lane; q < 8 * B; q += 32) {
                const int i = q / B, r = q % B;
                if (i < live && r < nk) {
                    float gs = 0.0f, us = 0.0f;
                    for (int w = 0; w < CW; w++)
                        gs += red_at(j & 1, w, 0, i, r), us += red_at(j & 1, w, 1, i, r);
                    const float h = gelu_tanh(gs) * us;
                    hd[i * cap + (kb - k0) + r] = h;
                    h_out[(size_t)(t0 + i) * I + kb + r] = h;
                    u_out[(size_t)(t0 + i) * I + kb + r] = us;
                }
            }
            __syncwarp();
        }
        return;
    }
    /* The x parts: thread c's 8 columns of each live input (only its warp reads them). */
    const int c = threadIdx.x;
    for (int i = 0; i < live; i++) {
        const float4 *src = reinterpret_cast<const float4 *>(x + (size_t)(t0 + i) * H) + 2 * c;
        const float4 a = k_ld_act(src), b = k_ld_act(src + 1);
        const float v[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        unsigned hi[8], mid[8], lo[8];
#pragma unroll
        for (int e = 0; e < 8; e++)
            split3(v[e], hi[e], mid[e], lo[e]);
        const unsigned *parts[3] = {hi, mid, lo};
#pragma unroll
        for (int p = 0; p < 3; p++)
            *reinterpret_cast<uint4 *>(xp + (size_t)(p * nl + i) * RS + 16 * c) = make_uint4(
                bf16_pair(parts[p][0], parts[p][1]), bf16_pair(parts[p][2], parts[p][3]),
                bf16_pair(parts[p][4], parts[p][5]), bf16_pair(parts[p][6], parts[p][7]));
    }
    __syncwarp();
    const unsigned zero = smem_u32(&zero16), col0 = 512u * warp; /* the warp's bytes of a row */
    /* This lane's rows of the x-part tiles (ldmatrix.x4: lane l gives row l % 8 + 8 (l / 8 % 2)
     * at k 8 (l / 16)). Up to 4 inputs (one): a tile's rows 0 - 3 are inputs 0 - 3's hi parts,
     * 4 - 7 their lo parts, 8 - 11 their mid parts, one mma a k step. From 5 (two): tile 1's
     * row m is input m % 8's hi (m < 8) or mid part, tile 2's its lo part (m < 8). An input's
     * parts meet in the same mma rows either way but its lo part, and an mma's element depends
     * on its own row and column only: the bits do not depend on the layout. A missing row reads
     * zeros and stays there (step 0). */
    const bool one = nl <= 4;
    const int in = lane & 7, hi_half = (lane >> 3) & 1, kofs = 16 * (lane >> 4);
    const int p1 = one ? (hi_half ? (in < 4 ? 1 : -1) : (in < 4 ? 0 : 2)) : hi_half,
              i1 = one ? (in & 3) : in;
    const bool a1_live = p1 >= 0 && i1 < live, a2_live = !one && in < live && !hi_half;
    const unsigned a1 = a1_live ? smem_u32(xp + (size_t)(p1 * nl + i1) * RS) + col0 + kofs : zero;
    const unsigned a2 = a2_live ? smem_u32(xp + (size_t)(2 * nl + in) * RS) + col0 + kofs : zero;
    const unsigned a1s = a1_live ? 32u : 0u, a2s = a2_live ? 32u : 0u; /* bytes a k step */
    unsigned st = 0, ph = 0;
    /* Row r (< nk) of the tile at the cursor: its stage's first byte of the warp's columns */
    auto row_at = [&](int r) -> unsigned char * {
        unsigned sr = st + r;
        if (sr >= (unsigned)S) sr -= S;
        return ring + (size_t)sr * RS + col0;
    };
    /* A tile of nk gate or up rows (rows 8 h .. of the batch): input g's sums of its indices 2t
     * and 2t + 1 over the warp's columns, into red. B's fragments (weight row g, k 2t and
     * 2t + 1, then 2t + 8 and 2t + 9) are plain 32-bit loads: 4g + t spans the banks (RS / 4 is
     * a multiple of 32 plus 4). */
    auto gate_or_up = [&](int nk, int jb, int m, int h8) {
        const bool wl = g < nk;
        if (wl) mlpm_wait_row(full, st, ph, S, g);
        unsigned b[32]; /* k steps s: b[2 s], b[2 s + 1] */
        const unsigned *w = reinterpret_cast<const unsigned *>(row_at(wl ? g : 0)) + t;
#pragma unroll
        for (int s = 0; s < 16; s++) {
            b[2 * s] = wl ? w[8 * s] : 0u;
            b[2 * s + 1] = wl ? w[8 * s + 4] : 0u;
        }
        mlpm_free_rows(empty, st, ph, S, nk, g);
        __syncwarp(); /* the arrivals diverged the warp: converged for ldmatrix and mma */
        float d1[4] = {0.0f, 0.0f, 0.0f, 0.0f}, d2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
        for (int s = 0; s < 16; s++) { /* 16 columns a k step */
            unsigned x1[4];
            ldsm_x4(x1, a1 + s * a1s);
            mma_bf16(d1, x1[0], x1[1], x1[2], x1[3], b[2 * s], b[2 * s + 1]);
            if (!one) {
                unsigned x2[4];
                ldsm_x4(x2, a2 + s * a2s);
                mma_bf16(d2, x2[0], x2[1], x2[2], x2[3], b[2 * s], b[2 * s + 1]);
            }
        }
        /* d1: (hi of input g, index 2t), (hi, 2t + 1), (mid, 2t), (mid, 2t + 1); the lo parts in
         * d2 (two), or (one) in d1 of lane (g + 4, t) for g < 4 */
        if (one) {
            d2[0] = __shfl_down_sync(0xffffffffu, d1[0], 16);
            d2[1] = __shfl_down_sync(0xffffffffu, d1[1], 16);
        }
        *reinterpret_cast<float2 *>(&red_at(jb, warp, m, g, 8 * h8 + 2 * t)) =
            make_float2(d1[0] + (d1[2] + d2[0]), d1[1] + (d1[3] + d2[1]));
    };
    float acc[16][4]; /* the warp's 16 tiles of 16 columns: (column g, input 2t), (g, 2t + 1),
                         (g + 8, 2t), (g + 8, 2t + 1) */
#pragma unroll
    for (int mt = 0; mt < 16; mt++)
        acc[mt][0] = acc[mt][1] = acc[mt][2] = acc[mt][3] = 0.0f;
    /* A tile of nk down rows (indices kb ..), their h (input g, indices 2t and 2t + 1) in three
     * parts; the rows through ldmatrix.trans (lane l gives row l % 8 at column 8 (l / 8)) */
    auto down_rows = [&](int nk, int kb) {
        float hv[2];
#pragma unroll
        for (int e = 0; e < 2; e++)
            hv[e] = g < live && 2 * t + e < nk ? hd[g * cap + (kb - k0) + 2 * t + e] : 0.0f;
        unsigned p0h, p0m, p0l, p1h, p1m, p1l;
        split3(hv[0], p0h, p0m, p0l);
        split3(hv[1], p1h, p1m, p1l);
        const unsigned bh = bf16_pair(p0h, p1h), bm = bf16_pair(p0m, p1m), bl = bf16_pair(p0l, p1l);
        const bool rl = (lane & 7) < nk;
        if (rl) mlpm_wait_row(full, st, ph, S, lane & 7);
        __syncwarp();
        const unsigned w = rl ? smem_u32(row_at(lane & 7)) + 16 * (lane >> 3) : zero;
        const unsigned step = rl ? 64u : 0u;
#pragma unroll
        for (int v = 0; v < 8; v++) { /* 32 columns: two tiles */
            unsigned a[4];
            ldsm_x4_trans(a, w + v * step);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float *d = acc[2 * v + h];
                mma_bf16_k8(d, a[2 * h], a[2 * h + 1], bh);
                mma_bf16_k8(d, a[2 * h], a[2 * h + 1], bm);
                mma_bf16_k8(d, a[2 * h], a[2 * h + 1], bl);
            }
        }
        mlpm_free_rows(empty, st, ph, S, nk, lane & 7);
    };
    /* Batch j: its gate and up tiles; the barrier (the warps' sums of j are in, the h of j - 1
     * made); batch j - 1's down tiles. mlp.cu's loop, with the reducer's form of its barriers. */
    for (int j = 0; j <= nb; j++) {
        const int kb = k0 + j * B, nk = j < nb ? min(B, k1 - kb) : 0;
        for (int m = 0; m < 2; m++)
            for (int h8 = 0; h8 < B / 8; h8++)
                if (nk > 8 * h8) gate_or_up(min(8, nk - 8 * h8), j & 1, m, h8);
        __syncwarp(); /* the frees diverged the warp (a down tile's): converged again */
        bar_consumers(CT + 32);
        if (j > 0) {
            const int pk = min(B, k1 - (kb - B));
            for (int h8 = 0; h8 < B / 8; h8++)
                if (pk > 8 * h8) down_rows(min(8, pk - 8 * h8), kb - B + 8 * h8);
        }
    }
    const int cw = 256 * warp;
#pragma unroll
    for (int e = 0; e < 2; e++) {
        const int i = 2 * t + e;
        if (i < live) {
            float *po = partial + ((size_t)(t0 + i - p0) * G + blockIdx.x) * H + cw + g;
#pragma unroll
            for (int mt = 0; mt < 16; mt++) {
                po[16 * mt] = acc[mt][e];
                po[16 * mt + 8] = acc[mt][2 + e];
            }
        }
    }
}

/* ---- launcher ---- */

static size_t mlpm_smem(int H, int I, int G, int nl, int S) {
    const size_t RS = 2 * (size_t)H + 16, cap = ((size_t)(I + G - 1) / G / MLPM_B + 1) * MLPM_B;
    return (size_t)(S + 3 * nl) * RS + 16 * (size_t)S + (size_t)nl * cap * 4 +
           (size_t)2 * (H / 256) * 2 * 8 * MLPM_B * 4;
}

/* The ring's stages for a pass of nl inputs: as many as fit the rest of shared memory
 * (smem_optin), at most MLPM_RING_MAX; 0 when fewer than 16 fit. */
static int mlpm_stages(int H, int I, int G, int nl, int smem_optin) {
    for (int S = MLPM_RING_MAX; S >= 16; S--)
        if (mlpm_smem(H, I, G, nl, S) <= (size_t)smem_optin) return S;
    return 0;
}

/* What a shape allows on the current device (asked once per shape; a process has one or two):
 * the most inputs a pass (0: none - not sm_90, or the shape does not fit), and the ring's
 * stages for each pass. */
typedef struct {
    int H, I, G, max_nl, S[9];
} mlpm_shape;

static const mlpm_shape *mlpm_shape_of(int H, int I, int G) {
    static mlpm_shape seen[4];
    static int n_seen;
    for (int i = 0; i < n_seen; i++)
        if (seen[i].H == H && seen[i].I == I && seen[i].G == G) return &seen[i];
    mlpm_shape *e = &seen[n_seen < 4 ? n_seen++ : 3];
    *e = (mlpm_shape){H, I, G, 0, {0}};
    int dev, major = 0, regs_sm = 0, smem_optin = 0;
    cudaFuncAttributes fa;
    if (cudaGetDevice(&dev) == cudaSuccess) {
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&regs_sm, cudaDevAttrMaxRegistersPerMultiprocessor, dev);
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    }
    if (major >= 9 && H > 0 && H % 256 == 0 && H / 8 + 64 <= MLPM_THREADS && G > 0 && I >= 8 * G &&
        cudaFuncGetAttributes(&fa, mlp_mma_kernel) == cudaSuccess &&
        fa.numRegs * (H / 8 + 64) <= regs_sm) {
        const int room = smem_optin - (int)fa.sharedSizeBytes;
        for (int nl = 1; nl <= 8 && (e->S[nl] = mlpm_stages(H, I, G, nl, room)); nl++)
            e->max_nl = nl;
        /* Dynamic shared memory only grows, so that every shape said yes to fits. */
        static size_t smem_set;
        size_t want = 0;
        for (int nl = 1; nl <= e->max_nl; nl++) {
            const size_t b = mlpm_smem(H, I, G, nl, e->S[nl]);
            want = b > want ? b : want;
        }
        if (want > smem_set) {
            if (cudaFuncSetAttribute(mlp_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)want) == cudaSuccess)
                smem_set = want;
            else
                e->max_nl = 0;
        }
    }
    cudaGetLastError(); /* a refusal above is an answer, not an error for the next launch */
    return e;
}

int mlp_mma_max_inputs(int H, int I, int G) {
    return mlpm_shape_of(H, I, G)->max_nl;
}

void mlp_mma_launch(cudaStream_t s, const void *gate, const void *up, const void *down_t,
                    const float *x, float *h_out, float *u_out, float *partial, int H, int I, int G,
                    int n, int t0, int p0, int nl, int depth) {
    const int S = mlpm_shape_of(H, I, G)->S[nl];
    k_launch_ex(mlp_mma_kernel, dim3(G), dim3(H / 8 + 64), 0, mlpm_smem(H, I, G, nl, S), s,
                (const uint4 *)gate, (const uint4 *)up, (const uint4 *)down_t, x, h_out, u_out,
                partial, H, I, n, t0, p0, nl, S, depth < S - 8 ? depth : S - 8);
    K_CHECK_LAUNCH();
}
