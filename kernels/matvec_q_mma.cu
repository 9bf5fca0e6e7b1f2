/* matvec_q_mma.cu: matrix-vector products with int4 weights (matvec_q.h's layout) on the tensor
 * cores, for the decode step (n = 1) and verify passes (n = 2 .. 9): k_matvec_q_multi's int4
 * launches under k_matvec_q_set_mma (the backend's GEMMA_CUDA_MV_MMA).
 *
 * Why. On the CUDA cores an int4 weight costs about 3.6 instructions (matvec_q.cu: a LOP3 and an
 * FADD to dequantize, an FFMA for each input, and the rest), so a verify pass of n inputs costs
 * about n times the FFMAs of a decode step: 4.2 decode launches for 8 inputs on E4B's gate / up.
 * Here two weights become a bf16 pair in two instructions and one mma.sync m16n8k16 multiplies
 * 256 of them by up to two inputs (8 by three passes over B): 8 inputs cost 1.5 - 2.5 decode
 * launches. At n = 1 the kernel is slower than the CUDA cores on E4B's smaller products (q 5.9
 * against 3.6 us on an H100, gate / up 9.4 against 8.3, the head alike: bench/matvec_q_check),
 * so it is a per-run choice that the tuner weighs against the drafts it accepts.
 *
 * The tiles. A warp owns 16 rows (rows g and g + 8 for lane (g, t), g = lane / 4, t = lane % 4)
 * and walks the columns in steps of 128 (64 bytes of each row), split-K over K warps of a block
 * as matvec_mma.cu does (slice k takes steps k, k + K, ...; K a function of the shape). A step
 * is four sub-steps of 32 columns. A group of scales spans 32, 64 or 128 aligned columns, so a
 * sub-step's 16 x 32 weights share one scale a row: its two mmas sum the integers into a fresh
 * accumulator, which is added to the running one times the row's scale (four FFMAs), as
 * matvec_q.cu multiplies a group's sum by its scale.
 *
 * The loads. The mma wants lane (g, t) to hold word t (8 nibbles) of each sub-step of rows g and
 * g + 8: a warp's load of those words takes 4 bytes of 8 rows a lane group, 8 cache lines for 128
 * bytes, which bounds a launch at an L1 request a clock (the head at 60 % of the copy bandwidth).
 * So each lane copies whole 16-byte chunks instead (cp.async: lane l takes chunk l % 4 of rows l /
 * 4 and l / 4 + 8, 64 bytes of a row for 4 lanes) into a ring of QM_S steps a warp in shared
 * memory, and ldmatrix hands each lane its words: an 8 x 8 matrix of 16-bit values gives lane (g,
 * t) bytes 4t .. 4t + 3 of row g, the word t of the chunk. The chunks of a row are rotated (qm_swz)
 * so that neither the copies nor the ldmatrix rows meet in a bank. The ring keeps QM_S - 1 steps in
 * flight without holding them in registers (a register double buffer took 125 registers a thread
 * and two blocks a multiprocessor; the launches were latency-bound at 15 % occupancy). The block's
 * scales are one run of the matrix's, copied to shared memory while the first steps load.
 *
 * The A operand. A nibble at bits 0 - 3 of a half or-ed into the bf16 0x4300 (128, whose last
 * mantissa bit is worth 1) gives 128 + u exactly; one LOP3 makes two (nibbles j and j + 4 of a
 * word, after a shift by 4j), one bf16x2 FMA (x 1 - 136) leaves q = u - 8 in both, exactly: the
 * pairs (j, j + 4), j = 0 .. 3. The mma's k order is free as long as A and B share it: k = 2t,
 * 2t + 1 of lane t stand for columns 8t + j and 8t + j + 4 (pair j), k = 2t + 8, 2t + 9 for pair
 * j + 1, with j = 0 in the first mma of a sub-step and 2 in the second.
 *
 * The B operand: x is fp32, the mma takes bf16, so x is split exactly into three bf16 (hi + mid +
 * lo, mma.cuh split3) that take three of B's columns: input i's part p is column 3i + p, and n
 * inputs need ceil(3n / 8) passes over B (NB) that share the dequantized A. Each block splits x
 * once into shared memory, in the order the lanes read it (a uint4 a lane, sub-step and column:
 * its pairs 0 .. 3), tile by tile of ts steps when all of x does not fit QM_SMEM; a lane whose
 * column no input uses reads column 0 or 1 (same bank parity, no conflict) and its products are
 * never read: the mma computes each output column from its own column of B.
 *
 * Reproducibility. A row's result: per slice, per sub-step in order, the two mmas from zero, then
 * acc = fma(sum, scale, acc) per part; then the slices in order, each input's parts as hi + (mid
 * + lo). Nothing depends on n, the tiling of x or which matrices share the launch (K is a function
 * of the matrix's shape and the multiprocessors), so a verify pass reproduces the decode steps
 * bit for bit. The bits are not matvec_q.cu's, so a run keeps one kernel for all its launches.
 *
 * Bytes moved: the weights rows * cols / 2 and scales rows * cols / group * 2, once whatever n;
 * x n * cols * 4 a block (from L2); y n * rows * 4. */
#include "kcommon.cuh"
#include "matvec_q_mma.cuh"
#include "mma.cuh"
#include "qdequant.cuh"

#define QM_WARPS 8 /* warps a block */
#define QM_S     4 /* ring stages a warp: QM_S - 1 steps in flight while one multiplies */
#define QM_WAVE_BLOCKS                                                                             \
    3 /* blocks a multiprocessor the split plans for (fixed: the split sets the                    \
         bits; where shared memory holds fewer, the launch takes more waves) */
#define QM_SMEM                                                                                    \
    (64 * 1024) /* bytes of split x a block stages at most (less where the                         \
                   device's shared memory is smaller: qm_plan_for) */

struct qm_seg {
    const uint4 *w;     /* the int4 weights, [rows][cols / 32] */
    const uint16_t *sc; /* bf16 scales, [rows][cols / group] */
    float *y;           /* [n][rows] */
    int rows, block0, k;
};
struct qm_segs {
    qm_seg seg[K_MATVEC_Q_SEGS];
    int n;
};

/* 16 bytes from global to shared memory, asynchronously (L2 only: the weights are read once). */
__device__ __forceinline__ void qm_cp16(uint4 *dst, const uint4 *src) {
    asm volatile(
        "cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((unsigned)__cvta_generic_to_shared(dst)),
        "l"(src));
}
__device__ __forceinline__ void qm_cp_commit() {
    asm volatile("cp.async.commit_group;");
}
/* Wait until at most N of this thread's groups are in flight. */
template <int N> __device__ __forceinline__ void qm_cp_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N));
}

/* p * one + m136 on a bf16 pair: 128 + u - 136 = q, exact. */
__device__ __forceinline__ unsigned qm_fma2(unsigned p, unsigned one, unsigned m136) {
    unsigned d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(p), "r"(one), "r"(m136));
    return d;
}

/* The constants in registers (an opaque move: LOP3 and the FMA take no second immediate). */
struct qm_consts {
    unsigned magic, one, m136;
};
__device__ __forceinline__ qm_consts qm_consts_make() {
    qm_consts c;
    asm volatile("mov.b32 %0, 0x43004300;" : "=r"(c.magic));
    asm volatile("mov.b32 %0, 0x3F803F80;" : "=r"(c.one));
    asm volatile("mov.b32 %0, 0xC308C308;" : "=r"(c.m136));
    return c;
}

/* Pairs 0 .. 3 of a word: p[j] = (q of column j, q of column j + 4) as bf16 - nibbles j and j + 4
 * or-ed into the bf16 pair 128 (qdequant.cuh q_or: one LOP3), then minus 136. */
__device__ __forceinline__ void qm_pairs(unsigned v, unsigned p[4], const qm_consts &c) {
#pragma unroll
    for (int j = 0; j < 4; j++)
        p[j] = qm_fma2(__float_as_uint(q_or<0x000F000Fu>(v >> (4 * j), c.magic)), c.one, c.m136);
}

/* Split x[c .. c + 8) (p, q) into its three parts and store each as the uint4 of pairs (j, j + 4)
 * a lane reads for them. */
__device__ __forceinline__ void qm_stage_unit(const float4 &p, const float4 &q, uint4 *hi,
                                              uint4 *mid, uint4 *lo) {
    const float v[8] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
    unsigned h[8], m[8], l[8];
#pragma unroll
    for (int i = 0; i < 8; i++)
        split3(v[i], h[i], m[i], l[i]);
    *hi = make_uint4(bf16_pair(h[0], h[4]), bf16_pair(h[1], h[5]), bf16_pair(h[2], h[6]),
                     bf16_pair(h[3], h[7]));
    *mid = make_uint4(bf16_pair(m[0], m[4]), bf16_pair(m[1], m[5]), bf16_pair(m[2], m[6]),
                      bf16_pair(m[3], m[7]));
    *lo = make_uint4(bf16_pair(l[0], l[4]), bf16_pair(l[1], l[5]), bf16_pair(l[2], l[6]),
                     bf16_pair(l[3], l[7]));
}

/* Where 16-byte chunk c of row r of a step lives in its stage of the warp's ring: the chunks of a
 * row rotated by (r >> 1) & 3, so that the eight rows an ldmatrix reads (and the two rows a
 * quarter warp's copies write) fall in different banks. */
__device__ __forceinline__ int qm_swz(int r, int c) {
    return r * 4 + (c ^ ((r >> 1) & 3));
}

/* Rows of the segments for inputs 0 .. n - 1 (3n <= 8 NB). ts: steps a tile of x (a multiple of
 * every segment's K); gshift: log2(group); xb: bytes of the staged x (then the warps'
 * rings, then the scales). */
template <int NB>
__global__ void __launch_bounds__(QM_WARPS * 32, NB <= 2 ? 3 : 2)
    matvec_q_mma_kernel(const __grid_constant__ qm_segs L, const float *x, int cols, int n,
                        int gshift, int ts, int xb) {
    extern __shared__ uint4 qm_smem[];
    int si = 0;
#pragma unroll
    for (int i = 1; i < K_MATVEC_Q_SEGS; i++)
        if (i < L.n && (int)blockIdx.x >= L.seg[i].block0) si = i;
    const qm_seg &sg = L.seg[si];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
    const int K = sg.k, slice = warp % K, per = QM_WARPS / K, tl = warp / K;
    const int tile0 = ((int)blockIdx.x - sg.block0) * per, tile = tile0 + tl;
    const int steps = cols >> 7, upr = cols >> 5, ng = cols >> gshift;
    const int nst = tile * 16 < sg.rows && slice < steps ? (steps - slice + K - 1) / K : 0;
    const int tsk = ts / K;                       /* a warp's steps a tile */
    const int imax = (steps + ts - 1) / ts * tsk; /* the same for every warp of the block */
    /* the copies of lane l: 16-byte chunk l % 4 of rows l / 4 and l / 4 + 8 (rows past the end
     * read row 0, never stored) */
    const int cr = tile * 16 + (lane >> 2), cc = lane & 3;
    const uint4 *wa = sg.w + (size_t)(cr < sg.rows ? cr : 0) * upr + cc,
                *wb = sg.w + (size_t)(cr + 8 < sg.rows ? cr + 8 : 0) * upr + cc;
    const int oa = qm_swz(lane >> 2, cc), ob = qm_swz((lane >> 2) + 8, cc);
    uint4 *ring = qm_smem + xb / 16 + warp * QM_S * 64; /* QM_S steps of 16 rows x 64 bytes */
    uint16_t *ssc = reinterpret_cast<uint16_t *>(qm_smem + xb / 16 + QM_WARPS * QM_S * 64);
    const qm_consts cst = qm_consts_make();

    /* step i of the warp (step slice + i K of the matrix) into stage i % QM_S; a group a call,
     * empty past the warp's steps, so that the waits count steps */
    auto issue = [&](int i) {
        if (i < nst) {
            const int s = slice + i * K;
            uint4 *st = ring + (i & (QM_S - 1)) * 64;
            qm_cp16(st + oa, wa + 4 * s);
            qm_cp16(st + ob, wb + 4 * s);
        }
        qm_cp_commit();
    };

    k_launch_next();
#pragma unroll
    for (int i = 0; i < QM_S - 1; i++)
        issue(i);
    /* the block's scales, [tile row][group]: one run of the matrix's, 16-byte aligned (the
     * launcher's condition; a tile's are 32 ng bytes), copied in 16-byte units and the rest (rows
     * past the end are not loaded, and never stored) */
    {
        const int nrow = min(per * 16, sg.rows - tile0 * 16), m = nrow > 0 ? nrow * ng : 0;
        const uint16_t *src = sg.sc + (size_t)tile0 * 16 * ng;
        const int nv = m >> 3;
#pragma unroll 4
        for (int v = threadIdx.x; v < nv; v += QM_WARPS * 32)
            reinterpret_cast<uint4 *>(ssc)[v] = __ldg(reinterpret_cast<const uint4 *>(src) + v);
        for (int v = nv * 8 + threadIdx.x; v < m; v += QM_WARPS * 32)
            ssc[v] = __ldg(src + v);
    }
    k_wait_only();

    /* split x: column c (input c / 3, part c % 3) at c * cs uint4, then (step, sub-step, t) */
    const int cs = ts * 16 + 4; /* + 64 bytes: neighbouring columns in opposite bank halves */
    const uint4 *bx[NB];
#pragma unroll
    for (int j = 0; j < NB; j++) {
        const int c = 8 * j + g;
        bx[j] = qm_smem + (size_t)(c < 3 * n ? c : c & 1) * cs + t;
    }
    auto stage = [&](int T) {
        const int s0 = T * ts, nsteps = min(ts, steps - s0), units = n * nsteps * 16;
        __syncthreads(); /* the last tile's readers are done (and the scales are in) */
        /* two units a thread at a time, both loads in flight before either is split */
        for (int u0 = threadIdx.x; u0 < units; u0 += 2 * QM_WARPS * 32) {
            float4 v[2][2];
            uint4 *o[2];
#pragma unroll
            for (int k = 0; k < 2; k++) {
                const int u = u0 + k * QM_WARPS * 32;
                if (u >= units) break;
                const int in = u / (nsteps * 16), e = u - in * nsteps * 16; /* (step, sub, t) */
                const float4 *xc =
                    reinterpret_cast<const float4 *>(x + (size_t)in * cols + (s0 << 7) + 8 * e);
                v[k][0] = k_ld_act(xc);
                v[k][1] = k_ld_act(xc + 1);
                o[k] = qm_smem + (size_t)(3 * in) * cs + e;
            }
#pragma unroll
            for (int k = 0; k < 2; k++)
                if (u0 + k * QM_WARPS * 32 < units)
                    qm_stage_unit(v[k][0], v[k][1], o[k], o[k] + cs, o[k] + 2 * cs);
        }
        __syncthreads();
    };

    /* ldmatrix addresses in a stage: lane l gives row l % 8 (+ 8 for the odd matrices) of matrix
     * l / 8, matrices (rows 0-7, sub 2m), (rows 8-15, sub 2m), (rows 0-7, sub 2m + 1), (8-15,
     * 2m + 1) */
    const int lr = (lane & 7) + 8 * ((lane >> 3) & 1), lsub = lane >> 4;
    const unsigned ring_s = (unsigned)__cvta_generic_to_shared(ring),
                   ld0 = ring_s + 16 * qm_swz(lr, lsub), ld1 = ring_s + 16 * qm_swz(lr, lsub + 2);
    const uint16_t *sa = ssc + (tl * 16 + g) * ng, *sb = sa + 8 * ng;

    float d[NB][4] = {};
    /* step s of the matrix, in stage st, at e in its tile of x (sub-step 0, t 0 - bx holds t) */
    auto compute = [&](int s, int st, int e) {
        unsigned w[8]; /* sub-step h: word t of row g in w[2h], of row g + 8 in w[2h + 1] */
        ldsm_x4(w, ld0 + st * 1024);
        ldsm_x4(w + 4, ld1 + st * 1024);
#pragma unroll
        for (int h = 0; h < 4; h++) {
            unsigned pa[4], pb[4];
            qm_pairs(w[2 * h], pa, cst);
            qm_pairs(w[2 * h + 1], pb, cst);
            const int c = ((s << 7) + 32 * h) >> gshift;
            const float fa = __uint_as_float((unsigned)sa[c] << 16),
                        fb = __uint_as_float((unsigned)sb[c] << 16);
#pragma unroll
            for (int j = 0; j < NB; j++) {
                const uint4 b = bx[j][e + 4 * h];
                float dt[4];
                mma_bf16_zero(dt, pa[0], pb[0], pa[1], pb[1], b.x, b.y);
                mma_bf16(dt, pa[2], pb[2], pa[3], pb[3], b.z, b.w);
                d[j][0] = __fmaf_rn(dt[0], fa, d[j][0]);
                d[j][1] = __fmaf_rn(dt[1], fa, d[j][1]);
                d[j][2] = __fmaf_rn(dt[2], fb, d[j][2]);
                d[j][3] = __fmaf_rn(dt[3], fb, d[j][3]);
            }
        }
    };

    /* step i of the warp is step slice + i K of the matrix, step slice + il K of tile T - 1
     * (il = i mod tsk, counted: a division a step would cost more than the step's products) */
    int il = 0, T = 0, e = slice * 16, s = slice;
    for (int i = 0; i < imax; i++) {
        issue(i + QM_S - 1);
        if (il == 0) stage(T++); /* uniform over the block */
        if (i < nst) {
            qm_cp_wait<QM_S - 1>(); /* step i's copies have landed... */
            __syncwarp();           /* ... the other lanes' too */
            compute(s, i & (QM_S - 1), e);
            __syncwarp(); /* every lane has read the stage the next issue overwrites */
        }
        e += 16 * K;
        s += K;
        if (++il == tsk) il = 0, e = slice * 16;
    }
    qm_cp_wait<0>();

    /* The slices' accumulators through shared memory (x's tiles are done with): lane (g, t)
     * holds columns 8j + 2t, 8j + 2t + 1 of rows g and g + 8 in pass j. */
    __syncthreads();
    float(*part)[16][8 * NB] = reinterpret_cast<float(*)[16][8 * NB]>(qm_smem);
#pragma unroll
    for (int j = 0; j < NB; j++) {
        part[warp][g][8 * j + 2 * t] = d[j][0];
        part[warp][g][8 * j + 2 * t + 1] = d[j][1];
        part[warp][g + 8][8 * j + 2 * t] = d[j][2];
        part[warp][g + 8][8 * j + 2 * t + 1] = d[j][3];
    }
    __syncthreads();
    /* (tile, input, row), the row fastest; the slices in order, each hi + (mid + lo) */
    for (int i = threadIdx.x; i < per * n * 16; i += QM_WARPS * 32) {
        const int rr = i & 15, in = (i >> 4) % n, tt = (i >> 4) / n;
        const int row = (tile0 + tt) * 16 + rr;
        if (row >= sg.rows) continue;
        float v = 0.0f;
        for (int k = 0; k < K; k++) {
            const float *p = part[tt * K + k][rr] + 3 * in;
            v = __fadd_rn(v, __fadd_rn(p[0], __fadd_rn(p[1], p[2])));
        }
        sg.y[(size_t)in * sg.rows + row] = v;
    }
}

/* Warps a tile of 16 rows (split-K): slices of at least two steps of 128 columns. */
static int qm_split(int rows, int cols, int sms) {
    return mma_split_k(rows, cols / 128, 2, QM_WARPS, (long)QM_WAVE_BLOCKS * sms);
}

typedef void (*qm_fn)(const qm_segs, const float *, int, int, int, int, int);

/* The shared memory a block may opt into on this device (bytes). */
static int qm_smem_limit(void) {
    static int limit = 0;
    if (!limit) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
                cudaSuccess ||
            limit < 48 * 1024)
            limit = 48 * 1024;
    }
    return limit;
}

/* A launch over the segments for n inputs: its blocks, its tile of x (ts steps, a multiple of
 * every segment's K; all of x when it fits), and the bytes of x's tile and of shared memory. */
struct qm_plan {
    qm_segs L;
    int blocks, ts;
    size_t xb, smem;
};

/* The plan for n inputs; false when no tile of x fits the device's shared memory beside the
 * warps' rings and the block's scales. Neither ts nor the bytes change a bit of the results. */
static bool qm_plan_for(const k_qseg *segs, int n_segs, int n, int t0, int sms, qm_plan *p) {
    const int cols = segs[0].w.cols, steps = cols / 128, nb = (3 * n + 7) / 8;
    const int ng = cols >> __builtin_ctz((unsigned)segs[0].w.group);
    *p = {};
    int most_per = 1, most_k = 1;
    for (int i = 0; i < n_segs; i++) {
        const k_qmat *m = &segs[i].w;
        const int k = qm_split(m->rows, cols, sms), per = QM_WARPS / k;
        p->L.seg[i] = {(const uint4 *)m->q, m->scales, segs[i].y + (size_t)t0 * m->rows, m->rows,
                       p->blocks,           k};
        p->blocks += ((m->rows + 15) / 16 + per - 1) / per;
        most_per = per > most_per ? per : most_per;
        most_k = k > most_k ? k : most_k;
    }
    p->L.n = n_segs;
    const long fixed = (long)QM_WARPS * QM_S * 1024 + ((long)most_per * 16 * ng * 2 + 15) / 16 * 16;
    long room = qm_smem_limit() - fixed;
    if (room > QM_SMEM) room = QM_SMEM;
    const long fit = (room / (3 * n) - 64) / 256 / most_k * most_k;
    const long all = (steps + most_k - 1) / most_k * most_k;
    p->ts = (int)(fit < all ? fit : all);
    p->xb = (size_t)3 * n * ((size_t)p->ts * 256 + 64);
    if (p->xb < (size_t)QM_WARPS * 16 * 8 * nb * 4) p->xb = (size_t)QM_WARPS * 16 * 8 * nb * 4;
    p->smem = p->xb + (size_t)fixed;
    return p->ts >= most_k && p->smem <= (size_t)qm_smem_limit();
}

/* The plan at the most inputs a launch takes: it fits, then every n does (with fewer inputs the
 * tile that fits only grows, all of x does not change, and neither x's bytes nor the reduction's
 * floor exceed what the most inputs needed). */
bool qm_fits(const k_qseg *segs, int n_segs, int sms) {
    qm_plan p;
    return qm_plan_for(segs, n_segs, K_MATVEC_Q_MAX_N, 0, sms, &p);
}

template <int NB> static qm_fn qm_kernel(size_t smem) {
    static size_t allowed = 48 * 1024;
    if (smem > allowed) {
        if (cudaFuncSetAttribute(matvec_q_mma_kernel<NB>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)smem) != cudaSuccess) {
            cudaGetLastError(); /* not sticky: clear it */
            return NULL;
        }
        allowed = smem;
    }
    return matvec_q_mma_kernel<NB>;
}

int qm_launch(cudaStream_t s, const k_qseg *segs, int n_segs, const float *x, int t0, int n,
              int sms) {
    qm_plan p;
    if (!qm_plan_for(segs, n_segs, n, t0, sms, &p)) return -1;
    const int nb = (3 * n + 7) / 8, cols = segs[0].w.cols;
    const qm_fn kernel = nb == 1   ? qm_kernel<1>(p.smem)
                         : nb == 2 ? qm_kernel<2>(p.smem)
                         : nb == 3 ? qm_kernel<3>(p.smem)
                                   : qm_kernel<4>(p.smem);
    if (!kernel) return -1;
    k_launch_ex(kernel, dim3((unsigned)p.blocks), dim3(QM_WARPS * 32), 0, p.smem, s, p.L,
                x + (size_t)t0 * cols, cols, n, __builtin_ctz((unsigned)segs[0].w.group), p.ts,
                (int)p.xb);
    K_CHECK_LAUNCH();
    return 0;
}
