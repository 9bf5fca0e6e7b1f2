/* matvec.cu: matrix-vector and small matrix products, weights in their file dtype.
 *
 * Decoding reads every weight once per token, so this kernel decides the speed of a step.
 * Each warp owns one weight row (or a 1/K slice of it, split-K) and streams it with 16-byte
 * loads (8 bf16 per lane, 512 bytes per warp per load), converting to fp32 in registers; the
 * input x (a few KB) is read through L1, where every warp of the block finds it. For n > 1
 * inputs (prefill, teacher forcing, speculative verify) the loaded weights are dotted with up
 * to 8 inputs before moving on, so the row is read from memory once per 8 inputs.
 *
 * Keeping the memory busy. The column loop is unrolled U times (4 for a decode launch with the
 * gate + up pair, whose pass loads two rows, else 8), so the compiler issues that many loads
 * before their products. At n = 1 a launch of one wave or of many takes the row in explicit
 * groups of 4 instead (mv_groups: all loads of a group, then their products). The first 2
 * chunks of every lane are loaded BEFORE the kernel waits for its predecessor (kcommon.cuh:
 * programmatic dependent launch) - weights never depend on an earlier kernel - so the stream of
 * the next matrix starts while the previous kernel drains; x is read, and out written, only
 * after the wait. (A ring of U loads in flight per lane takes twice the registers, a third of
 * the blocks per multiprocessor, and is up to 2x slower on the small matrices.)
 *
 * One launch, several matrices. The backend (backend_cuda_fuse.c) hands over up to K_MV_SEGS
 * matrices that read the same x (q, k and v; gate and up) as one launch: blocks are dealt to
 * the matrices in order. Two epilogues save a kernel and a round trip each: K_MV_GELU_PAIR
 * gives a warp row r of the gate AND of the up matrix and stores gelu_tanh(g) * u (and u),
 * K_MV_GELU_MUL multiplies gelu_tanh(g) by a vector already in memory (the per-layer input).
 *
 * Decode (n = 1): matvec1_kernel, the general kernel's arithmetic for one input without the
 * input groups: at most 40 registers a thread instead of 48 (the gate + up pair 44 instead of
 * 74), so 6 blocks of 8 warps fit a multiprocessor instead of 5 (3 with the pair); on an H200,
 * E4B's step 1.4-2 % faster than with the general kernel, the q / k / v and per-layer products
 * up to 20 % and the head 9 %. A launch that splits no row over warps (the gate + up pair, the
 * head) may go out in blocks of 4 warps instead of 8 (mv_block_warps): the same sums.
 *
 * Two to eight inputs (speculative verify). The general kernel loads 32 bytes of x per input for
 * every 16 bytes of weights and stalls on L1; in launches of 1 MiB and more, matvec_rows_kernel
 * gives a warp two rows (four from 5 inputs) and loads each chunk of x once for them
 * (matvec_rows.cu; mv_rows_for).
 *
 * The tensor cores. With k_matvec_set_mma(1 or 2) every bf16 product that can goes to
 * matvec_mma.cu instead: slower for a plain decode step, much cheaper for a verify pass, with
 * other bits (its header says why and how much).
 *
 * Reproducibility. The accumulation order of a row - each lane's chunks in column order into
 * one fma chain, the warp sum, then the K slices added in a fixed order - depends only on the
 * shapes of the launch's matrices (K is chosen from them: launch_splits), never on n, on U, on
 * the explicit groups, on the occupancy or the block size, or on the rows a warp takes: a verify
 * pass, which the backend fuses as the decode steps it stands for, reproduces them bit for bit.
 * A matrix launched alone may have another K than in a launch with others. The order differs
 * from the CPU backend's, so the two agree to rounding. */
#include <type_traits>

#include "kcommon.cuh"
#include "matvec.cuh"

/* Blocks of any size resident on a multiprocessor at most: 16 on sm_86 / sm_87, 24 on sm_89, 32
 * on sm_80 and sm_90. A kernel's minimum blocks (launch bounds) must not ask for more: ptxas
 * refuses it. */
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ == 860 || __CUDA_ARCH__ == 870)
#define MV_RESIDENT_MAX 16
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 890
#define MV_RESIDENT_MAX 24
#else
#define MV_RESIDENT_MAX 32
#endif

/* The bf16 products' home for the next launches (kernels.h: k_matvec_set_mma; each backend sets
 * its own before its launches): 0 the CUDA cores, 1 or 2 the tensor cores with x in 3 or 2 bf16. */
static int mv_mma = 0;

/* Launches of 2 .. 8 inputs take matvec_rows_kernel from this many bytes of weights (1 MiB:
 * matvec_rows.cu says why; k_matvec_test_rows_min lowers it for the tests). */
static double mv_rows_min_bytes = 1024.0 * 1024.0;

/* acc + the dot product of 16 bytes of weights (already fp32 in wf) with x[c .. c + V), four
 * products at a time. */
template <int V>
__device__ __forceinline__ float mv_dot16(const float *wf, const float *xp, float acc) {
#pragma unroll
    for (int q = 0; q < V / 4; q++)
        acc = mv_dot4(wf + 4 * q, k_ld_act(reinterpret_cast<const float4 *>(xp) + q), acc);
    return acc;
}

/* Chunks 0 .. F - 1 of a lane's row (and of the up matrix's when pair). */
template <typename T, int F>
__device__ __forceinline__ void mv_first(uint4 *f1, uint4 *f2, const T *w1, const T *w2, int nch,
                                         int stride, bool pair) {
#pragma unroll
    for (int ch = 0; ch < F; ch++)
        if (ch < nch) {
            f1[ch] = __ldcs(reinterpret_cast<const uint4 *>(w1 + ch * stride));
            if (pair) f2[ch] = __ldcs(reinterpret_cast<const uint4 *>(w2 + ch * stride));
        }
}

/* Rows of every segment for inputs t0 .. t0 + NT - 1 (those below n) per pass over the row.
 * VEC: 16-byte loads (cols a multiple of the vector width, matrices and x 16-byte aligned),
 * else one element per lane (no early loads: odd shapes only). U: the column loop's unroll (the
 * compiler issues that many loads before their products). PAIR: some segment has a
 * K_MV_GELU_PAIR epilogue (the second matrix's loads exist only then). On the vector path the
 * first F = 2 chunks per lane are loaded before the wait for the previous kernel. */
template <typename T, int NT, bool VEC, int U, bool PAIR>
__global__ void __launch_bounds__(MV_WARPS * 32)
    matvec_kernel(const mv_launch L, const float *x, int cols, int n) {
    constexpr int F = VEC ? 2 : 1; /* chunks per lane loaded first */
    /* This block's segment (compile-time indices: the launch struct stays in parameter space). */
    mv_seg sg = L.seg[0];
#pragma unroll
    for (int i = 1; i < K_MV_SEGS; i++)
        if (i < L.n_segs && (int)blockIdx.x >= L.seg[i].block0) sg = L.seg[i];
    __shared__ float part[MV_WARPS][NT], part_up[MV_WARPS][NT];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int K = sg.k, slice = warp % K;
    const int row = ((int)blockIdx.x - sg.block0) * (MV_WARPS / K) + warp / K;
    const bool live = row < sg.rows; /* no early return: the block meets at barriers below */
    const bool pair = PAIR && sg.epilogue == K_MV_GELU_PAIR;
    const size_t roff = (size_t)(live ? row : 0) * cols;

    constexpr int V = VEC ? vec16<T>::n : 1;
    const int stride = K * 32 * V;          /* columns between a lane's chunks */
    const int c0 = (slice * 32 + lane) * V; /* this lane's first column */
    const int nch = live && c0 < cols ? (cols - c0 + stride - 1) / stride : 0;
    const T *w1 = (const T *)sg.w + roff + c0;
    const T *w2 = pair ? (const T *)sg.w_up + roff + c0 : w1;

    /* The first F chunks of the row: loaded before waiting for the previous kernel (weights
     * never depend on it). */
    uint4 f1[F], f2[PAIR ? F : 1];
    k_launch_next();
    if (VEC) mv_first<T, F>(f1, f2, w1, w2, nch, stride, pair);
    k_wait_only();

    for (int t0 = 0; t0 < n; t0 += NT) {
        float acc[NT], acc_up[NT];
#pragma unroll
        for (int t = 0; t < NT; t++)
            acc[t] = acc_up[t] = 0.0f;
        if (VEC) {
            /* the next group of inputs streams the row again */
            if (t0 > 0) mv_first<T, F>(f1, f2, w1, w2, nch, stride, pair);
            float wf[V], wf2[V];
#pragma unroll
            for (int ch = 0; ch < F; ch++)
                if (ch < nch) {
                    unpack16<T>(f1[ch], wf);
                    if (pair) unpack16<T>(f2[ch], wf2);
#pragma unroll
                    for (int t = 0; t < NT; t++)
                        if (t0 + t < n) {
                            const float *xp = x + (size_t)(t0 + t) * cols + c0 + ch * stride;
                            acc[t] = mv_dot16<V>(wf, xp, acc[t]);
                            if (pair) acc_up[t] = mv_dot16<V>(wf2, xp, acc_up[t]);
                        }
                }
#pragma unroll U
            for (int ch = F; ch < nch; ch++) {
                const int c = ch * stride;
                unpack16<T>(__ldcs(reinterpret_cast<const uint4 *>(w1 + c)), wf);
                if (pair) unpack16<T>(__ldcs(reinterpret_cast<const uint4 *>(w2 + c)), wf2);
#pragma unroll
                for (int t = 0; t < NT; t++)
                    if (t0 + t < n) {
                        const float *xp = x + (size_t)(t0 + t) * cols + c0 + c;
                        acc[t] = mv_dot16<V>(wf, xp, acc[t]);
                        if (pair) acc_up[t] = mv_dot16<V>(wf2, xp, acc_up[t]);
                    }
            }
        } else if (!VEC && live) {
            for (int c = c0; c < cols; c += stride) {
                const float wv = to_f32(w1[c - c0]), wv2 = pair ? to_f32(w2[c - c0]) : 0.0f;
#pragma unroll
                for (int t = 0; t < NT; t++)
                    if (t0 + t < n) {
                        const float xv = k_ld_act(x + (size_t)(t0 + t) * cols + c);
                        acc[t] += wv * xv;
                        if (pair) acc_up[t] += wv2 * xv;
                    }
            }
        }
#pragma unroll
        for (int t = 0; t < NT; t++) {
            acc[t] = warp_sum(acc[t]);
            if (pair) acc_up[t] = warp_sum(acc_up[t]);
        }
        /* Lane t stores input t's value: the NT stores (and the per-layer input loads of a
         * K_MV_GELU_MUL epilogue) go out at once, not one after another from lane 0. E4B, 8-row
         * verify pass on an H200: the per-layer gate 5.6 us a layer against 11.4, its
         * projection 4.1 against 6.0; the pass 7.31 ms against 7.61. */
        if (K == 1) {
            float v = acc[0], vu = acc_up[0]; /* warp_sum leaves the sums in every lane */
#pragma unroll
            for (int t = 1; t < NT; t++)
                if (lane == t) {
                    v = acc[t];
                    vu = acc_up[t];
                }
            if (live && lane < NT && t0 + lane < n) mv_store(sg, t0 + lane, row, v, vu);
        } else { /* uniform over the block: K is the segment's, and a block has one segment */
            if (lane == 0)
#pragma unroll
                for (int t = 0; t < NT; t++) {
                    part[warp][t] = acc[t];
                    part_up[warp][t] = acc_up[t];
                }
            __syncthreads();
            if (live && lane < NT && slice == 0 && t0 + lane < n) {
                float v = 0.0f, vu = 0.0f;
                for (int k = 0; k < K; k++) {
                    v += part[warp + k][lane];
                    vu += part_up[warp + k][lane];
                }
                mv_store(sg, t0 + lane, row, v, vu);
            }
            __syncthreads(); /* part is reused by the next group of inputs */
        }
    }
}

/* The blocks a multiprocessor must hold of matvec1_kernel (its launch bounds). The plain one-pass
 * bf16 kernel at unroll 8 (no gate + up pair, no explicit groups: every decode launch but the
 * pair and those mv_groups picks) is held to 6. With the bf16 weights unpacked by shift and mask
 * (kcommon.cuh unpack16), the compiler's own choice for it is 46 registers, 5 blocks, and q + k +
 * v (1536 blocks) and the per-layer input projection (1344) each need a third wave: 9.1 and 21.3
 * us against 8.0 and 17.9 bounded on an H200 (after a small kernel, as in a step). Bounded it
 * spills 4 bytes (none before the fma chain of mv_dot4). The other forms keep the compiler's
 * choice, as a bound of 40 registers spills there (unroll 4: 36 bytes). */
template <typename T>
__host__ __device__ constexpr int mv1_min_blocks(int unroll, bool pair, bool grp) {
    const bool plain_bf16 = std::is_same<T, __nv_bfloat16>::value && unroll == 8 && !pair && !grp;
    return plain_bf16 ? 6 : 0;
}

/* The same for blocks of WB warps: as many warps a multiprocessor (MV_WARPS / WB times the
 * blocks), within the architecture's resident blocks. */
template <typename T>
__host__ __device__ constexpr int mv1_blocks_for(int unroll, bool pair, bool grp, int wb) {
    const int blocks = mv1_min_blocks<T>(unroll, pair, grp) * (MV_WARPS / wb);
    return blocks < MV_RESIDENT_MAX ? blocks : MV_RESIDENT_MAX;
}

/* The general kernel's arithmetic for one input (decode), lean: no input groups, one row per
 * warp slice. WB: warps a block (MV_WARPS, or 4 for a launch that splits no row:
 * mv_block_warps; the blocks asked for scale to the same warps, mv1_blocks_for). GRP: the
 * chunks in explicit groups of U (mv_groups). Vector path only (16-byte loads); the first 2
 * chunks come before the wait for the previous kernel. L is __grid_constant__: indexed by a
 * segment number in place, not copied. */
template <typename T, int U, bool PAIR, bool GRP, int WB = MV_WARPS>
__global__ void __launch_bounds__(WB * 32, mv1_blocks_for<T>(U, PAIR, GRP, WB))
    matvec1_kernel(const __grid_constant__ mv_launch L, const float *x, int cols) {
    constexpr int V = vec16<T>::n, F = 2; /* F: chunks loaded first */
    __shared__ float part[WB], part_up[WB];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    /* Where this block puts the warp: segment si (found with compile-time indices; L is
     * __grid_constant__, so L.seg[si] is read from parameter space in place), row, chunks. */
    const mv_seg &sg = L.seg[mv_seg_of(L, (int)blockIdx.x)];
    const int K = sg.k, slice = warp % K;
    const int row = ((int)blockIdx.x - sg.block0) * (WB / K) + warp / K;
    const int stride = K * 32 * V, c0 = (slice * 32 + lane) * V;
    const bool live = row < sg.rows;
    const int nch = live && c0 < cols ? (cols - c0 + stride - 1) / stride : 0;
    const size_t off = (size_t)(live ? row : 0) * cols + c0;
    const bool pair = PAIR && sg.epilogue == K_MV_GELU_PAIR;
    const T *w1 = (const T *)sg.w + off;
    const T *w2 = pair ? (const T *)sg.w_up + off : w1;
    uint4 f1[F], f2[PAIR ? F : 1];
    k_launch_next();
    mv_first<T, F>(f1, f2, w1, w2, nch, stride, pair);
    k_wait_only();

    const float *xp = x + c0;
    float acc = 0.0f, acc_up = 0.0f, wf[V], wf2[V];
#pragma unroll
    for (int ch = 0; ch < F; ch++)
        if (ch < nch) {
            unpack16<T>(f1[ch], wf);
            acc = mv_dot16<V>(wf, xp + ch * stride, acc);
            if (pair) {
                unpack16<T>(f2[ch], wf2);
                acc_up = mv_dot16<V>(wf2, xp + ch * stride, acc_up);
            }
        }
    if (GRP) {
        /* GRP: the chunks in explicit groups of U - all loads of a group issued (predicated),
         * then their products - so that a row whose remaining chunks are fewer than U (or not a
         * multiple of U) cannot end in a loop that waits for one load at a time, as the
         * unrolled loop's remainder may (its 34-40 registers cannot hold U loads in flight).
         * Same order. */
        for (int ch0 = F; ch0 < nch; ch0 += U) {
            uint4 g1[U], g2[PAIR ? U : 1];
#pragma unroll
            for (int u = 0; u < U; u++)
                if (ch0 + u < nch) {
                    g1[u] = __ldcs(reinterpret_cast<const uint4 *>(w1 + (ch0 + u) * stride));
                    if (pair)
                        g2[u] = __ldcs(reinterpret_cast<const uint4 *>(w2 + (ch0 + u) * stride));
                }
#pragma unroll
            for (int u = 0; u < U; u++)
                if (ch0 + u < nch) {
                    const int c = (ch0 + u) * stride;
                    unpack16<T>(g1[u], wf);
                    acc = mv_dot16<V>(wf, xp + c, acc);
                    if (pair) {
                        unpack16<T>(g2[u], wf2);
                        acc_up = mv_dot16<V>(wf2, xp + c, acc_up);
                    }
                }
        }
    } else {
#pragma unroll U
        for (int ch = F; ch < nch; ch++) {
            const int c = ch * stride;
            unpack16<T>(__ldcs(reinterpret_cast<const uint4 *>(w1 + c)), wf);
            acc = mv_dot16<V>(wf, xp + c, acc);
            if (pair) {
                unpack16<T>(__ldcs(reinterpret_cast<const uint4 *>(w2 + c)), wf2);
                acc_up = mv_dot16<V>(wf2, xp + c, acc_up);
            }
        }
    }
    acc = warp_sum(acc);
    if (pair) acc_up = warp_sum(acc_up);
    if (K == 1) {
        if (live && lane == 0) mv_store(sg, 0, row, acc, acc_up);
    } else { /* uniform over the block: a block has one segment */
        if (lane == 0) {
            part[warp] = acc;
            part_up[warp] = acc_up;
        }
        __syncthreads();
        if (live && lane == 0 && slice == 0) {
            float v = 0.0f, vu = 0.0f;
            for (int k = 0; k < K; k++) {
                v += part[warp + k];
                vu += part_up[warp + k];
            }
            mv_store(sg, 0, row, v, vu);
        }
    }
}

/* Multiprocessors of the current device (read once). */
static int sm_count(void) {
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
            sms = 100;
    }
    return sms;
}

/* Blocks of MV_WARPS warps of the lean decode kernel that one multiprocessor holds (34
 * registers a thread: 6 on sm_86 / sm_89 / sm_90, by threads or by registers). */
#define MV_WAVE_BLOCKS 6

/* Warps per row (split-K) of a matrix, a function of its shape (launch_splits may halve it in a
 * launch of several matrices). Splitting gives a row's bytes to more warps, so more loads are
 * in flight at once; but every doubling doubles the blocks, and a launch of more blocks than
 * the GPU holds at once runs in waves, each with its ramp and tail.
 * So K doubles while the doubled launch still fits one wave (MV_WAVE_BLOCKS per
 * multiprocessor) and every warp still gets a full pass of 32 lanes' loads. On E4B's shapes, q
 * 2048 x 2560, o 2560 x 2048 and down 2560 x 10240 take K = 2, where splitting until about 8
 * blocks a multiprocessor gave K = 8, 4, 4 (4.8 against 6.4, 4.3 against 5.4 and 15.3 against
 * 16.3 us a launch on an H200). */
static int split_for(int rows, int cols, int per_pass) {
    int k = 1;
    const long wave = (long)MV_WAVE_BLOCKS * sm_count();
    while (k < MV_WARPS && ((long)rows * 2 * k + MV_WARPS - 1) / MV_WARPS <= wave &&
           cols >= 2 * k * per_pass)
        k *= 2;
    return k;
}

/* The splits of a launch's matrices: each one's by split_for; then, while the launch's decode
 * blocks exceed one wave and some matrix is split, the largest split (the first of equals) is
 * halved. Each split_for alone fills about a wave, so a launch of several matrices would run
 * two: E4B's q + k + v, K = 2, 8, 8, 1536 blocks, becomes K = 2, 2, 2 and 768 (7.5 against 8.1
 * us a launch on an H200; the step 0.01-0.02 ms, a verify pass 1.4-2.4 % faster). The blocks
 * counted are those at n = 1 whatever n is, so a verify pass splits every matrix as the decode
 * steps it stands for do. */
static void launch_splits(const k_mv_seg *segs, int n_segs, int cols, int per_pass, int *ks) {
    for (int i = 0; i < n_segs; i++)
        ks[i] = split_for(segs[i].rows, cols, per_pass);
    if (n_segs < 2) return;
    const long wave = (long)MV_WAVE_BLOCKS * sm_count();
    for (;;) {
        long blocks = 0;
        int big = -1;
        for (int i = 0; i < n_segs; i++) {
            blocks += (long)k_blocks((size_t)segs[i].rows, (unsigned)(MV_WARPS / ks[i]));
            if (ks[i] > 1 && (big < 0 || ks[i] > ks[big])) big = i;
        }
        if (blocks <= wave || big < 0) return;
        ks[big] /= 2;
    }
}

/* The column loop's unroll of a decode launch: as many 16-byte loads an unrolled pass as
 * without the pair - 4 chunks when a warp streams a gate and an up row, 8 otherwise. The unroll
 * never changes a row's summation order. */
static int mv_unroll(bool pair) {
    return pair ? 4 : 8;
}

/* Blocks of `kernel` resident on one multiprocessor (asked once per kernel). */
static int resident_blocks(const void *kernel, int warps = MV_WARPS) {
    static struct {
        const void *kernel;
        int blocks;
    } seen[32];
    static int n_seen = 0;
    for (int i = 0; i < n_seen; i++)
        if (seen[i].kernel == kernel) return seen[i].blocks;
    int nb = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, kernel, warps * 32, 0) != cudaSuccess ||
        nb < 1)
        nb = 1;
    if (n_seen < 32) {
        seen[n_seen].kernel = kernel;
        seen[n_seen++].blocks = nb;
    }
    return nb;
}

typedef void (*mv1_fn)(const mv_launch, const float *, int);

/* The lean kernel for unroll U, in explicit groups when grp. */
template <typename T, int U, bool PAIR, int WB> static mv1_fn mv1_pick(bool grp) {
    return grp ? matvec1_kernel<T, U, PAIR, true, WB> : matvec1_kernel<T, U, PAIR, false, WB>;
}

/* Whether a decode launch of `blocks` blocks takes the explicit groups (of 4; *unroll is set to
 * it): when the launch fits one wave of the group kernel or runs many (at least 8) of them. The
 * groups need more registers (47-48 instead of 40 a thread: 5 blocks a multiprocessor instead
 * of 6) and keep more loads in flight; that pays where the wave count does not change - a launch
 * that fits one wave either way (o, the per-layer products: 640 blocks and fewer on an H200), or
 * one of so many waves that a sixth of them hardly matters (the head, 32768 blocks) - and loses
 * where 6 blocks a multiprocessor would save a wave (q + k + v 1536, gate + up 1280, the
 * per-layer input projection 1344). They change no bit. */
template <typename T, bool PAIR, int WB> static bool mv_groups(int blocks, int *unroll) {
    const mv1_fn g = mv1_pick<T, 4, PAIR, WB>(true);
    const long wave = (long)resident_blocks((const void *)g, WB) * sm_count();
    if (blocks > wave && blocks < 8 * wave) return false;
    *unroll = 4;
    return true;
}

/* n = 1 through matvec1_kernel, blocks of WB warps, one block per virtual block. */
template <typename T, bool PAIR, int WB>
static void launch1(cudaStream_t s, const mv_launch &L, const float *x, int cols) {
    int u = mv_unroll(PAIR);
    const bool grp = mv_groups<T, PAIR, WB>(L.blocks, &u);
    const mv1_fn kernel = u == 4 ? mv1_pick<T, 4, PAIR, WB>(grp) : mv1_pick<T, 8, PAIR, WB>(grp);
    k_launch(kernel, dim3((unsigned)L.blocks), dim3(WB * 32), s, L, x, cols);
}

template <typename T, int NT, bool VEC, bool PAIR>
static void launch_nt(cudaStream_t s, const mv_launch &L, unsigned blocks, const float *x, int cols,
                      int n) {
    const dim3 grid(blocks), block(MV_WARPS * 32);
    if constexpr (!VEC)
        k_launch(matvec_kernel<T, NT, false, 1, PAIR>, grid, block, s, L, x, cols, n);
    else if constexpr (NT == 1)
        L.wb == 4 ? launch1<T, PAIR, 4>(s, L, x, cols) : launch1<T, PAIR, MV_WARPS>(s, L, x, cols);
    else
        k_launch(matvec_kernel<T, NT, true, 8, PAIR>, grid, block, s, L, x, cols, n);
}

template <typename T, int NT>
static void launch_pair(cudaStream_t s, const mv_launch &L, unsigned blocks, const float *x,
                        int cols, int n, bool vec, bool pair) {
    if (vec)
        pair ? launch_nt<T, NT, true, true>(s, L, blocks, x, cols, n)
             : launch_nt<T, NT, true, false>(s, L, blocks, x, cols, n);
    else
        pair ? launch_nt<T, NT, false, true>(s, L, blocks, x, cols, n)
             : launch_nt<T, NT, false, false>(s, L, blocks, x, cols, n);
}

/* Warps a block of a decode launch. Where every matrix takes one warp a row, a block is just
 * warps side by side, and smaller blocks cost nothing in the sums: a launch whose 8-warp blocks
 * would run more than one wave (E4B's gate + up pair, 1280 blocks; the head; the per-layer input
 * projection) takes blocks of 4, so that its last wave ends in finer steps - on an H200 E4B's
 * step 0.02 ms (0.6 %) faster, the gate + up pair 28.5 against 29.2 us. Blocks of 2 gain less,
 * and lose on launches of under a wave, which keep 8; blocks of 4 for the launches that split
 * rows in two as well (down, o, q + k + v) make no difference, and are not taken. Only for the
 * lean kernel (lean_path: n = 1 on the vector path, not the rows kernel). */
static int mv_block_warps(const k_mv_seg *segs, int n_segs, const int *ks, int n, bool lean_path) {
    if (n != 1 || !lean_path) return MV_WARPS;
    long blocks8 = 0;
    for (int i = 0; i < n_segs; i++) {
        if (ks[i] != 1) return MV_WARPS;
        blocks8 += k_blocks((size_t)segs[i].rows, MV_WARPS);
    }
    return blocks8 > (long)MV_WAVE_BLOCKS * sm_count() ? 4 : MV_WARPS;
}

/* Rows a warp of matvec_rows_kernel takes over n = 2 .. 8 inputs: 2 up to 4 inputs and 4 from 5
 * on; 2 with the gate + up pair. No result bit depends on it (a row's sums are the same whichever
 * warp takes it). On E4B (an H200), verify passes over 2 / 3 / 4 / 5 / 6 / 7 / 8 positions took
 * 3.009 / 3.383 / 3.848 / 4.674 / 5.051 / 5.264 / 5.957 ms with 2 rows, 3.079 / 3.388 / 3.859 /
 * 4.495 / 4.849 / 5.255 / 5.707 with 4: from 5 inputs the products are bound by their
 * arithmetic, and 4 rows load each chunk of x once for twice the rows. */
static int mv_rows_for(int n, bool pair) {
    if (pair) return 2;
    return n >= 5 ? 4 : 2;
}

static int aligned16(const void *p) {
    return ((uintptr_t)p & 15) == 0;
}

template <typename T>
static void launch(cudaStream_t s, const k_mv_seg *segs, int n_segs, const float *x, int cols,
                   int n) {
    /* The vector path for a matrix depends on its own alignment; matrices that would take
     * different paths are not launched together (a row's path must not depend on its neighbours
     * in the launch: each then goes alone, for every n alike). */
    int vec[K_MV_SEGS] = {0};
    for (int i = 0; i < n_segs; i++)
        vec[i] = cols % vec16<T>::n == 0 && aligned16(x) && aligned16(segs[i].w) &&
                 (segs[i].epilogue != K_MV_GELU_PAIR || aligned16(segs[i].w_up));
    for (int i = 1; i < n_segs; i++)
        if (vec[i] != vec[0]) {
            for (int j = 0; j < n_segs; j++)
                launch<T>(s, segs + j, 1, x, cols, n);
            return;
        }
    /* bf16 on the tensor cores when asked (matvec_mma.cu: 16-byte aligned, 32-column steps) */
    if constexpr (std::is_same<T, __nv_bfloat16>::value)
        if (mv_mma && vec[0] && cols % 32 == 0) {
            mv_mma_launch(s, segs, n_segs, x, cols, n, mv_mma == 2 ? 2 : 3, sm_count());
            K_CHECK_LAUNCH();
            return;
        }
    mv_launch L = {};
    L.n_segs = n_segs;
    unsigned blocks = 0;
    const int per_pass = 32 * (vec[0] ? vec16<T>::n : 1);
    /* 2 .. 8 inputs on the vector path, a launch of at least mv_rows_min_bytes: mv_rows_for rows
     * a warp (matvec_rows_kernel) */
    double bytes = 0;
    bool pair = false;
    for (int i = 0; i < n_segs; i++) {
        const bool p = segs[i].epilogue == K_MV_GELU_PAIR;
        bytes += (double)segs[i].rows * cols * sizeof(T) * (p ? 2 : 1);
        pair = pair || p;
    }
    const int rows_kernel = vec[0] && n >= 2 && n <= 8 && bytes >= mv_rows_min_bytes;
    const int rows_per_warp = rows_kernel ? mv_rows_for(n, pair) : 1;
    int ks[K_MV_SEGS];
    launch_splits(segs, n_segs, cols, per_pass, ks);
    L.wb = mv_block_warps(segs, n_segs, ks, n, vec[0] && !rows_kernel);
    for (int i = 0; i < n_segs; i++) {
        const int k = ks[i];
        L.seg[i] = mv_seg_make(segs[i], k, (int)blocks);
        blocks += k_blocks((size_t)segs[i].rows, (unsigned)(rows_per_warp * L.wb / k));
    }
    L.blocks = (int)blocks;
    if (rows_kernel)
        mv_rows_launch<T>(s, L, blocks, x, cols, n, rows_per_warp, pair);
    else if (n == 1)
        launch_pair<T, 1>(s, L, blocks, x, cols, n, vec[0], pair);
    else if (n <= 4)
        launch_pair<T, 4>(s, L, blocks, x, cols, n, vec[0], pair);
    else
        launch_pair<T, 8>(s, L, blocks, x, cols, n, vec[0], pair);
    K_CHECK_LAUNCH();
}

extern "C" void k_matvec_multi(cudaStream_t s, const k_mv_seg *segs, int n_segs, int wdtype,
                               const float *x, int cols, int n) {
    if (n_segs < 1 || n_segs > K_MV_SEGS) {
        fprintf(stderr, "%s:%d: k_matvec_multi: %d matrices (1 .. %d)\n", __FILE__, __LINE__,
                n_segs, K_MV_SEGS);
        exit(1);
    }
    k_mv_seg live[K_MV_SEGS];
    int m = 0;
    for (int i = 0; i < n_segs; i++)
        if (segs[i].rows > 0) live[m++] = segs[i];
    if (!m || n <= 0 || (k_skip & K_SKIP_MATVEC)) return;
    if (wdtype == KDT_BF16)
        launch<__nv_bfloat16>(s, live, m, x, cols, n);
    else if (wdtype == KDT_F16)
        launch<__half>(s, live, m, x, cols, n);
    else
        launch<float>(s, live, m, x, cols, n);
}

extern "C" void k_matvec(cudaStream_t s, float *out, const void *w, int wdtype, const float *x,
                         int rows, int cols, int n) {
    k_mv_seg seg = {};
    seg.out = out;
    seg.w = w;
    seg.rows = rows;
    seg.epilogue = K_MV_PLAIN;
    k_matvec_multi(s, &seg, 1, wdtype, x, cols, n);
}

extern "C" int k_matvec_set_mma(int mma) {
    if (mma < 0 || mma > 2) return -1;
    mv_mma = mma;
    return 0;
}

extern "C" void k_matvec_test_rows_min(size_t bytes) {
    mv_rows_min_bytes = (double)bytes;
}
