/* rmsnorm.cu: RMSNorm over many short vectors (Gemma 4 normalises the residual stream, every
 * query and key head, and the values without a scale). One block per vector: the vector is
 * read once into registers / L1, its sum of squares reduced over the block, then scaled. */
#include <cooperative_groups.h>
#include <string.h>

#include "kcommon.cuh"

namespace cg = cooperative_groups;

/* Threads a block for rows of dim: a thread an element for rows of up to 1024; longer rows in as
 * few threads as hold 4 elements each (at most 1024). Both kernels below sum a row in the same
 * threads (thread t its elements t, t + threads, ... in order, then block_sum), so the fused
 * norm_add_norm leaves the bits k_rmsnorm would. Measured on the H200 (docs/bench_gpu.md,
 * session 24 calls 3-4, one process, alternating; norm_add_norm): E4B's 2560-wide rows in 640
 * threads instead of 1024 made the step 0.014-0.031 ms faster in five pairs out of five, 512
 * threads (5 each) 0.05 ms slower; the small model's 256-wide rows 4 a thread (64 threads)
 * 1.3 % slower. */
static unsigned norm_threads(int dim) {
    const int want = dim <= 1024 ? dim : (dim + 3) / 4;
    return want >= 1024 ? 1024 : (unsigned)((want + 31) / 32 * 32);
}

template <typename T>
__global__ void rmsnorm_kernel(float *out, const float *x, const T *w, int dim, float eps) {
    k_wait_prior();
    __shared__ float red[32];
    const float *xv = x + (size_t)blockIdx.x * dim;
    float *ov = out + (size_t)blockIdx.x * dim;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x)
        ss += xv[i] * xv[i];
    ss = block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = xv[i] * inv;
        ov[i] = w ? v * to_f32(w[i]) : v;
    }
}

extern "C" void k_rmsnorm(cudaStream_t s, float *out, const float *x, const void *w, int wdtype,
                          int n_vec, int dim, float eps) {
    if (n_vec <= 0 || (k_skip & K_SKIP_RMSNORM)) return;
    const unsigned threads = norm_threads(dim);
    if (wdtype == KDT_BF16)
        k_launch(rmsnorm_kernel<__nv_bfloat16>, dim3(n_vec), dim3(threads), s, out, x,
                 (const __nv_bfloat16 *)w, dim, eps);
    else if (wdtype == KDT_F16)
        k_launch(rmsnorm_kernel<__half>, dim3(n_vec), dim3(threads), s, out, x, (const __half *)w,
                 dim, eps);
    else
        k_launch(rmsnorm_kernel<float>, dim3(n_vec), dim3(threads), s, out, x, (const float *)w,
                 dim, eps);
    K_CHECK_LAUNCH();
}

/* ---- fused neighbours -------------------------------------------------------------------- */
/* What the forward pass does after every block - normalise the block's output, add it to the
 * residual stream, normalise the stream for the next block - in one pass per row instead of
 * three launches and three round trips: o = rmsnorm(o) * wo; x += o; then, when xn is
 * non-NULL, xn = rmsnorm(x) * wx. o and x are written back, so the result is exactly what the
 * separate ops leave in memory (a row is summed in k_rmsnorm's threads: norm_threads).
 *
 * Latency is all this kernel has (a decode row is 2560 floats; ncu measured the loop form at
 * 4.5-6.3 us a row, three times a layer: docs/bench_gpu.md). So each thread holds its PER
 * elements of o, x and both scales in registers: the scales are loaded BEFORE waiting for the
 * previous kernel (weights never depend on it), o and x together right after, and nothing is
 * read twice - one memory round trip instead of one per loop trip. Each thread sums its
 * elements in index order and the block sums as block_sum does, so the result does not depend
 * on PER, nor on how many rows a launch has. (Rows over 4096 - PER 8 and 16 - spill a few
 * registers: a 1024-thread block has 64 a thread.) */
template <typename T, int PER>
__global__ void __launch_bounds__(1024)
    norm_add_norm_kernel(float *x, float *o, const T *wo, float *xn, const T *wx, int dim,
                         float eps) {
    __shared__ float red[32];
    float *xr = x + (size_t)blockIdx.x * dim, *orow = o + (size_t)blockIdx.x * dim;
    float ov[PER], xv[PER], wov[PER], wxv[PER];
    k_launch_next();
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        wov[k] = wo && i < dim ? to_f32(wo[i]) : 1.0f;
        wxv[k] = wx && i < dim ? to_f32(wx[i]) : 1.0f;
    }
    k_wait_only();
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        ov[k] = i < dim ? orow[i] : 0.0f;
        xv[k] = i < dim ? xr[i] : 0.0f;
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++)
        if (threadIdx.x + k * blockDim.x < dim) ss += ov[k] * ov[k];
    ss = block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / dim + eps);
    float ss2 = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i >= dim) continue;
        float v = ov[k] * inv;
        if (wo) v *= wov[k];
        orow[i] = v;
        xv[k] += v;
        xr[i] = xv[k];
        ss2 += xv[k] * xv[k];
    }
    if (!xn) return; /* uniform over the block: no barrier is skipped by some threads only */
    ss2 = block_sum(ss2, red);
    const float inv2 = 1.0f / sqrtf(ss2 / dim + eps);
    float *xnr = xn + (size_t)blockIdx.x * dim;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < dim) xnr[i] = wx ? xv[k] * inv2 * wxv[k] : xv[k] * inv2;
    }
}

template <typename T, int PER>
static void norm_add_norm_launch(cudaStream_t s, float *x, float *o, const void *wo, float *xn,
                                 const void *wx, int n_vec, int dim, float eps, unsigned threads) {
    k_launch(norm_add_norm_kernel<T, PER>, dim3(n_vec), dim3(threads), s, x, o, (const T *)wo, xn,
             (const T *)wx, dim, eps);
}

template <typename T>
static void norm_add_norm_launch_per(cudaStream_t s, float *x, float *o, const void *wo, float *xn,
                                     const void *wx, int n_vec, int dim, float eps,
                                     unsigned threads) {
    const int per = (int)((dim + threads - 1) / threads);
    /* norm_threads gives 1 element a thread up to 1024, 3 or 4 up to 4096, and more only
     * to 1024 threads: PER 2 never comes */
    if (per <= 1)
        norm_add_norm_launch<T, 1>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else if (per <= 4)
        norm_add_norm_launch<T, 4>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else if (per <= 8)
        norm_add_norm_launch<T, 8>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else
        norm_add_norm_launch<T, 16>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
}

extern "C" void k_norm_add_norm(cudaStream_t s, float *x, float *o, const void *wo, float *xn,
                                const void *wx, int wdtype, int n_vec, int dim, float eps) {
    if (n_vec <= 0 || (k_skip & K_SKIP_NORM_ADD)) return;
    if (dim > 16 * 1024) {
        fprintf(stderr, "%s:%d: norm_add_norm: rows of %d (at most %d)\n", __FILE__, __LINE__, dim,
                16 * 1024);
        exit(1);
    }
    const unsigned threads = norm_threads(dim);
    if (wdtype == KDT_BF16)
        norm_add_norm_launch_per<__nv_bfloat16>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else if (wdtype == KDT_F16)
        norm_add_norm_launch_per<__half>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else
        norm_add_norm_launch_per<float>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    K_CHECK_LAUNCH();
}

/* ---- norm_add_norm over a cluster, o summed from partials ---------------------------------- */
/* Why. After an MLP (mlp.cu) a step ran mlp_reduce_kernel - each output the sum of the 132
 * blocks' partials - and then norm_add_norm, whose one block a row the norm needs: two kernel
 * boundaries of about 2 us each on the step's critical path, and one block cannot read
 * 132 x 2560 partials fast enough to take the sums in. Here a row is one cluster of CL blocks:
 * each sums its share of the columns' partials, the blocks trade their warps' sums of squares
 * through distributed shared memory, and each finishes its columns. bench/mlp_slice.cu (session
 * 29 call 1, E4B's MLP, chains of 42 layers): 41.9 us a layer against 50.9 for the three kernels.
 *
 * The same bits as mlp_reduce_kernel then norm_add_norm_kernel. Column j's partials are added
 * as mlp_reduce_kernel adds them: 8 chains (partial b in chain b % 8, each from 0.0f in b order),
 * then the chains in order. norm_add_norm's thread t (nthreads = norm_threads(dim) of them,
 * elements t, t + nthreads, ...) is thread t - r TB of cluster block r (TB = nthreads / CL,
 * whole warps), so every thread's sum of squares and every warp's butterfly are the same; each
 * block gathers all the warps' sums and finishes them as block_sum does. The block's other
 * threads (TB PER in all: one a column) only help with the partials. partial NULL: o is read as
 * it is (norm_add_norm spread over a cluster). */

/* block_sum for a row spread over the cluster: v is this thread's sum (0 past the row's norm
 * threads); the warps of the TB norm threads of block r are warps r TB / 32 ... of the row. Every
 * thread of every block of the cluster calls it (it holds a cluster barrier); red: 32 floats, a
 * buffer no other call of the same launch uses. */
__device__ __forceinline__ float cluster_row_sum(float v, float *red, int TB, int W) {
    cg::cluster_group cl = cg::this_cluster();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = (int)cl.block_rank();
    v = warp_sum(v);
    if (lane == 0 && (int)threadIdx.x < TB)
        for (int q = 0; q < (int)cl.num_blocks(); q++)
            cl.map_shared_rank(red, q)[r * (TB >> 5) + warp] = v;
    cl.sync(); /* release / acquire: every block's sums are in every block */
    v = lane < W ? red[lane] : 0.0f;
    return warp_sum(v);
}

template <typename T, int PER>
__global__ void __launch_bounds__(1024)
    norm_add_parts_kernel(const float *__restrict__ partial, int parts, float *x, float *o,
                          const T *wo, float *xn, const T *wx, int dim, int nthreads, float eps,
                          int late) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ float col[1024], red1[32], red2[32];
    cg::cluster_group cl = cg::this_cluster();
    const int TB = nthreads / (int)cl.num_blocks(), W = nthreads >> 5, tl = threadIdx.x;
    const bool norm = tl < TB;               /* one of norm_add_norm's threads */
    const int t = (int)cl.block_rank() * TB + tl % TB; /* which one (or whose columns) */
    float *xr = x + (size_t)blockIdx.y * dim, *orow = o + (size_t)blockIdx.y * dim;
    float ov[PER], xv[PER], wov[PER], wxv[PER];
    /* a block may write another's shared memory only once that one has started: this arrival
     * says so, and the wait comes before the first remote write (attention.cu's pattern) */
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    if (!late) k_launch_next();
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = t + k * nthreads;
        wov[k] = wo && i < dim ? to_f32(wo[i]) : 1.0f;
        wxv[k] = wx && i < dim ? to_f32(wx[i]) : 1.0f;
    }
    k_wait_only();
#pragma unroll
    for (int k = 0; k < PER; k++) { /* x first: its round trip under the partials' */
        const int i = t + k * nthreads;
        xv[k] = norm && i < dim ? xr[i] : 0.0f;
    }
    { /* thread tl's column: t + (tl / TB) nthreads, into col[tl] */
        const int j = t + tl / TB * nthreads;
        float v = 0.0f;
        if (j < dim && !partial)
            v = orow[j];
        else if (j < dim) {
            const float *p = partial + (size_t)blockIdx.y * parts * dim + j;
            float c[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
            int b0 = 0;
            for (; b0 + 32 <= parts; b0 += 32) /* 32 loads in flight a thread */
#pragma unroll
                for (int q = 0; q < 32; q++)
                    c[q & 7] += p[(size_t)(b0 + q) * dim];
            for (; b0 < parts; b0 += 8)
#pragma unroll
                for (int q = 0; q < 8; q++)
                    if (b0 + q < parts) c[q] += p[(size_t)(b0 + q) * dim];
            v = c[0];
#pragma unroll
            for (int q = 1; q < 8; q++)
                v += c[q];
        }
        col[tl] = v;
    }
    __syncthreads();
    if (late) k_launch_next();
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        ov[k] = norm && t + k * nthreads < dim ? col[k * TB + tl] : 0.0f;
        if (norm && t + k * nthreads < dim) ss += ov[k] * ov[k];
    }
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    ss = cluster_row_sum(ss, red1, TB, W);
    const float inv = 1.0f / sqrtf(ss / dim + eps);
    float ss2 = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = t + k * nthreads;
        if (!norm || i >= dim) continue;
        float v = ov[k] * inv;
        if (wo) v *= wov[k];
        orow[i] = v;
        xv[k] += v;
        xr[i] = xv[k];
        ss2 += xv[k] * xv[k];
    }
    if (!xn) return; /* uniform over the cluster: no barrier is skipped by some blocks only */
    ss2 = cluster_row_sum(ss2, red2, TB, W);
    const float inv2 = 1.0f / sqrtf(ss2 / dim + eps);
    float *xnr = xn + (size_t)blockIdx.y * dim;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = t + k * nthreads;
        if (norm && i < dim) xnr[i] = wx ? xv[k] * inv2 * wxv[k] : xv[k] * inv2;
    }
#endif
}

/* The blocks a cluster for rows of dim (0: not here): as many as divide the norm's warps evenly,
 * at most 8 (the portable cluster size), each at most 1024 threads. GEMMA_CUDA_NORM_CL=c asks
 * for c (an experiment switch, read at each launch; taken only where it divides). */
static int norm_add_cl(int dim, unsigned *threads, int *per) {
    static int major = -1;
    if (major < 0) {
        int dev;
        major = 0;
        if (cudaGetDevice(&dev) == cudaSuccess)
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    }
    if (major < 9 || dim <= 0 || dim > 4096) return 0;
    *threads = norm_threads(dim);
    *per = (int)((dim + *threads - 1) / *threads) <= 1 ? 1 : 4;
    const int W = (int)(*threads / 32);
    const char *e = getenv("GEMMA_CUDA_NORM_CL");
    const int want = e && *e ? atoi(e) : 0;
    if (want >= 1 && want <= 16 && W % want == 0 && (int)(*threads / want) * *per <= 1024)
        return want;
    for (int c = 8; c > 1; c--)
        if (W % c == 0 && (int)(*threads / c) * *per <= 1024) return c;
    return *threads * *per <= 1024 ? 1 : 0;
}

extern "C" int k_norm_add_clusters(int dim) {
    unsigned threads;
    int per;
    return norm_add_cl(dim, &threads, &per);
}

template <typename T>
static void norm_add_parts_launch(cudaStream_t s, const k_norm_add *na, float *o,
                                  const float *partial, int parts, int n_vec, int dim) {
    unsigned threads;
    int per;
    const int cl = norm_add_cl(dim, &threads, &per);
    const dim3 grid((unsigned)cl, (unsigned)n_vec), block(threads / cl * per);
    const char *e = getenv("GEMMA_CUDA_NORM_LATE"); /* experiment: trigger after the sums */
    const int late = e && *e && strcmp(e, "0");
    void (*kern)(const float *, int, float *, float *, const T *, float *, const T *, int, int,
                 float, int) = per == 1 ? norm_add_parts_kernel<T, 1> : norm_add_parts_kernel<T, 4>;
    if (cl > 8) cudaFuncSetAttribute(kern, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    k_launch_clusters(kern, grid, block, cl, s, partial, parts, na->x, o, (const T *)na->wo, na->xn,
                      (const T *)na->wx, dim, (int)threads, na->eps, late);
}

extern "C" void k_norm_add_norm_parts(cudaStream_t s, const k_norm_add *na, float *o,
                                      const float *partial, int parts, int n_vec, int dim) {
    if (n_vec <= 0 || (!partial && (k_skip & K_SKIP_NORM_ADD))) return;
    if (!k_norm_add_clusters(dim)) {
        fprintf(stderr, "%s:%d: k_norm_add_norm_parts: rows of %d on this device\n", __FILE__,
                __LINE__, dim);
        exit(1);
    }
    if (na->wdtype == KDT_BF16)
        norm_add_parts_launch<__nv_bfloat16>(s, na, o, partial, parts, n_vec, dim);
    else if (na->wdtype == KDT_F16)
        norm_add_parts_launch<__half>(s, na, o, partial, parts, n_vec, dim);
    else
        norm_add_parts_launch<float>(s, na, o, partial, parts, n_vec, dim);
    K_CHECK_LAUNCH();
}

/* The attention block's q / k / v after their projections, up to K_NRS_PARTS tensors in one
 * launch (kernels.h: k_norm_rope_store): one block per head vector, one thread per rotated
 * pair, the per-element arithmetic of rmsnorm_kernel then rope_kernel (the sum of squares taken
 * a pair a thread, so its last bits may differ from theirs); a part with a ring also stores the
 * result there (kv_write). Blocks are dealt to the parts in order. */
struct nrs_launch {
    k_nrs_part part[K_NRS_PARTS];
    int block0[K_NRS_PARTS];
    int n_parts;
};

template <typename T>
__global__ void norm_rope_store_kernel(const nrs_launch L, int dim, float eps, const int *dpos,
                                       int pos0) {
    k_nrs_part p = L.part[0];
    int b0 = 0;
#pragma unroll
    for (int k = 1; k < K_NRS_PARTS; k++)
        if (k < L.n_parts && (int)blockIdx.x >= L.block0[k]) {
            p = L.part[k];
            b0 = L.block0[k];
        }
    __shared__ float red[32];
    const int half = dim / 2, i = threadIdx.x, v = (int)blockIdx.x - b0;
    float *xh = p.x + (size_t)v * dim;
    const bool live = i < half;
    const int t = v / p.heads;
    /* What does not depend on the previous kernel first - the scale, the rotation (the
     * position word is written before the step starts) - so that after the wait there is one
     * memory round trip, for x. Same arithmetic as rmsnorm_kernel then rope_kernel. */
    k_launch_next();
    float w1 = 1.0f, w2 = 1.0f, sn = 0.0f, cs = 1.0f;
    bool rot = false;
    if (live && p.w) {
        const T *w = (const T *)p.w;
        w1 = to_f32(w[i]);
        w2 = to_f32(w[i + half]);
    }
    if (live && p.inv_freq) {
        const float f = p.inv_freq[i];
        rot = f != 0.0f;
        if (rot) sincosf(f * (float)(step_pos(dpos, pos0) + t), &sn, &cs);
    }
    k_wait_only();
    const float x1 = live ? xh[i] : 0.0f, x2 = live ? xh[i + half] : 0.0f;
    const float ss = block_sum(x1 * x1 + x2 * x2, red);
    if (!live) return;
    const float inv = 1.0f / sqrtf(ss / dim + eps);
    float a = x1 * inv, b = x2 * inv;
    if (p.w) {
        a *= w1;
        b *= w2;
    }
    if (rot) {
        const float ra = a * cs - b * sn, rb = b * cs + a * sn;
        a = ra;
        b = rb;
    }
    xh[i] = a;
    xh[i + half] = b;
    if (p.cache) {
        const int row = (step_pos(dpos, pos0) + t) % p.len;
        float *cr = p.cache + ((size_t)row * p.heads + v % p.heads) * dim;
        cr[i] = a;
        cr[i + half] = b;
    }
}

extern "C" void k_norm_rope_store(cudaStream_t s, const k_nrs_part *parts, int n_parts, int wdtype,
                                  int dim, float eps, const int *dpos, int pos0) {
    if (n_parts < 1 || n_parts > K_NRS_PARTS || dim < 2 || dim % 2 || dim / 2 > 1024) {
        fprintf(stderr, "%s:%d: k_norm_rope_store: %d parts (1 .. %d), dim %d (even, <= 2048)\n",
                __FILE__, __LINE__, n_parts, K_NRS_PARTS, dim);
        exit(1);
    }
    if (k_skip & K_SKIP_NORM_ROPE) return;
    nrs_launch L = {};
    unsigned blocks = 0;
    for (int k = 0; k < n_parts; k++) {
        L.part[k] = parts[k];
        L.block0[k] = (int)blocks;
        blocks += (unsigned)parts[k].n_vec;
    }
    L.n_parts = n_parts;
    if (!blocks) return;
    const unsigned threads = (unsigned)((dim / 2 + 31) / 32 * 32);
    if (wdtype == KDT_BF16)
        k_launch(norm_rope_store_kernel<__nv_bfloat16>, dim3(blocks), dim3(threads), s, L, dim, eps,
                 dpos, pos0);
    else if (wdtype == KDT_F16)
        k_launch(norm_rope_store_kernel<__half>, dim3(blocks), dim3(threads), s, L, dim, eps, dpos,
                 pos0);
    else
        k_launch(norm_rope_store_kernel<float>, dim3(blocks), dim3(threads), s, L, dim, eps, dpos,
                 pos0);
    K_CHECK_LAUNCH();
}
