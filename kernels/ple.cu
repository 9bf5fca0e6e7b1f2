/* ple.cu: the end of a Gemma 4 decoder layer as one kernel (sm_90 thread block clusters): the
 * MLP's post-norm and residual add, the per-layer-input (PLE) gate with its GeLU times this
 * layer's per-layer input, the PLE projection, its norm and residual add, the layer scalar, and
 * the next layer's input norm.
 *
 * Why. As separate ops (backend_cuda_fuse.c without this) that is four kernels - norm + add,
 * the gate product, the projection, norm + add + norm - each of which waits for the whole of
 * the one before: on E4B 2.6 MB of weights (two 1.3 MB matrices) behind four grid-wide
 * dependencies a layer, about 8 us of a step's 3.2 ms per layer while the bytes alone take 0.6.
 * The matrices are small enough for one cluster of 16 blocks to hold both in shared memory
 * (160 KB a block on E4B), and the only values that cross blocks are the gated vector (P
 * floats) and two sums of squares: distributed shared memory and a cluster barrier carry
 * them, in place of kernel boundaries.
 *
 * Per row t (rows one after another, so a row's arithmetic does not depend on n: a verify
 * pass reproduces the decode steps bit for bit):
 *   h1 = x + rmsnorm(o) * w_o          every block, the whole vector (o: the down product)
 *   a  = gelu_tanh(Wg h1) * ple[t]     Wg's rows dealt to the blocks; a sent to every block
 *   p  = Wp a                          Wp's rows dealt to the blocks
 *   o  = rmsnorm(p) * w_p, x = (h1 + o) * scalar, xn = rmsnorm(x) * w_x (when asked)
 * The sums of squares of p and of x: each block's part, sent to every block, summed in block
 * order - the same bits in every block. What lands in memory (x, o, h, xn) is what the
 * separate ops leave there, to rounding: the sums are taken in other orders, so the last bits
 * differ from the four kernels' (GEMMA_CUDA_PLE=0).
 *
 * The weights. Each block copies its rows of both matrices to shared memory (cp.async) before
 * it waits for its predecessor (weights never depend on an earlier kernel), so the copy
 * overlaps the down product's tail; after the wait only activations move. */
#include <cooperative_groups.h>

#include "kcommon.cuh"

namespace cg = cooperative_groups;

#define PLE_CLUSTER 16 /* blocks of the cluster (a non-portable size: sm_90 allows 16) */
#define PLE_THREADS 512
#define PLE_WARPS   (PLE_THREADS / 32)
#define PLE_BATCH   4 /* projection rows a warp sums at once (their warp sums interleave) */

/* Rows of Wg and of Wp a block holds. */
static __host__ __device__ int ple_gate_rows(int ple) {
    return (ple + PLE_CLUSTER - 1) / PLE_CLUSTER;
}
static __host__ __device__ int ple_proj_rows(int hidden) {
    return (hidden + PLE_CLUSTER - 1) / PLE_CLUSTER;
}

/* Dynamic shared memory of a block: its rows of Wg [gr][H] and Wp [pr][P], then h1 [H], the
 * residual row [H], a [P] and its projection outputs [pr], in floats. */
static size_t ple_smem_bytes(int hidden, int ple, size_t wsize, int stage) {
    const size_t gr = (size_t)ple_gate_rows(ple), pr = (size_t)ple_proj_rows(hidden);
    return (stage == 1 ? (gr * hidden + pr * ple) * wsize : 0) +
           (2 * (size_t)hidden + ple + pr) * sizeof(float);
}

/* bytes (a multiple of 16) from global src to shared dst, 16 a thread at a time, without
 * waiting (cp.async.cg: through L2 only) */
__device__ __forceinline__ void ple_stage(void *dst, const void *src, size_t bytes) {
    for (size_t i = threadIdx.x * 16; i < bytes; i += PLE_THREADS * 16) {
        const unsigned d = (unsigned)__cvta_generic_to_shared((char *)dst + i);
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d),
                     "l"((const char *)src + i)
                     : "memory");
    }
}

/* This lane's part of the dot product of a row of cols weights with x (shared memory): 16-byte
 * chunks lane, lane + 32, ..., each into one fma chain in column order. The row is in shared
 * memory (STAGE) or in global memory (read once: streaming loads). */
template <typename T, bool STAGE>
__device__ __forceinline__ float ple_dot(const T *w, const float *x, int cols, int lane) {
    constexpr int V = vec16<T>::n;
    float acc = 0.0f, wf[V];
#pragma unroll 8
    for (int c = lane * V; c < cols; c += 32 * V) {
        const uint4 *p = reinterpret_cast<const uint4 *>(w + c);
        unpack16<T>(STAGE ? *p : __ldcs(p), wf);
#pragma unroll
        for (int q = 0; q < V / 4; q++) {
            const float4 xv = *reinterpret_cast<const float4 *>(x + c + 4 * q);
            acc = fmaf(wf[4 * q], xv.x, acc);
            acc = fmaf(wf[4 * q + 1], xv.y, acc);
            acc = fmaf(wf[4 * q + 2], xv.z, acc);
            acc = fmaf(wf[4 * q + 3], xv.w, acc);
        }
    }
    return acc;
}

/* Ask L2 for bytes at p (128-byte lines), without waiting. */
__device__ __forceinline__ void ple_prefetch_l2(const void *p, size_t bytes) {
    for (size_t i = threadIdx.x * 128; i < bytes; i += PLE_THREADS * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"((const char *)p + i));
}

template <typename T, int MODE>
__global__ void __launch_bounds__(PLE_THREADS, MODE == 1 ? 1 : 2)
    ple_block_kernel(const __grid_constant__ k_ple_args A) {
    k_launch_next();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char ple_smem[];
    __shared__ float red[32], wsum[PLE_WARPS], part_p[PLE_CLUSTER], part_x[PLE_CLUSTER];
    constexpr int C = PLE_CLUSTER;
    cg::cluster_group cluster = cg::this_cluster();
    const int r = (int)cluster.block_rank(), H = A.hidden, P = A.ple;
    const int gr = ple_gate_rows(P), pr = ple_proj_rows(H);
    const int ga = min(P, r * gr), gb = min(P, ga + gr); /* this block's rows of Wg */
    const int pa = min(H, r * pr), pb = min(H, pa + pr); /* and of Wp */
    /* MODE 1: the block's weight rows in shared memory, else read where they are (MODE 2: asked
     * of L2 first) */
    constexpr bool STAGE = MODE == 1;
    T *sg = STAGE ? reinterpret_cast<T *>(ple_smem) : (T *)A.gate + (size_t)ga * H;
    T *sp = STAGE ? reinterpret_cast<T *>(ple_smem) + (size_t)gr * H : (T *)A.proj + (size_t)pa * P;
    float *h1 = reinterpret_cast<float *>(
              ple_smem + (STAGE ? ((size_t)gr * H + (size_t)pr * P) * sizeof(T) : 0)),
          *xs = h1 + H, *av = xs + H, *pv = av + P;
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const T *w_o = (const T *)A.w_o, *w_p = (const T *)A.w_p, *w_x = (const T *)A.w_x;

    if (STAGE) {
        ple_stage(sg, (const T *)A.gate + (size_t)ga * H, (size_t)(gb - ga) * H * sizeof(T));
        ple_stage(sp, (const T *)A.proj + (size_t)pa * P, (size_t)(pb - pa) * P * sizeof(T));
        asm volatile("cp.async.commit_group;" ::: "memory");
    } else if (MODE == 2) {
        ple_prefetch_l2(sg, (size_t)(gb - ga) * H * sizeof(T));
        ple_prefetch_l2(sp, (size_t)(pb - pa) * P * sizeof(T));
    }
    /* A block may write another's shared memory only once that block has started: this
     * arrival says so; the wait for everyone's comes before the first such write. */
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    k_wait_only();
    if (STAGE) asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads(); /* every thread's copies landed */

    for (int t = 0; t < A.n; t++) {
        float *xt = A.x + (size_t)t * H, *ot = A.o + (size_t)t * H;
        if (t) __syncthreads(); /* the last row's h1, xs and pv are read to the end */
        /* h1 = x + rmsnorm(o) * w_o, in every block (rmsnorm_kernel's arithmetic) */
        float ss = 0.0f;
#pragma unroll 4
        for (int i = tid; i < H; i += PLE_THREADS) {
            const float v = __ldcg(ot + i);
            xs[i] = __ldcg(xt + i);
            h1[i] = v;
            ss += v * v;
        }
        ss = block_sum(ss, red);
        const float inv = 1.0f / sqrtf(ss / H + A.eps);
        for (int i = tid; i < H; i += PLE_THREADS) {
            float v = h1[i] * inv;
            if (w_o) v *= to_f32(w_o[i]);
            h1[i] = xs[i] + v;
        }
        __syncthreads();
        if (t == 0) asm volatile("barrier.cluster.wait.aligned;" ::: "memory");

        /* a = gelu_tanh(Wg h1) * ple[t]: this block's rows, a warp a row; every block gets a */
        for (int row = ga + warp; row < gb; row += PLE_WARPS) {
            const float g = warp_sum(ple_dot<T, STAGE>(sg + (size_t)(row - ga) * H, h1, H, lane));
            const float a = gelu_tanh(g) * __ldcg(A.ple_in + (size_t)t * A.ple_stride + row);
            if (lane < C) cluster.map_shared_rank(av, lane)[row] = a;
            if (lane == 0) A.h[(size_t)t * P + row] = a;
        }
        cluster.sync(); /* 1: a is whole in every block */

        /* p = Wp a: this block's rows, PLE_BATCH a warp at once; the block's sum of p^2 in row
         * order within a warp, then warp order */
        float sq = 0.0f;
        for (int row0 = pa + warp * PLE_BATCH; row0 < pb; row0 += PLE_WARPS * PLE_BATCH) {
            float d[PLE_BATCH];
#pragma unroll
            for (int k = 0; k < PLE_BATCH; k++)
                d[k] = row0 + k < pb
                           ? ple_dot<T, STAGE>(sp + (size_t)(row0 + k - pa) * P, av, P, lane)
                           : 0.0f;
#pragma unroll
            for (int k = 0; k < PLE_BATCH; k++)
                d[k] = warp_sum(d[k]);
#pragma unroll
            for (int k = 0; k < PLE_BATCH; k++)
                if (row0 + k < pb) {
                    if (lane == 0) pv[row0 + k - pa] = d[k];
                    sq += d[k] * d[k];
                }
        }
        if (lane == 0) wsum[warp] = sq;
        __syncthreads();
        if (tid < C) {
            float s = 0.0f;
            for (int w = 0; w < PLE_WARPS; w++)
                s += wsum[w];
            cluster.map_shared_rank(part_p, tid)[r] = s;
        }
        cluster.sync(); /* 2: every block's sum of p^2 is everywhere */

        float sp_all = 0.0f;
        for (int s = 0; s < C; s++)
            sp_all += part_p[s];
        const float invp = 1.0f / sqrtf(sp_all / H + A.eps);
        /* this block's slice: o = rmsnorm(p) * w_p, x = (h1 + o) * scalar */
        float sx = 0.0f;
        for (int i = pa + tid; i < pb; i += PLE_THREADS) {
            float v = pv[i - pa] * invp;
            if (w_p) v *= to_f32(w_p[i]);
            ot[i] = v;
            const float xv = (h1[i] + v) * A.scalar;
            xt[i] = xv;
            xs[i] = xv;
            sx += xv * xv;
        }
        if (!A.xn) continue; /* uniform over the cluster */
        sx = block_sum(sx, red);
        if (tid < C) cluster.map_shared_rank(part_x, tid)[r] = sx;
        cluster.sync(); /* 3: every block's sum of x^2 is everywhere */
        float sx_all = 0.0f;
        for (int s = 0; s < C; s++)
            sx_all += part_x[s];
        const float invx = 1.0f / sqrtf(sx_all / H + A.eps);
        float *xnt = A.xn + (size_t)t * H;
        for (int i = pa + tid; i < pb; i += PLE_THREADS) {
            const float v = xs[i] * invx;
            xnt[i] = w_x ? v * to_f32(w_x[i]) : v;
        }
    }
    /* No block writes another's shared memory after the last barrier it waited for: a block
     * may leave without waiting for the others. */
#else
    __trap(); /* never launched before sm_90 (k_ple_block_fits says no there) */
#endif
}

/* ---- launch ------------------------------------------------------------------------------ */

typedef void (*ple_fn)(const k_ple_args);

template <int MODE> static ple_fn ple_kernel_mode(int wdtype) {
    return wdtype == KDT_BF16  ? ple_block_kernel<__nv_bfloat16, MODE>
           : wdtype == KDT_F16 ? ple_block_kernel<__half, MODE>
                               : ple_block_kernel<float, MODE>;
}

static ple_fn ple_kernel_for(int wdtype, int stage) {
    return stage == 1   ? ple_kernel_mode<1>(wdtype)
           : stage == 2 ? ple_kernel_mode<2>(wdtype)
                        : ple_kernel_mode<0>(wdtype);
}

static size_t ple_wsize(int wdtype) {
    return wdtype == KDT_F32 ? 4 : 2;
}

static cudaLaunchConfig_t ple_config(int hidden, int ple, int wdtype, int stage, cudaStream_t s,
                                     cudaLaunchAttribute *attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(PLE_CLUSTER);
    cfg.blockDim = dim3(PLE_THREADS);
    cfg.dynamicSmemBytes = ple_smem_bytes(hidden, ple, ple_wsize(wdtype), stage);
    cfg.stream = s;
    attr[0] = k_cluster_attr(PLE_CLUSTER);
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = k_pdl;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    return cfg;
}

/* Whether the device runs the kernel for this shape: sm_90 or later, vectors of whole 16-byte
 * chunks, and a cluster of 16 blocks with this shared memory placed (the driver is asked once
 * a shape; a MIG or MPS share may place none). */
static int ple_fits_now(int hidden, int ple, int wdtype, int stage) {
    int dev = 0, major = 0, optin = 0;
    const int v = (int)(16 / ple_wsize(wdtype));
    if (hidden <= 0 || ple <= 0 || hidden % v || ple % v || cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) !=
            cudaSuccess ||
        major < 9)
        return 0;
    const size_t smem = ple_smem_bytes(hidden, ple, ple_wsize(wdtype), stage);
    if (smem + 1024 > (size_t)optin) return 0; /* and the static arrays */
    const ple_fn fn = ple_kernel_for(wdtype, stage);
    static int smem_set[3][3]; /* the largest shared memory each kernel was allowed */
    const int d = wdtype == KDT_BF16 ? 0 : wdtype == KDT_F16 ? 1 : 2;
    if (cudaFuncSetAttribute(fn, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess)
        return 0;
    if ((int)smem > smem_set[stage][d]) {
        if (cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) !=
            cudaSuccess)
            return 0;
        smem_set[stage][d] = (int)smem;
    }
    cudaLaunchAttribute attr[2];
    cudaLaunchConfig_t cfg = ple_config(hidden, ple, wdtype, stage, 0, attr);
    cfg.numAttrs = 1; /* the cluster only */
    int n = 0;
    return cudaOccupancyMaxActiveClusters(&n, fn, &cfg) == cudaSuccess && n > 0;
}

extern "C" int k_ple_block_fits(int hidden, int ple, int wdtype, int stage) {
    static struct { int hidden, ple, wdtype, stage, fits; } seen[16];
    static int n_seen = 0;
    for (int i = 0; i < n_seen; i++)
        if (seen[i].hidden == hidden && seen[i].ple == ple && seen[i].wdtype == wdtype &&
            seen[i].stage == stage)
            return seen[i].fits;
    const int fits = ple_fits_now(hidden, ple, wdtype, stage);
    cudaGetLastError(); /* a refused query only means no */
    if (n_seen < 16) seen[n_seen++] = {hidden, ple, wdtype, stage, fits};
    return fits;
}

extern "C" void k_ple_block(cudaStream_t s, const k_ple_args *a, int wdtype) {
    if (a->n <= 0) return;
    if (!k_ple_block_fits(a->hidden, a->ple, wdtype, a->stage)) {
        fprintf(stderr, "%s:%d: ple_block: hidden %d, ple %d, dtype %d do not fit this device\n",
                __FILE__, __LINE__, a->hidden, a->ple, wdtype);
        exit(1);
    }
    if (k_skip & K_SKIP_PLE) return;
    cudaLaunchAttribute attr[2];
    cudaLaunchConfig_t cfg = ple_config(a->hidden, a->ple, wdtype, a->stage, s, attr);
    cudaLaunchKernelEx(&cfg, ple_kernel_for(wdtype, a->stage), *a);
    K_CHECK_LAUNCH();
}
