/* matvec_q4.cu: int4 matrix-vector products on the tensor cores (matvec_q.h's KQ_INT4, its tiled
 * layout), fp32 inputs and outputs, for the decode step (n = 1) and the verify pass (n = 2 .. 9
 * inputs from one read of the weights); and the layout's packing and dequantization.
 *
 * Why the tensor cores. On the CUDA cores a weight costs a dequantization (a LOP3 and an FADD
 * into fp32) and an FFMA, about 3.6 instructions with the rest, which at 4 bits is as much
 * issue as a multiprocessor has for the bytes its share of the bandwidth brings. Here 8 weights
 * become 4 bf16 pairs with a shift, a LOP3 and a bf16x2 FMA a pair (1.4 instructions a weight),
 * and one mma.sync m16n8k16 takes 256 of them: the weights are exact in bf16 (q - 8 in
 * [-8, 7]), x is split into three bf16 (mma.cuh split3: x = hi + mid + lo exactly), each an
 * input's column of B, and the mma's products are exact in fp32.
 *
 * The work. A block of W warps takes T tiles of 16 rows (T = 1 or 2, by the size of the
 * launch); its warps split the columns: warp w takes the 128-column blocks w, w + W, ... (a round
 * i is blocks iW .. iW + W - 1, the whole block's loads adjacent in the tiled layout), D rounds
 * in flight (D = 4 for T = 1, 3 for T = 2). W depends on cols alone (the largest
 * of 8 .. 4 that divides the blocks a row, 8 when none does; all of them when fewer than 8),
 * never on n or T. The first D rounds' weights and scales are loaded before the wait for the
 * previous kernel (kcommon.cuh), x after it.
 *
 * x. Each warp converts the x of its own blocks into the three parts, in shared memory, in the
 * order B's operands are read (one 8-byte load a lane for a k-step: k 2t, 2t + 1 and 2t + 8,
 * 2t + 9 of its column), P rounds at a time (all of them when n x cols fits the budget; one
 * round for a verify pass over the wide down projection). Input t's parts are B's columns 3t,
 * 3t + 1, 3t + 2 across NB = ceil(3n / 8) mmas a k-step; a part row is padded by 8 words so that
 * a half warp's loads hit 32 banks.
 *
 * Reproducibility: the exact order. For a row r and an input t, part p (hi, mid, lo) of x:
 *   warp w's sum: acc = 0; for its blocks in order, for each group of the block (32, 64 or 128
 *     columns: 2, 4 or 8 k-steps of 16) in order: c = the mma chain over the group's k-steps
 *     (the first from zero), acc = fma(c, scale, acc);
 *   then P_p = ((acc_0 + acc_1) + acc_2) + ... over the W warps, and y = P_hi + (P_mid + P_lo).
 * The mma computes each output column from its column of B alone, so none of this depends on n,
 * T, P, which column of which mma holds the input, or the other matrices of the launch: a row of
 * a verify pass is its decode step's bits, and speculation stays lossless. */
#include "kcommon.cuh"
#include "matvec_q4.h"
#include "mma.cuh"

#define Q4_SMEM     (96 * 1024) /* shared memory a block may take: x's parts, then partial tiles */
#define Q4_BLOCK_U4 64          /* uint4 a (tile, column block): 16 rows x 128 columns at 4 bits */

struct q4_seg {
    const uint4 *wq;
    const unsigned *sc;
    float *y;
    int rows, block0;
};
struct q4_segs {
    q4_seg seg[K_MATVEC_Q_SEGS];
    int n;
};

/* (v & 0x000F000F) | magic in one LOP3 (the magic in a register: LOP3 takes one immediate). */
__device__ __forceinline__ unsigned q4_or(unsigned v, unsigned magic) {
    unsigned d;
    asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(v), "n"(0x000F000F), "r"(magic));
    return d;
}

__device__ __forceinline__ unsigned bf16x2_fma(unsigned a, unsigned b, unsigned c) {
    unsigned d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

/* The constants of q4_word, kept in registers (an opaque move, not an immediate). */
struct q4_consts {
    unsigned magic, one, bias;
};
__device__ __forceinline__ q4_consts q4_consts_make() {
    q4_consts k;
    asm volatile("mov.b32 %0, %1;" : "=r"(k.magic) : "r"(0x43004300u)); /* bf16 128, twice */
    asm volatile("mov.b32 %0, %1;" : "=r"(k.one) : "r"(0x3F803F80u));   /* 1 */
    asm volatile("mov.b32 %0, %1;" : "=r"(k.bias) : "r"(0xC308C308u));  /* -136 */
    return k;
}

/* The 8 weights of word v as bf16 pairs, exactly: a nibble u in the low bits of a bf16 128 (whose
 * mantissa's last bit is worth 1) is 128 + u, and 128 + u - 136 = u - 8 = q. p[0] holds nibbles
 * 0 (low half) and 4, p[1] 1 and 5, p[2] 2 and 6, p[3] 3 and 7: by the layout, the A operands
 * (k 2t, 2t + 1) and (k 2t + 8, 2t + 9) of the word's first k-step, then of its second. */
__device__ __forceinline__ void q4_word(unsigned v, const q4_consts &k, unsigned p[4]) {
    p[0] = bf16x2_fma(q4_or(v, k.magic), k.one, k.bias);
    p[1] = bf16x2_fma(q4_or(v >> 4, k.magic), k.one, k.bias);
    p[2] = bf16x2_fma(q4_or(v >> 8, k.magic), k.one, k.bias);
    p[3] = bf16x2_fma(q4_or(v >> 12, k.magic), k.one, k.bias);
}

__device__ __forceinline__ unsigned q4_word_of(const uint4 &c, int j) {
    return j == 0 ? c.x : j == 1 ? c.y : j == 2 ? c.z : c.w;
}

/* Rounds a warp keeps in flight for T tiles a block. */
__host__ __device__ constexpr int q4_depth(int T) {
    return T == 2 ? 3 : 4;
}

/* y[t][r] for n inputs (3n <= 8 NB), T tiles a block, groups of 2^GS columns. P: rounds of x a
 * staged tile; region: shared words a warp. */
template <int T, int NB, int GS>
__global__ void __launch_bounds__(256)
    matvec_q4_kernel(const __grid_constant__ q4_segs L, const float *x, int cols, int n, int P,
                     int region) {
    constexpr int D = q4_depth(T);
    constexpr int G = 128 >> GS, SPG = 8 / G; /* groups a column block, k-steps a group */
    extern __shared__ unsigned q4_smem[];
    int si = 0;
#pragma unroll
    for (int i = 1; i < K_MATVEC_Q_SEGS; i++)
        if (i < L.n && (int)blockIdx.x >= L.seg[i].block0) si = i;
    const uint4 *const wq = L.seg[si].wq;
    const unsigned *const sc = L.seg[si].sc;
    float *const y = L.seg[si].y;
    const int rows = L.seg[si].rows, tile0 = ((int)blockIdx.x - L.seg[si].block0) * T;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, W = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int tiles = (rows + 15) >> 4, nkb = cols >> 7, ng = cols >> GS;
    const int nr = (nkb + W - 1) / W; /* rounds */
    const int rsw = P * 64 + 8;       /* words a part row of staged x */
    unsigned *const xw = q4_smem + warp * region;

    const uint4 *wp[T];
    const unsigned *sp[T];
#pragma unroll
    for (int tt = 0; tt < T; tt++) {
        const int tile = min(tile0 + tt, tiles - 1); /* a dead tile reads the last one */
        wp[tt] = wq + (size_t)tile * nkb * Q4_BLOCK_U4 + lane;
        sp[tt] = sc + ((size_t)tile * 8 + g) * ng;
    }
    uint4 wr[D][T][2];
    unsigned sr[D][T][G];
    auto load = [&](int i, uint4(&w)[T][2], unsigned(&s)[T][G]) {
        const int kb = i * W + warp;
        if (i >= nr || kb >= nkb) return;
#pragma unroll
        for (int tt = 0; tt < T; tt++) {
            w[tt][0] = __ldcs(wp[tt] + kb * Q4_BLOCK_U4);
            w[tt][1] = __ldcs(wp[tt] + kb * Q4_BLOCK_U4 + 32);
#pragma unroll
            for (int gi = 0; gi < G; gi++)
                s[tt][gi] = __ldg(sp[tt] + kb * G + gi);
        }
    };
#pragma unroll
    for (int u = 0; u < D; u++)
        load(u, wr[u], sr[u]);
    k_launch_next();
    k_wait_only();

    const q4_consts kc = q4_consts_make();
    float acc[T][NB][4];
#pragma unroll
    for (int tt = 0; tt < T; tt++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[tt][nb][e] = 0.0f;
    /* B's column 8 nb + g of this lane: a part of an input, or zeros past the last input */
    const unsigned *xrow[NB];
    bool live[NB];
#pragma unroll
    for (int nb = 0; nb < NB; nb++) {
        const int c = 8 * nb + g;
        live[nb] = c < 3 * n;
        xrow[nb] = xw + (live[nb] ? c : 0) * rsw + 2 * t;
    }

    /* The parts of x for this warp's blocks of rounds i0 .. i0 + P - 1: a word holds columns
     * c, c + 1 (c even) of a block at 8 (c / 16) + 2 ((c % 8) / 2) + (c / 8) % 2. */
    auto stage = [&](int i0) {
        __syncwarp(); /* the warp's reads of the last tile are done */
        for (int e = lane; e < n * P * 64; e += 32) {
            const int inp = e / (P * 64), rem = e - inp * P * 64, r = rem >> 6, c = 2 * (rem & 63);
            const int kb = (i0 + r) * W + warp;
            if (i0 + r >= nr || kb >= nkb) continue;
            const float2 v =
                __ldca(reinterpret_cast<const float2 *>(x + (size_t)inp * cols + kb * 128 + c));
            unsigned h0, m0, l0, h1, m1, l1;
            split3(v.x, h0, m0, l0);
            split3(v.y, h1, m1, l1);
            unsigned *o =
                xw + 3 * inp * rsw + r * 64 + (c >> 4) * 8 + ((c & 7) >> 1) * 2 + ((c >> 3) & 1);
            o[0] = bf16_pair(h0, h1);
            o[rsw] = bf16_pair(m0, m1);
            o[2 * rsw] = bf16_pair(l0, l1);
        }
        __syncwarp();
    };

    /* One block of 128 columns of the warp's tiles: xo, the block's words in a part row. */
    auto block = [&](const uint4(&w)[T][2], const unsigned(&s)[T][G], int xo) {
        float cg[T][NB][4];
#pragma unroll
        for (int j = 0; j < 4; j++) { /* word j: k-steps 2j and 2j + 1 */
            unsigned b[NB][2][2];
#pragma unroll
            for (int nb = 0; nb < NB; nb++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const uint2 v =
                        *reinterpret_cast<const uint2 *>(xrow[nb] + xo + (2 * j + e) * 8);
                    b[nb][e][0] = live[nb] ? v.x : 0u;
                    b[nb][e][1] = live[nb] ? v.y : 0u;
                }
#pragma unroll
            for (int tt = 0; tt < T; tt++) {
                unsigned pa[4], pb[4]; /* rows g and g + 8 */
                q4_word(q4_word_of(w[tt][0], j), kc, pa);
                q4_word(q4_word_of(w[tt][1], j), kc, pb);
#pragma unroll
                for (int nb = 0; nb < NB; nb++) {
                    if ((2 * j) % SPG == 0)
                        mma_bf16_z(cg[tt][nb], pa[0], pb[0], pa[1], pb[1], b[nb][0][0],
                                   b[nb][0][1]);
                    else
                        mma_bf16(cg[tt][nb], pa[0], pb[0], pa[1], pb[1], b[nb][0][0], b[nb][0][1]);
                    mma_bf16(cg[tt][nb], pa[2], pb[2], pa[3], pb[3], b[nb][1][0], b[nb][1][1]);
                    if ((2 * j + 2) % SPG == 0) { /* the group's end: scale and add */
                        const unsigned s2 = s[tt][(2 * j + 2) / SPG - 1];
                        const float s_g = __uint_as_float(s2 << 16),
                                    s_g8 = __uint_as_float(s2 & 0xffff0000u);
                        acc[tt][nb][0] = __fmaf_rn(cg[tt][nb][0], s_g, acc[tt][nb][0]);
                        acc[tt][nb][1] = __fmaf_rn(cg[tt][nb][1], s_g, acc[tt][nb][1]);
                        acc[tt][nb][2] = __fmaf_rn(cg[tt][nb][2], s_g8, acc[tt][nb][2]);
                        acc[tt][nb][3] = __fmaf_rn(cg[tt][nb][3], s_g8, acc[tt][nb][3]);
                    }
                }
            }
        }
    };

    for (int i0 = 0; i0 < nr; i0 += D) {
#pragma unroll
        for (int u = 0; u < D; u++) {
            const int i = i0 + u;
            if (i < nr) {
                if (i % P == 0) stage(i);
                if (i * W + warp < nkb) block(wr[u], sr[u], (i % P) * 64);
            }
            load(i + D, wr[u], sr[u]);
        }
    }

    /* The warp's partial tiles into its own region ([T][16 rows][8 NB columns]), then a thread
     * an output adds the warps' partials in order and the parts, hi + (mid + lo). */
    __syncwarp();
    float *part = reinterpret_cast<float *>(xw);
#pragma unroll
    for (int tt = 0; tt < T; tt++)
#pragma unroll
        for (int nb = 0; nb < NB; nb++) {
            float *o = part + (tt * 16 + g) * 8 * NB + 8 * nb + 2 * t;
            o[0] = acc[tt][nb][0];
            o[1] = acc[tt][nb][1];
            o[8 * 8 * NB] = acc[tt][nb][2];
            o[8 * 8 * NB + 1] = acc[tt][nb][3];
        }
    __syncthreads();
    const float *all = reinterpret_cast<const float *>(q4_smem);
    for (int o = threadIdx.x; o < T * 16 * n; o += blockDim.x) {
        const int r = o & 15, inp = (o >> 4) % n, tt = (o >> 4) / n;
        const int row = (tile0 + tt) * 16 + r;
        if (tile0 + tt >= tiles || row >= rows) continue;
        float v[3];
#pragma unroll
        for (int p = 0; p < 3; p++) {
            const float *q = all + (tt * 16 + r) * 8 * NB + 3 * inp + p;
            float sum = q[0];
            for (int w = 1; w < W; w++)
                sum = __fadd_rn(sum, q[(size_t)w * region]);
            v[p] = sum;
        }
        y[(size_t)inp * rows + row] = __fadd_rn(v[0], __fadd_rn(v[1], v[2]));
    }
}

typedef void (*q4_fn)(q4_segs, const float *, int, int, int, int);

template <int T, int GS> static q4_fn q4_kernel_nb(int nb) {
    static const q4_fn forms[] = {matvec_q4_kernel<T, 1, GS>, matvec_q4_kernel<T, 2, GS>,
                                  matvec_q4_kernel<T, 3, GS>, matvec_q4_kernel<T, 4, GS>};
    return forms[nb - 1];
}
template <int T> static q4_fn q4_kernel_gs(int nb, int gs) {
    return gs == 5   ? q4_kernel_nb<T, 5>(nb)
           : gs == 6 ? q4_kernel_nb<T, 6>(nb)
                     : q4_kernel_nb<T, 7>(nb);
}
static q4_fn q4_kernel(int T, int nb, int gs) {
    return T == 1 ? q4_kernel_gs<1>(nb, gs) : q4_kernel_gs<2>(nb, gs);
}

/* Every form may take Q4_SMEM bytes of dynamic shared memory (above the default 48 KB): set
 * once, for all of them, before the first launch. */
static void q4_allow_smem(void) {
    static int done = 0;
    if (done) return;
    const int Ts[] = {1, 2};
    for (int a = 0; a < 2; a++)
        for (int nb = 1; nb <= 4; nb++)
            for (int gs = 5; gs <= 7; gs++)
                if (cudaFuncSetAttribute((const void *)q4_kernel(Ts[a], nb, gs),
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         Q4_SMEM) != cudaSuccess) {
                    fprintf(stderr, "matvec_q4: cannot allow %d bytes of shared memory\n", Q4_SMEM);
                    exit(1);
                }
    done = 1;
}

/* Warps a block for a row of cols columns: its 128-column blocks dealt evenly where 8 .. 4 warps
 * can (E4B: 2560 columns, 20 blocks -> 5 warps; 10240 -> 8; 2048 -> 8). A function of cols
 * alone: the split is part of a row's summation order. */
static int q4_force_t = 0, q4_force_w = 0;

static int q4_warps(int cols) {
    const int nkb = cols / 128;
    if (q4_force_w) return q4_force_w < nkb ? q4_force_w : nkb;
    if (nkb <= 8) return nkb;
    for (int w = 8; w >= 4; w--)
        if (nkb % w == 0) return w;
    return 8;
}

int q4_matvec(cudaStream_t s, const k_qseg *segs, int n_segs, const float *x, int t0, int n) {
    const k_qmat *w0 = &segs[0].w;
    const int cols = w0->cols, W = q4_warps(cols), nkb = cols / 128, nr = (nkb + W - 1) / W;
    const int gs = w0->group == 32 ? 5 : w0->group == 64 ? 6 : 7;
    const int NB = (3 * n + 7) / 8;
    long tiles = 0;
    for (int i = 0; i < n_segs; i++)
        tiles += (segs[i].w.rows + 15) / 16;
    /* T tiles a block: two where that still gives every multiprocessor two blocks or more */
    const int T = q4_force_t ? q4_force_t : tiles >= 4L * k_sm_count() ? 2 : 1;
    const int budget = Q4_SMEM / 4 / W; /* words a warp */
    int P = (budget / (3 * n) - 8) / 64;
    if (P > nr) P = nr;
    if (P < 1) P = 1;
    int region = 3 * n * (P * 64 + 8);
    if (region < T * 16 * 8 * NB) region = T * 16 * 8 * NB;
    q4_segs L = {};
    int blocks = 0;
    for (int i = 0; i < n_segs; i++) {
        const k_qmat *m = &segs[i].w;
        L.seg[i] = {reinterpret_cast<const uint4 *>(m->q),
                    reinterpret_cast<const unsigned *>(m->scales), segs[i].y + (size_t)t0 * m->rows,
                    m->rows, blocks};
        blocks += ((m->rows + 15) / 16 + T - 1) / T;
    }
    L.n = n_segs;
    q4_allow_smem();
    k_launch_ex(q4_kernel(T, NB, gs), dim3((unsigned)blocks), dim3(32 * W), 0,
                (size_t)W * region * 4, s, L, x + (size_t)t0 * cols, cols, n, P, region);
    K_CHECK_LAUNCH();
    return 0;
}

int q4_set_form(int tiles_per_block, int warps_per_block) {
    if (tiles_per_block < 0 || tiles_per_block > 2 || warps_per_block < 0 || warps_per_block > 8)
        return -1;
    q4_force_t = tiles_per_block;
    q4_force_w = warps_per_block;
    return 0;
}

/* ---- the layout: sizes, packing, dequantization ---------------------------------------- */

size_t q4_values_bytes(int rows, int cols) {
    return (size_t)((rows + 15) / 16) * 16 * (cols / 2);
}

size_t q4_scales_bytes(int rows, int cols, int group) {
    return (size_t)((rows + 15) / 16) * 16 * (cols / group) * 2;
}

/* Where word wi of the tiled values lives: its tile, column block, half, lane and word. */
struct q4_at {
    int row, kb, t, j;
};
__device__ __forceinline__ q4_at q4_locate(size_t wi, int nkb) {
    const size_t blk = wi >> 8;
    const int in = (int)(wi & 255), h = in >> 7, lane = (in >> 2) & 31;
    q4_at a;
    a.row = (int)(blk / nkb) * 16 + 8 * h + (lane >> 2);
    a.kb = (int)(blk % nkb);
    a.t = lane & 3;
    a.j = in & 3;
    return a;
}

/* One word of tiled values from the host layout's row: bytes 8s + t and 8s + t + 4 of the block
 * hold columns (2t, 2t + 1) and (2t + 8, 2t + 9) of its k-step s. Padding rows: q = 0. */
__global__ void q4_pack_kernel(unsigned *dst, const uint8_t *q, size_t words, int rows, int cols) {
    k_wait_prior();
    const int nkb = cols >> 7;
    for (size_t wi = (size_t)blockIdx.x * blockDim.x + threadIdx.x; wi < words;
         wi += (size_t)gridDim.x * blockDim.x) {
        const q4_at a = q4_locate(wi, nkb);
        unsigned v = 0x88888888u;
        if (a.row < rows) {
            const uint8_t *b = q + (size_t)a.row * (cols / 2) + a.kb * 64 + 16 * a.j + a.t;
            const unsigned b0 = b[0], b1 = b[4], b2 = b[8], b3 = b[12];
            v = (b0 & 15u) | (b1 & 15u) << 4 | (b2 & 15u) << 8 | (b3 & 15u) << 12 |
                (b0 >> 4) << 16 | (b1 >> 4) << 20 | (b2 >> 4) << 24 | (b3 >> 4) << 28;
        }
        dst[wi] = v;
    }
}

/* The scales as (row 16T + g, row 16T + 8 + g) pairs; padding rows: 0. */
__global__ void q4_pack_scales_kernel(unsigned *dst, const uint16_t *sc, size_t words, int rows,
                                      int ng) {
    k_wait_prior();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < words;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t tile = i / (8 * (size_t)ng);
        const int rem = (int)(i % (8 * (size_t)ng)), g = rem / ng, gr = rem % ng;
        const int r0 = (int)tile * 16 + g, r1 = r0 + 8;
        const unsigned lo = r0 < rows ? sc[(size_t)r0 * ng + gr] : 0u;
        const unsigned hi = r1 < rows ? sc[(size_t)r1 * ng + gr] : 0u;
        dst[i] = lo | hi << 16;
    }
}

static unsigned q4_grid(size_t items) {
    const size_t most =
        8u * (size_t)k_sm_count(); /* a grid-stride loop: 8 blocks a multiprocessor */
    const size_t need = (items + 255) / 256;
    return (unsigned)(need < most ? (need ? need : 1) : most);
}

void q4_pack(cudaStream_t s, void *dst, const void *q, const uint16_t *scales, int rows, int cols,
             int group) {
    const size_t vb = q4_values_bytes(rows, cols), words = vb / 4;
    k_launch(q4_pack_kernel, dim3(q4_grid(words)), dim3(256), s, (unsigned *)dst,
             (const uint8_t *)q, words, rows, cols);
    K_CHECK_LAUNCH();
    const size_t sw = q4_scales_bytes(rows, cols, group) / 4;
    k_launch(q4_pack_scales_kernel, dim3(q4_grid(sw)), dim3(256), s, (unsigned *)((char *)dst + vb),
             scales, sw, rows, cols / group);
    K_CHECK_LAUNCH();
}

/* Word wi's 8 weights times their scales (q * s, exact in fp32) into the row-major out. Written
 * only after the wait: the previous product may still read the buffer. */
__global__ void q4_dequant_kernel(float *out, const unsigned *q, const unsigned *sc, size_t words,
                                  int rows, int cols, int gshift) {
    k_wait_prior();
    const int nkb = cols >> 7, ng = cols >> gshift;
    for (size_t wi = (size_t)blockIdx.x * blockDim.x + threadIdx.x; wi < words;
         wi += (size_t)gridDim.x * blockDim.x) {
        const q4_at a = q4_locate(wi, nkb);
        if (a.row >= rows) continue;
        const unsigned v = __ldg(q + wi), g8 = (a.row & 15) >> 3;
        const unsigned *sg = sc + ((size_t)(a.row >> 4) * 8 + (a.row & 7)) * ng;
        float *o = out + (size_t)a.row * cols + a.kb * 128 + 32 * a.j + 2 * a.t;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int c = 16 * ((i >> 1) & 1) + (i >> 2) + 8 * (i & 1); /* from 32j + 2t */
            const unsigned s2 = __ldg(sg + ((a.kb * 128 + 32 * a.j + 2 * a.t + c) >> gshift));
            const float scale = __uint_as_float(g8 ? s2 & 0xffff0000u : s2 << 16);
            o[c] = (float)((int)((v >> (4 * i)) & 15u) - 8) * scale;
        }
    }
}

void q4_dequant(cudaStream_t s, const k_qmat *w, float *out) {
    const size_t words = q4_values_bytes(w->rows, w->cols) / 4;
    const int gshift = w->group == 32 ? 5 : w->group == 64 ? 6 : 7;
    k_launch(q4_dequant_kernel, dim3(q4_grid(words)), dim3(256), s, out, (const unsigned *)w->q,
             (const unsigned *)w->scales, words, w->rows, w->cols, gshift);
    K_CHECK_LAUNCH();
}
