/* matvec_fold.cu: a decode product whose input is the residual stream right after a block's
 * norm + add, with that norm + add folded into the product's prologue:
 *     o = rmsnorm(o) * wn;  x += o;  out = W x  (with matvec.cu's epilogues)
 * in one kernel instead of k_norm_add_norm then k_matvec_multi.
 *
 * Why. Each small kernel of a decode step costs its latency on the critical path: it waits for
 * the whole previous kernel, makes a round trip to memory, and the next kernel waits for all of
 * it. Gemma 4's per-layer-input gate (E4B: 256 x 2560, 1.3 MB) is such a product, and it reads
 * the stream just after the MLP's norm + add (a one-block kernel). Here every block of the
 * product does that norm itself: after the PDL wait it sums the squares of o, then builds the
 * x values its lanes need, chunk by chunk, as it dots them with its weights (loaded before the
 * wait, as matvec.cu's lean kernel does). One kernel boundary less, and the norm runs in every
 * block at once rather than in one.
 *
 * Writing x and o back. Every block reads x and o, so none may overwrite them while others
 * still read. Each block, once done with them, takes a ticket (an atomic counter); the block
 * that draws the last one knows every other block has finished reading, writes o and x as
 * k_norm_add_norm would, and resets the counter for the next launch. No block waits for
 * another.
 *
 * The same bits as the two kernels it replaces, so that a decode step (which folds) and a
 * verify pass (which does not: the fold is for one input) agree bit for bit:
 *   - the sum of squares is taken in k_norm_add_norm's order: that kernel's threads
 *     (k_norm_threads) are virtual here - warp w of this block sums virtual warps w, w + 8, ...,
 *     each lane its elements in index order, then the warp sum, then block_sum's final sum over
 *     the virtual warps;
 *   - x + (o inv) wn is the same correctly rounded multiplies and add (__fmul_rn, __fadd_rn in
 *     both: no contraction into an fma);
 *   - the row's dot product is matvec.cu's (each lane's chunks in column order into one fma
 *     chain via mv_dot4, the warp sum, the K slices in order, K = mv_decode_split).
 * The op test (tests/kernels/cuda_ops.cu) checks all of it against the two kernels. */
#include <type_traits>

#include "kcommon.cuh"
#include "matvec.cuh"

#define FOLD_F                                                                                     \
    2 /* weight chunks a lane loads before the PDL wait (matvec.cu's lean kernel's F)              \
       */

/* x + (o inv) s, as k_norm_add_norm computes it (s: the norm's scale, has_w: there is one). */
__device__ __forceinline__ float fold_x(float x, float o, float inv, float s, bool has_w) {
    float v = __fmul_rn(o, inv);
    if (has_w) v = __fmul_rn(v, s);
    return __fadd_rn(x, v);
}

/* acc + the dot product of one 16-byte chunk of weights (wv) with x + norm(o) at columns
 * c .. c + V - 1 (xv: x there, already loaded). */
template <typename T>
__device__ __forceinline__ float fold_dot(const uint4 &wv, const float *xv, const float *o,
                                          const T *wn, int c, float inv, float acc) {
    constexpr int V = vec16<T>::n;
    float wf[V], sc[V];
    unpack16<T>(wv, wf);
    const bool hw = wn != nullptr;
    if (hw) unpack16<T>(__ldg(reinterpret_cast<const uint4 *>(wn + c)), sc);
#pragma unroll
    for (int q = 0; q < V / 4; q++) {
        const float4 ov = *reinterpret_cast<const float4 *>(o + c + 4 * q);
        const float *xq = xv + 4 * q;
        const float4 xn = make_float4(fold_x(xq[0], ov.x, inv, hw ? sc[4 * q] : 1.0f, hw),
                                      fold_x(xq[1], ov.y, inv, hw ? sc[4 * q + 1] : 1.0f, hw),
                                      fold_x(xq[2], ov.z, inv, hw ? sc[4 * q + 2] : 1.0f, hw),
                                      fold_x(xq[3], ov.w, inv, hw ? sc[4 * q + 3] : 1.0f, hw));
        acc = mv_dot4(wf + 4 * q, xn, acc);
    }
    return acc;
}

/* V floats of x at c into xv. */
template <int V> __device__ __forceinline__ void fold_load_x(float *xv, const float *x, int c) {
#pragma unroll
    for (int q = 0; q < V / 4; q++) {
        const float4 v = *reinterpret_cast<const float4 *>(x + c + 4 * q);
        xv[4 * q] = v.x;
        xv[4 * q + 1] = v.y;
        xv[4 * q + 2] = v.z;
        xv[4 * q + 3] = v.w;
    }
}

#define FOLD_VWARPS (1024 / 32 / MV_WARPS) /* virtual warps a warp takes at most (nt <= 1024) */

/* One segment (L.seg[0]), one input, blocks of MV_WARPS warps, split K: warp w takes slice
 * w % K of row blockIdx.x * (MV_WARPS / K) + w / K. nt: k_norm_add_norm's threads for a row of
 * cols (at most 1024); PER: at least its elements a thread (1 up to 1024 columns, 4 up to 4096).
 * Latency is what this kernel is about, so after the wait every load of the sum of squares and
 * the x of the first F chunks go out at once: one round trip, then the sums (o's chunks come
 * from L1 then, where the sum's loads left them). */
template <typename T, int PER>
__global__ void __launch_bounds__(MV_WARPS * 32)
    matvec_fold_kernel(const __grid_constant__ mv_launch L, float *x, float *o, const T *wn,
                       int cols, float eps, int nt, unsigned *ticket) {
    constexpr int V = vec16<T>::n, F = FOLD_F;
    __shared__ float red[32], part[MV_WARPS];
    __shared__ int last;
    const mv_seg &sg = L.seg[0];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, K = sg.k;
    const int row = (int)blockIdx.x * (MV_WARPS / K) + warp / K, slice = warp % K;
    const int c0 = (slice * 32 + lane) * V, stride = K * 32 * V;
    const bool live = row < sg.rows;
    const int nch = live && c0 < cols ? (cols - c0 + stride - 1) / stride : 0;
    const T *w = (const T *)sg.w + (size_t)(live ? row : 0) * cols + c0;
    uint4 f[F];
    k_launch_next();
    mv_first<T, F>(f, f, w, w, nch, stride, false);
    k_wait_only();

    /* The sum of squares of o in k_norm_add_norm's order (see the top of the file): warp w sums
     * virtual warps w, w + MV_WARPS, ... - all their loads first, with x's first chunks. */
    const int vwarps = nt / 32;
    float ov[FOLD_VWARPS][PER], xa[F][V];
#pragma unroll
    for (int j = 0; j < FOLD_VWARPS; j++)
#pragma unroll
        for (int k = 0; k < PER; k++) {
            const int vw = warp + j * MV_WARPS, i = vw * 32 + lane + k * nt;
            ov[j][k] = vw < vwarps && i < cols ? o[i] : 0.0f;
        }
#pragma unroll
    for (int ch = 0; ch < F; ch++)
        if (ch < nch) fold_load_x<V>(xa[ch], x, c0 + ch * stride);
#pragma unroll
    for (int j = 0; j < FOLD_VWARPS; j++) {
        const int vw = warp + j * MV_WARPS; /* uniform over the warp */
        if (vw >= vwarps) break;
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < PER; k++)
            if (vw * 32 + lane + k * nt < cols) ss = fmaf(ov[j][k], ov[j][k], ss);
        ss = warp_sum(ss);
        if (lane == 0) red[vw] = ss;
    }
    __syncthreads();
    const float ss = warp_sum(lane < vwarps ? red[lane] : 0.0f);
    const float inv = 1.0f / sqrtf(ss / cols + eps);

    float acc = 0.0f;
#pragma unroll
    for (int ch = 0; ch < F; ch++)
        if (ch < nch) acc = fold_dot<T>(f[ch], xa[ch], o, wn, c0 + ch * stride, inv, acc);
    for (int ch = F; ch < nch; ch++) {
        const int c = c0 + ch * stride;
        float xv[V];
        fold_load_x<V>(xv, x, c);
        acc = fold_dot<T>(__ldcs(reinterpret_cast<const uint4 *>(w + ch * stride)), xv, o, wn, c,
                          inv, acc);
    }
    acc = warp_sum(acc);
    if (K == 1) {
        if (live && lane == 0) mv_store(sg, 0, row, acc, 0.0f);
    } else {
        if (lane == 0) part[warp] = acc;
        __syncthreads();
        if (live && lane == 0 && slice == 0) {
            float v = 0.0f;
            for (int k = 0; k < K; k++)
                v += part[warp + k];
            mv_store(sg, 0, row, v, 0.0f);
        }
    }

    /* Done reading x and o: the last block to get here writes them (see the top). The loads
     * above have returned (their values are summed) before the barrier and the ticket. */
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (int i = threadIdx.x; i < cols; i += blockDim.x) {
        float v = __fmul_rn(o[i], inv);
        if (wn) v = __fmul_rn(v, to_f32(wn[i]));
        o[i] = v;
        x[i] = __fadd_rn(x[i], v);
    }
    if (threadIdx.x == 0) *ticket = 0;
}

template <typename T>
static int fold_launch(cudaStream_t s, const k_mv_seg *seg, float *x, float *o, const void *wn,
                       int cols, float eps, unsigned *ticket) {
    constexpr int V = vec16<T>::n;
    const auto a16 = [](const void *p) { return ((uintptr_t)p & 15) == 0; };
    if (seg->epilogue == K_MV_GELU_PAIR || cols % V || !a16(x) || !a16(o) || !a16(seg->w) ||
        (wn && !a16(wn)))
        return 0;
    const int K = mv_decode_split(seg->rows, cols, 32 * V, std::is_same<T, __nv_bfloat16>::value);
    if (!K) return 0;
    mv_launch L = {};
    L.n_segs = 1;
    L.seg[0] = mv_seg_make(*seg, K, 0);
    L.blocks = (int)k_blocks((size_t)seg->rows, (unsigned)(MV_WARPS / K));
    L.wb = MV_WARPS;
    const int nt = (int)k_norm_threads(cols);
    k_launch(cols <= 1024 ? matvec_fold_kernel<T, 1> : matvec_fold_kernel<T, 4>,
             dim3((unsigned)L.blocks), dim3(MV_WARPS * 32), s, L, x, o, (const T *)wn, cols, eps,
             nt, ticket);
    K_CHECK_LAUNCH();
    return 1;
}

extern "C" int k_matvec_fold(cudaStream_t s, const k_mv_seg *seg, int wdtype, float *x, float *o,
                             const void *wn, int cols, float eps, unsigned *ticket) {
    if (seg->rows <= 0 || cols <= 0 || cols > 4096 || !ticket ||
        (k_skip & (K_SKIP_MATVEC | K_SKIP_NORM_ADD)))
        return 0;
    if (wdtype == KDT_BF16) return fold_launch<__nv_bfloat16>(s, seg, x, o, wn, cols, eps, ticket);
    if (wdtype == KDT_F16) return fold_launch<__half>(s, seg, x, o, wn, cols, eps, ticket);
    return fold_launch<float>(s, seg, x, o, wn, cols, eps, ticket);
}
