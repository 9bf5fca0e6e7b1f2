/* step_shape.cu: what a decode step's shape costs on this GPU, apart from the model's arithmetic.
 *
 * E4B's decode step is 516 kernels: per layer six weight streams (q+k+v 15.7 MB, o 5.2 MB,
 * gate+up 105 MB, down 52 MB, two per-layer products of 1.3 MB) and small latency-bound kernels
 * between them. The weights alone would take 2.17 ms at copy bandwidth; the step takes 3.46.
 * This benchmark streams the same bytes in the same order with a trivial reduction (no model)
 * and times three ways of running the sequence, so the difference between them is the price of
 * the structure itself:
 *
 *   chain     one kernel per stream and per small op, in a CUDA graph with programmatic dependent
 *             launch - what the engine does now (each stream kernel loads its first chunks before
 *             it waits for its predecessor, as matvec.cu does);
 *   barrier   one persistent cooperative kernel: the same streams as phases separated by grid
 *             barriers, each block loading its first chunks of the next phase before it waits,
 *             and the small ops done by one block between two barriers - a "megakernel";
 *   stream    the same persistent kernel without barriers or small ops: the bytes alone.
 *
 * The persistent kernel runs at 2, 4 and 5 blocks of 256 threads a multiprocessor, and in calm's
 * shape (zeux/calm, kernel_forward): one block of 1024 threads a multiprocessor, so that a barrier
 * waits for 132 arrivals.
 *
 * Then the chain again with streams shaped like matrix-vector products of 2560 bf16 columns
 * (5120-byte rows), to see what the layout of the reads costs, with the trivial reduction or
 * with a product's arithmetic ("math": bf16 weights against x read through L1, or "x in shared":
 * x copied into each block's shared memory after the wait, as calm's kernels keep it):
 *
 *   rows      matvec.cu's decode layout: a warp per row, a block per 8 rows, as many blocks as
 *             that makes (several waves for the large matrices), 2 chunks per lane loaded
 *             before the PDL wait, at most 6 blocks of a kernel per multiprocessor (the lean
 *             kernel's 34 registers), so that one block of the next kernel fits beside them;
 *   even      the rows dealt evenly to the warps of B blocks per multiprocessor, each warp a
 *             run of consecutive rows ("runs") or, warp g of W, rows g, g + W, ... ("strided"),
 *             its first U chunks loaded before the wait;
 *   split     a block of K warps reads one row together (warp k its chunks k, k + K, ...), the
 *             blocks of a resident grid take rows b, b + G, ..., UR rows in flight a warp.
 *
 * Measured on an H200 in docs/bench_gpu.md (session 14).
 *
 * Built with the rest (build/bench/step_shape) wherever nvcc exists, or by hand on the GPU machine:
 * nvcc -O3 -arch=sm_90 -o step_shape bench/step_shape.cu && ./step_shape
 * Prints ms per step for each way, the per-boundary cost, and the share of copy bandwidth. */
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace cg = cooperative_groups;

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define THREADS 256
#define U       8 /* 16-byte loads in flight per thread */
#define SMALL_N 2560

/* One layer: the streams in MB (0: a small op, one block over SMALL_N floats). */
static const double LAYER[] = {15.7, 0, 0, 0, 5.2, 0, 105.0, 52.0, 0, 1.3, 1.3, 0};
#define NL     42
#define NSTEPS ((int)(sizeof LAYER / sizeof LAYER[0]))

struct phase {
    size_t off, n16; /* first 16-byte word and count; n16 == 0: a small op */
};

__device__ __forceinline__ float fold(uint4 u) {
    return __uint_as_float(u.x & 0x3f800000u) + __uint_as_float(u.y & 0x3f800000u) +
           __uint_as_float(u.z & 0x3f800000u) + __uint_as_float(u.w & 0x3f800000u);
}

/* Stream words [0, n) of w with `nt` threads, thread `t`; first[] holds this thread's first U
 * words, loaded earlier. */
__device__ float stream(const uint4 *w, size_t n, size_t t, size_t nt, const uint4 *first) {
    float acc = 0.0f;
#pragma unroll
    for (int u = 0; u < U; u++)
        if (t + u * nt < n) acc += fold(first[u]);
    for (size_t i = t + U * nt; i < n; i += U * nt) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            v[u] = i + u * nt < n ? __ldcs(w + i + u * nt) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < U; u++)
            acc += fold(v[u]);
    }
    return acc;
}

__device__ void load_first(uint4 *first, const uint4 *w, size_t n, size_t t, size_t nt) {
#pragma unroll
    for (int u = 0; u < U; u++)
        first[u] = t + u * nt < n ? __ldcs(w + t + u * nt) : make_uint4(0, 0, 0, 0);
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The small op: x = x / rms(x) over SMALL_N floats, one block of NT threads (a norm's latency
 * chain). */
template <int NT = THREADS> __device__ void small_op(float *x) {
    constexpr int PER = (SMALL_N + NT - 1) / NT;
    __shared__ float red[NT / 32];
    float v[PER], ss = 0.0f;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int j = threadIdx.x + i * NT;
        v[i] = SMALL_N % NT == 0 || j < SMALL_N ? __ldcg(x + j) : 0.0f;
        ss += v[i] * v[i];
    }
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
    __syncthreads();
    ss = 0.0f;
    for (int i = 0; i < NT / 32; i++)
        ss += red[i];
    const float inv = rsqrtf(ss / SMALL_N + 1e-6f);
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int j = threadIdx.x + i * NT;
        if (SMALL_N % NT == 0 || j < SMALL_N) x[j] = v[i] * inv + 1e-3f;
    }
    __syncthreads();
}

/* Programmatic dependent launch, as kcommon.cuh (Hopper and later; before, the chain waits). */
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
    cudaGridDependencySynchronize();
#endif
}

static int pdl_on; /* the device is sm_90 or later */

__global__ void __launch_bounds__(THREADS) stream_kernel(const uint4 *w, size_t n, float *sink) {
    const size_t nt = (size_t)gridDim.x * THREADS, t = (size_t)blockIdx.x * THREADS + threadIdx.x;
    uint4 first[U];
    load_first(first, w, n, t, nt);
    pdl_wait();
    const float a = stream(w, n, t, nt, first);
    if (a == 12345.0f) sink[t] = a; /* keeps the loads */
}

__global__ void __launch_bounds__(THREADS) small_kernel(float *x) {
    pdl_wait();
    small_op(x);
}

/* ---- streams shaped like decode products (rows of 5120 bytes: 2560 bf16 columns) ---- */
#define ROWB 5120
#define RCH  (ROWB / 512) /* a warp's 512-byte chunks per row */

/* The arithmetic of a matrix-vector product on one chunk (MATH): 8 bf16 weights against the
 * lane's 8 floats of x (two 16-byte loads through L1, as matvec.cu's kernels do); else the
 * trivial fold. */
template <bool MATH, bool XS = false>
__device__ __forceinline__ float chunk_dot(uint4 u, const float *__restrict__ x, int col,
                                           float acc) {
    if (!MATH) return acc + fold(u);
    const float4 *xp = reinterpret_cast<const float4 *>(x + col);
    const float4 a = XS ? xp[0] : __ldg(xp), b = XS ? xp[1] : __ldg(xp + 1); /* XS: shared */
    const float w[8] = {__uint_as_float(u.x << 16), __uint_as_float(u.x & 0xffff0000u),
                        __uint_as_float(u.y << 16), __uint_as_float(u.y & 0xffff0000u),
                        __uint_as_float(u.z << 16), __uint_as_float(u.z & 0xffff0000u),
                        __uint_as_float(u.w << 16), __uint_as_float(u.w & 0xffff0000u)};
    return acc + (w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w) +
           (w[4] * b.x + w[5] * b.y + w[6] * b.z + w[7] * b.w);
}

/* matvec.cu's decode layout: warp per row, block per 8 rows, 2 chunks a lane before the wait. */
/* XS: x is copied into shared memory after the wait, and the dot products read it there (as
 * calm's kernels do). */
template <bool MATH, bool XS>
__global__ void __launch_bounds__(THREADS)
    rows_kernel(const uint4 *w, int rows, float *sink, const float *__restrict__ x) {
    extern __shared__ float
        limiter[]; /* dynamic shared memory caps the blocks a multiprocessor holds */
    const int lane = threadIdx.x & 31, row = blockIdx.x * 8 + (threadIdx.x >> 5);
    const bool live = row < rows;
    const uint4 *p = w + (size_t)(live ? row : 0) * (ROWB / 16) + lane;
    const uint4 f0 = __ldcs(p), f1 = __ldcs(p + 32);
    pdl_wait();
    if (XS) {
        for (int j = threadIdx.x; j < SMALL_N; j += THREADS)
            limiter[j] = x[j];
        __syncthreads();
        x = limiter;
    }
    float acc = chunk_dot<MATH, XS>(f0, x, lane * 8, 0.0f);
    acc = chunk_dot<MATH, XS>(f1, x, 256 + lane * 8, acc);
#pragma unroll 8
    for (int c = 2; c < RCH; c++)
        acc = chunk_dot<MATH, XS>(__ldcs(p + 32 * c), x, c * 256 + lane * 8, acc);
    acc = warp_sum(acc);
    if (live && acc == 12345.0f) sink[row] = acc + limiter[0];
}

/* The rows dealt evenly, `per` rows to a warp: STRIDED, warp g of W takes rows g, g + W,
 * g + 2W, ... (at any moment the warps read neighbouring rows); else rows [g * per, (g + 1) *
 * per), one contiguous run. A warp's chunks are one stream with UU loads in flight across its
 * rows, the first UU before the wait, a reduction at every row's end. */
template <int UU, bool STRIDED>
__device__ __forceinline__ const uint4 *even_chunk(const uint4 *w, int g, int W, int per, int c,
                                                   int lane) {
    const int j = c / RCH, row = STRIDED ? g + j * W : g * per + j;
    return w + (size_t)row * (ROWB / 16) + (c % RCH) * 32 + lane;
}

template <int UU, bool STRIDED>
__global__ void __launch_bounds__(THREADS)
    even_kernel(const uint4 *w, int rows, int per, float *sink) {
    const int lane = threadIdx.x & 31, g = blockIdx.x * 8 + (threadIdx.x >> 5);
    const int W = gridDim.x * 8;
    int mine; /* rows of this warp */
    if (STRIDED)
        mine = g < rows ? (rows - g + W - 1) / W : 0;
    else
        mine = max(0, min(rows, g * per + per) - g * per);
    const int n = mine * RCH;
    uint4 v[UU];
#pragma unroll
    for (int u = 0; u < UU; u++)
        v[u] =
            u < n ? __ldcs(even_chunk<UU, STRIDED>(w, g, W, per, u, lane)) : make_uint4(0, 0, 0, 0);
    pdl_wait();
    float acc = 0.0f, tot = 0.0f;
    for (int c = 0; c < n; c += UU) {
        if (c > 0)
#pragma unroll
            for (int u = 0; u < UU; u++)
                v[u] = c + u < n ? __ldcs(even_chunk<UU, STRIDED>(w, g, W, per, c + u, lane))
                                 : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int u = 0; u < UU; u++)
            if (c + u < n) {
                acc += fold(v[u]);
                if ((c + u) % RCH == RCH - 1) {
                    tot += warp_sum(acc);
                    acc = 0.0f;
                }
            }
    }
    if (tot == 12345.0f) sink[g] = tot;
}

/* Split rows: a block of KW warps reads one row at a time together, warp k its slice k (chunks
 * k, k + KW, ... of the row), so that the block's warps read neighbouring chunks, like the flat
 * stream; the blocks take rows b, b + grid, ...; each warp has UR rows' slices in flight, and
 * the slices' sums meet in shared memory every UR rows. */
template <int KW, int UR, bool MATH, bool XS = false>
__global__ void __launch_bounds__(KW * 32)
    split_kernel(const uint4 *w, int rows, float *sink, const float *__restrict__ x) {
    constexpr int CPS = RCH / KW; /* chunks of a slice */
    __shared__ float part[UR][KW];
    const int lane = threadIdx.x & 31, k = threadIdx.x >> 5;
    const int G = gridDim.x;
    float tot = 0.0f;
    uint4 v[UR][CPS];
    auto issue = [&](int r0) {
#pragma unroll
        for (int u = 0; u < UR; u++) {
            const int row = r0 + u * G;
#pragma unroll
            for (int c = 0; c < CPS; c++)
                v[u][c] = row < rows
                              ? __ldcs(w + (size_t)row * (ROWB / 16) + (k + c * KW) * 32 + lane)
                              : make_uint4(0, 0, 0, 0);
        }
    };
    int r0 = blockIdx.x;
    issue(r0);
    pdl_wait();
    __shared__ float xs[XS ? SMALL_N : 1];
    if (XS) {
        for (int j = threadIdx.x; j < SMALL_N; j += KW * 32)
            xs[j] = x[j];
        __syncthreads();
        x = xs;
    }
    for (; r0 < rows; r0 += UR * G) {
        float acc[UR];
#pragma unroll
        for (int u = 0; u < UR; u++) {
            acc[u] = 0.0f;
#pragma unroll
            for (int c = 0; c < CPS; c++)
                acc[u] = chunk_dot<MATH, XS>(v[u][c], x, (k + c * KW) * 256 + lane * 8, acc[u]);
        }
        if (r0 + UR * G < rows) issue(r0 + UR * G);
#pragma unroll
        for (int u = 0; u < UR; u++) {
            acc[u] = warp_sum(acc[u]);
            if (lane == 0) part[u][k] = acc[u];
        }
        __syncthreads();
        if (k == 0 && lane < UR) {
            float s = 0.0f;
            for (int j = 0; j < KW; j++)
                s += part[lane][j];
            tot += s;
        }
        __syncthreads();
    }
    if (tot == 12345.0f) sink[blockIdx.x] = tot;
}

/* Split-K rows, as matvec.cu's lean decode kernel lays them out: a block of 8 warps holds 8 / K
 * rows, warp w slice w % K of row w / K (its chunks w % K, w % K + K, ...), the slices summed in
 * shared memory; K doubles while the launch still fits one wave of 6 blocks a multiprocessor
 * (matvec.cu split_for). The first F chunks of a lane (all of them when the slice has no more)
 * are loaded before the PDL wait. */
template <int F>
__global__ void __launch_bounds__(THREADS)
    rowsk_kernel(const uint4 *w, int rows, int K, float *sink, const float *__restrict__ x) {
    extern __shared__ float limiter[];
    __shared__ float part[8];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, k = warp % K;
    const int row = blockIdx.x * (8 / K) + warp / K;
    const bool live = row < rows;
    const int nch = live ? (RCH - k + K - 1) / K : 0;
    const uint4 *p = w + (size_t)(live ? row : 0) * (ROWB / 16) + k * 32 + lane;
    uint4 f[F];
#pragma unroll
    for (int c = 0; c < F; c++)
        if (c < nch) f[c] = __ldcs(p + c * K * 32);
    pdl_wait();
    float acc = 0.0f;
#pragma unroll
    for (int c = 0; c < F; c++)
        if (c < nch) acc = chunk_dot<true>(f[c], x, (k + c * K) * 256 + lane * 8, acc);
#pragma unroll 8
    for (int c = F; c < nch; c++)
        acc = chunk_dot<true>(__ldcs(p + c * K * 32), x, (k + c * K) * 256 + lane * 8, acc);
    acc = warp_sum(acc);
    if (K > 1) {
        if (lane == 0) part[warp] = acc;
        __syncthreads();
        if (k == 0) {
            acc = 0.0f;
            for (int j = 0; j < K; j++)
                acc += part[warp + j];
        }
    }
    if (live && acc == 12345.0f) sink[row] = acc + limiter[0];
}

static int split_k(int rows, int sms) {
    int K = 1;
    while (K < 8 && ((long)rows * 2 * K + 7) / 8 <= 6L * sms && RCH >= 2 * K)
        K *= 2;
    return K;
}

/* Ring: a warp's rows (g, g + W, ... over a resident grid of W warps) are one stream of chunks
 * with UR loads always in flight: consuming chunk c frees its register slot for chunk c + UR,
 * which is issued before chunk c's arithmetic (a software pipeline; the slots are compile-time
 * indices because the loop is unrolled by UR). The first UR are loaded before the PDL wait. */
template <int UR, bool MATH>
__global__ void __launch_bounds__(THREADS)
    ring_kernel(const uint4 *w, int rows, float *sink, const float *__restrict__ x) {
    const int lane = threadIdx.x & 31, g = blockIdx.x * 8 + (threadIdx.x >> 5);
    const int W = gridDim.x * 8;
    const int mine = g < rows ? (rows - g + W - 1) / W : 0;
    const int n = mine * RCH;
    auto at = [&](int c) {
        return w + (size_t)(g + (c / RCH) * W) * (ROWB / 16) + (c % RCH) * 32 + lane;
    };
    uint4 v[UR];
#pragma unroll
    for (int u = 0; u < UR; u++)
        v[u] = u < n ? __ldcs(at(u)) : make_uint4(0, 0, 0, 0);
    pdl_wait();
    float acc = 0.0f, tot = 0.0f;
    for (int c0 = 0; c0 < n; c0 += UR) {
#pragma unroll
        for (int u = 0; u < UR; u++) {
            const int c = c0 + u;
            if (c < n) {
                const uint4 cur = v[u];
                if (c + UR < n) v[u] = __ldcs(at(c + UR));
                acc = chunk_dot<MATH>(cur, x, (c % RCH) * 256 + lane * 8, acc);
                if (c % RCH == RCH - 1) {
                    tot += warp_sum(acc);
                    acc = 0.0f;
                }
            }
        }
    }
    if (tot == 12345.0f) sink[g] = tot;
}

/* ---- bulk: the weights streamed by the copy engine into a ring of shared-memory stages ----
 * One producer thread issues cp.async.bulk copies of whole stages (BW rows of 5120 bytes, one
 * copy: the rows of a block are consecutive) that complete on the stage's "full" mbarrier; the
 * BW consumer warps (a warp per row) wait on it, do the product from shared memory and arrive on
 * the stage's "empty" mbarrier, which the producer waits on before it refills the stage. The
 * loads in flight cost no registers, so a multiprocessor keeps STG stages (up to ~200 KB)
 * coming while its warps compute, and the first STG stages are issued BEFORE the PDL wait: the
 * next kernel's stream starts while the previous one and the small op between them finish.
 * The blocks take consecutive row ranges; grid = multiprocessors x blocks a multiprocessor. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define BULK_OK 1
#else
#define BULK_OK 0
#endif
__device__ __forceinline__ unsigned smem_u32(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned count) {
#if BULK_OK
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count));
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t *b) {
#if BULK_OK
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory");
#endif
}
__device__ __forceinline__ void mbar_expect(uint64_t *b, unsigned bytes) {
#if BULK_OK
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)),
                 "r"(bytes)
                 : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity) {
#if BULK_OK
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 " @!p bra W;\n}" ::"r"(smem_u32(b)),
                 "r"(parity)
                 : "memory");
#endif
}
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes,
                                          uint64_t *bar) {
#if BULK_OK
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], "
                 "%2, [%3];" ::"r"(smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
#endif
}

template <int BW, int STG, bool MATH, bool XR = false>
__global__ void __launch_bounds__((BW + 1) * 32)
    bulk_kernel(const uint4 *w, int rows, float *sink, const float *__restrict__ x) {
    extern __shared__ __align__(128) unsigned char ring[]; /* STG stages of BW rows */
    __shared__ uint64_t full[STG], empty[STG];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r0 = (int)((long long)rows * blockIdx.x / gridDim.x);
    const int r1 = (int)((long long)rows * (blockIdx.x + 1) / gridDim.x);
    const int n_st = (r1 - r0 + BW - 1) / BW; /* stages of this block */
    if (threadIdx.x == 0) {
        for (int s = 0; s < STG; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], BW);
        }
#if BULK_OK
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
    }
    __syncthreads();
    auto issue = [&](int i) {
        const int s = i % STG, ra = r0 + i * BW, nr = min(BW, r1 - ra);
        mbar_expect(&full[s], nr * ROWB);
        bulk_copy(ring + (size_t)s * BW * ROWB, w + (size_t)ra * (ROWB / 16), nr * ROWB, &full[s]);
    };
    if (warp == BW) { /* the producer */
        if (lane == 0) {
            for (int i = 0; i < n_st && i < STG; i++)
                issue(i);
            pdl_wait();
            for (int i = STG; i < n_st; i++) {
                mbar_wait(&empty[i % STG], ((i / STG) - 1) & 1);
                issue(i);
            }
        } else {
            pdl_wait();
        }
        return;
    }
    pdl_wait();
    /* XR: the lane's 80 floats of x in registers, loaded once (no x loads in the products) */
    float xr[XR ? RCH * 8 : 1];
    if (XR)
#pragma unroll
        for (int c = 0; c < RCH; c++)
#pragma unroll
            for (int j = 0; j < 8; j++)
                xr[c * 8 + j] = __ldg(x + c * 256 + lane * 8 + j);
    float tot = 0.0f;
    for (int i = 0; i < n_st; i++) {
        const int s = i % STG, row = r0 + i * BW + warp;
        mbar_wait(&full[s], (i / STG) & 1);
        if (row < r1) {
            const uint4 *p = reinterpret_cast<const uint4 *>(ring + ((size_t)s * BW + warp) * ROWB);
            float acc = 0.0f;
#pragma unroll
            for (int c = 0; c < RCH; c++)
                if (XR) {
                    const uint4 u = p[c * 32 + lane];
                    const float *a = xr + c * 8;
                    acc = acc +
                          (__uint_as_float(u.x << 16) * a[0] +
                           __uint_as_float(u.x & 0xffff0000u) * a[1] +
                           __uint_as_float(u.y << 16) * a[2] +
                           __uint_as_float(u.y & 0xffff0000u) * a[3]) +
                          (__uint_as_float(u.z << 16) * a[4] +
                           __uint_as_float(u.z & 0xffff0000u) * a[5] +
                           __uint_as_float(u.w << 16) * a[6] +
                           __uint_as_float(u.w & 0xffff0000u) * a[7]);
                } else {
                    acc = chunk_dot<MATH>(p[c * 32 + lane], x, c * 256 + lane * 8, acc);
                }
            tot += warp_sum(acc);
        }
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[s]);
    }
    if (tot == 12345.0f) sink[blockIdx.x] = tot;
}

/* ---- mega: the whole step as one persistent kernel, weights streamed ahead of the dependencies --
 * One block a multiprocessor: a producer warp streams this block's rows of every stream phase,
 * in step order, into a ring of STG shared-memory stages with cp.async.bulk (W rows a stage) and
 * never waits for anything but a free stage: weights do not depend on the step's results. The W
 * consumer warps take the phases in order: wait until every block has finished the previous
 * stream (a counter per stream phase, raised by each block with release semantics - not a grid
 * barrier: only the consumers wait, and the copies already in flight keep coming), do the small
 * op themselves (the norm of the previous output, into this block's shared memory, as calm's
 * layer kernel does), then the rows' products against it, and raise the phase's counter. SYNC
 * false leaves the waits out (the same work without the dependencies: what they cost). */
__device__ __forceinline__ void bar_consumers(int n) {
    asm volatile("bar.sync 1, %0;" ::"r"(n) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

/* x_dot: acc + 8 bf16 weights against 8 floats of x held in registers */
__device__ __forceinline__ float x_dot(uint4 u, const float *a, float acc) {
    return acc +
           (__uint_as_float(u.x << 16) * a[0] + __uint_as_float(u.x & 0xffff0000u) * a[1] +
            __uint_as_float(u.y << 16) * a[2] + __uint_as_float(u.y & 0xffff0000u) * a[3]) +
           (__uint_as_float(u.z << 16) * a[4] + __uint_as_float(u.z & 0xffff0000u) * a[5] +
            __uint_as_float(u.w << 16) * a[6] + __uint_as_float(u.w & 0xffff0000u) * a[7]);
}

__device__ __forceinline__ void bulk_prefetch_l2(const void *src, unsigned bytes) {
#if BULK_OK
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
#endif
}

/* The producer's walk over this block's stages of every stream phase, in step order. */
struct stage_iter {
    const phase *ph;
    int n_ph, p, r0, r1, ra, W, b, G;
    __device__ void enter() { /* the first stage at or after phase p */
        for (; p < n_ph; p++) {
            if (!ph[p].n16) continue;
            const int rows = (int)(ph[p].n16 / (ROWB / 16));
            r0 = (int)((long long)rows * b / G);
            r1 = (int)((long long)rows * (b + 1) / G);
            if (r0 < r1) {
                ra = r0;
                return;
            }
        }
    }
    __device__ bool done() const { return p >= n_ph; }
    __device__ void next() {
        ra += W;
        if (ra >= r1) {
            p++;
            enter();
        }
    }
};

template <int W, int STG, bool SYNC, bool XR = false, int AHEAD = 0>
__global__ void __launch_bounds__((W + 1) * 32, 1)
    mega_kernel(const uint4 *w, const phase *ph, int n_ph, float *buf, unsigned *cnt,
                unsigned target, float *sink) {
    extern __shared__ __align__(128) unsigned char ring[]; /* STG stages of W rows */
    __shared__ uint64_t full[STG], empty[STG];
    __shared__ __align__(16) float xs[SMALL_N];
    __shared__ float red[W];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, G = gridDim.x;
    if (threadIdx.x == 0) {
        for (int i = 0; i < STG; i++) {
            mbar_init(&full[i], 1);
            mbar_init(&empty[i], W);
        }
#if BULK_OK
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
    }
    __syncthreads();
    if (warp == W) { /* the producer: every stage of every phase, in order */
        if (lane) return;
        /* AHEAD > 0: the stages AHEAD ahead of the copies are asked into L2 first
         * (cp.async.bulk.prefetch.L2), so the ring's copies find them there */
        stage_iter it = {ph, n_ph, 0, 0, 0, 0, W, (int)blockIdx.x, G}, pf = it;
        it.enter();
        pf.enter();
        for (int a = 0; a < AHEAD && !pf.done(); a++) {
            bulk_prefetch_l2(w + ph[pf.p].off + (size_t)pf.ra * (ROWB / 16),
                             min(W, pf.r1 - pf.ra) * ROWB);
            pf.next();
        }
        for (unsigned g = 0; !it.done(); it.next(), g++) {
            if (AHEAD && !pf.done()) {
                bulk_prefetch_l2(w + ph[pf.p].off + (size_t)pf.ra * (ROWB / 16),
                                 min(W, pf.r1 - pf.ra) * ROWB);
                pf.next();
            }
            const int st = g % STG, nr = min(W, it.r1 - it.ra);
            if (g >= STG) mbar_wait(&empty[st], ((g / STG) - 1) & 1);
            mbar_expect(&full[st], nr * ROWB);
            bulk_copy(ring + (size_t)st * W * ROWB, w + ph[it.p].off + (size_t)it.ra * (ROWB / 16),
                      nr * ROWB, &full[st]);
        }
        return;
    }
    unsigned g = 0;
    int sp = 0; /* stream phases done */
    float tot = 0.0f;
    for (int p = 0; p < n_ph; p++) {
        if (!ph[p].n16) continue;
        float *out = buf + (size_t)(sp & 1) * 32768;
        const float *prev = buf + (size_t)((sp + 1) & 1) * 32768;
        if (SYNC && sp > 0) {
            if (threadIdx.x == 0)
                while (ld_acquire(&cnt[sp - 1]) < target) {
                }
            bar_consumers(W * 32);
        }
        /* the small op: x = prev / rms(prev), into shared memory */
        float ss = 0.0f;
        for (int j = threadIdx.x; j < SMALL_N; j += W * 32) {
            const float v = __ldcg(prev + j);
            xs[j] = v;
            ss += v * v;
        }
        ss = warp_sum(ss);
        if (lane == 0) red[warp] = ss;
        bar_consumers(W * 32);
        ss = 0.0f;
        for (int i = 0; i < W; i++)
            ss += red[i];
        const float inv = rsqrtf(ss / SMALL_N + 1e-6f);
        for (int j = threadIdx.x; j < SMALL_N; j += W * 32)
            xs[j] *= inv;
        bar_consumers(W * 32);
        /* XR: this lane's 80 floats of x in registers for the phase */
        float xr[XR ? RCH * 8 : 1];
        if (XR)
#pragma unroll
            for (int c = 0; c < RCH; c++) {
                const float4 a = *reinterpret_cast<const float4 *>(xs + c * 256 + lane * 8);
                const float4 b = *reinterpret_cast<const float4 *>(xs + c * 256 + lane * 8 + 4);
                xr[c * 8 + 0] = a.x, xr[c * 8 + 1] = a.y, xr[c * 8 + 2] = a.z, xr[c * 8 + 3] = a.w;
                xr[c * 8 + 4] = b.x, xr[c * 8 + 5] = b.y, xr[c * 8 + 6] = b.z, xr[c * 8 + 7] = b.w;
            }
        const int rows = (int)(ph[p].n16 / (ROWB / 16));
        const int r0 = (int)((long long)rows * blockIdx.x / G);
        const int r1 = (int)((long long)rows * (blockIdx.x + 1) / G);
        for (int ra = r0; ra < r1; ra += W, g++) {
            const int st = g % STG, row = ra + warp;
            mbar_wait(&full[st], (g / STG) & 1);
            if (row < r1) {
                const uint4 *q =
                    reinterpret_cast<const uint4 *>(ring + ((size_t)st * W + warp) * ROWB);
                float acc = 0.0f;
#pragma unroll
                for (int c = 0; c < RCH; c++)
                    acc = XR ? x_dot(q[c * 32 + lane], xr + c * 8, acc)
                             : chunk_dot<true, true>(q[c * 32 + lane], xs, c * 256 + lane * 8, acc);
                acc = warp_sum(acc);
                if (lane == 0) out[row] = acc * 1e-3f;
                tot += acc;
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[st]);
        }
        bar_consumers(W * 32); /* the block's outputs of this phase are written */
        if (SYNC && threadIdx.x == 0) {
            __threadfence();
            atomicAdd(&cnt[sp], 1u);
        }
        sp++;
    }
    if (tot == 12345.0f) sink[blockIdx.x] = tot;
}

/* The whole step in one kernel of NT-thread blocks. barriers: 0 = stream only. At most 64
 * registers (4 blocks of 256 threads, or one of 1024, a multiprocessor), as the measurements in
 * docs/bench_gpu.md had. */
template <int NT>
__global__ void __launch_bounds__(NT, 1024 / NT)
    persistent_kernel(const uint4 *w, const phase *ph, int n_ph, float *x, float *sink,
                      int barriers) {
    cg::grid_group g = cg::this_grid();
    const size_t nt = (size_t)gridDim.x * NT, t = (size_t)blockIdx.x * NT + threadIdx.x;
    float a = 0.0f;
    uint4 first[U];
    int next = 0; /* the next stream phase */
    while (next < n_ph && !ph[next].n16)
        next++;
    if (next < n_ph) load_first(first, w + ph[next].off, ph[next].n16, t, nt);
    for (int p = 0; p < n_ph; p++) {
        if (!ph[p].n16) {
            if (!barriers) continue;
            if (blockIdx.x == 0) small_op<NT>(x);
            g.sync();
            continue;
        }
        a += stream(w + ph[p].off, ph[p].n16, t, nt, first);
        next = p + 1;
        while (next < n_ph && !ph[next].n16)
            next++;
        if (next < n_ph) load_first(first, w + ph[next].off, ph[next].n16, t, nt);
        if (barriers) g.sync();
    }
    if (a == 12345.0f) sink[t] = a;
}

/* ms per call of launch(): one call to warm up, then reps timed with events on stream s. */
template <typename F> static float time_reps(cudaStream_t s, int reps, F launch) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    launch();
    CK(cudaStreamSynchronize(s));
    CK(cudaEventRecord(e0, s));
    for (int r = 0; r < reps; r++)
        launch();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms / reps;
}

/* ms per step of a persistent kernel (cooperative launch, grid blocks of nt threads). */
static float time_persistent(const void *k, int grid, int nt, const uint4 *w, const phase *ph,
                             int n_ph, float *x, float *sink, int barriers, cudaStream_t s,
                             int reps) {
    void *args[] = {(void *)&w, (void *)&ph,   (void *)&n_ph,
                    (void *)&x, (void *)&sink, (void *)&barriers};
    return time_reps(s, reps, [&] { CK(cudaLaunchCooperativeKernel(k, grid, nt, args, 0, s)); });
}

static float time_graph(cudaGraphExec_t ge, cudaStream_t s, int reps) {
    return time_reps(s, reps, [&] { CK(cudaGraphLaunch(ge, s)); });
}

template <typename... KArgs, typename... Args>
static void launch_pdl_ex(void (*k)(KArgs...), int grid, int threads, size_t smem, cudaStream_t s,
                          Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = pdl_on;
    cfg.attrs = at;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, k, ((KArgs)args)...));
}

template <typename... KArgs, typename... Args>
static void launch_pdl(void (*k)(KArgs...), int grid, size_t smem, cudaStream_t s, Args... args) {
    launch_pdl_ex(k, grid, THREADS, smem, s, args...);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it is measured */
    int dev = 0, sms, major;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    pdl_on = major >= 9;
    const int n_ph = NL * NSTEPS;
    phase *ph = (phase *)malloc(n_ph * sizeof *ph);
    size_t words = 0;
    int n_small = 0, n_stream = 0;
    for (int l = 0; l < NL; l++)
        for (int i = 0; i < NSTEPS; i++) {
            const size_t n16 = (size_t)(LAYER[i] * 1e6 / 16);
            ph[l * NSTEPS + i] = (phase){words, n16};
            words += n16;
            n_small += !n16;
            n_stream += !!n16;
        }
    const double bytes = 16.0 * words;
    uint4 *w;
    float *x, *sink;
    phase *dph;
    CK(cudaMalloc(&w, words * 16));
    CK(cudaMemset(w, 0x3c, words * 16));
    CK(cudaMalloc(&x, SMALL_N * sizeof(float)));
    CK(cudaMemset(x, 0, SMALL_N * sizeof(float)));
    CK(cudaMalloc(&sink, (size_t)64 << 20));
    CK(cudaMalloc(&dph, n_ph * sizeof *ph));
    CK(cudaMemcpy(dph, ph, n_ph * sizeof *ph, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    /* copy bandwidth, as bench_gpu.sh measures the floor: device-to-device, 1 GiB */
    const size_t cb = (size_t)1 << 30;
    void *c0, *c1;
    CK(cudaMalloc(&c0, cb));
    CK(cudaMalloc(&c1, cb));
    const float cms =
        time_reps(s, 10, [&] { CK(cudaMemcpyAsync(c1, c0, cb, cudaMemcpyDeviceToDevice, s)); });
    const double copy_gbs = 2.0 * cb / (cms * 1e-3) / 1e9;
    CK(cudaFree(c0));
    CK(cudaFree(c1));
    const double floor_ms = bytes / (copy_gbs * 1e9) * 1e3;
    printf("device: %d SMs, copy bandwidth %.0f GB/s; one step streams %.3f GB in %d streams with "
           "%d small ops: floor %.3f ms\n",
           sms, copy_gbs, bytes / 1e9, n_stream, n_small, floor_ms);

    int per_sm_stream = 0, per_sm_persist = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_stream, stream_kernel, THREADS, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_persist, persistent_kernel<THREADS>,
                                                     THREADS, 0));
    /* STEP_SHAPE_ONLY=mega: the mega section alone (STEP_SHAPE_REPS=1 under compute-sanitizer) */
    const char *only = getenv("STEP_SHAPE_ONLY"), *reps_env = getenv("STEP_SHAPE_REPS");
    const bool mega_only = only && !strcmp(only, "mega");
    const int reps = reps_env ? atoi(reps_env) : 20;
    for (int bpsm = 2; !mega_only && bpsm <= 8; bpsm *= 2) {
        const int grid_stream = sms * (bpsm < per_sm_stream ? bpsm : per_sm_stream);
        /* chain: one graph of PDL launches */
        cudaGraph_t gr;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int p = 0; p < n_ph; p++)
            if (ph[p].n16)
                launch_pdl(stream_kernel, grid_stream, 0, s, (const uint4 *)(w + ph[p].off),
                           ph[p].n16, sink);
            else
                launch_pdl(small_kernel, 1, 0, s, x);
        CK(cudaStreamEndCapture(s, &gr));
        CK(cudaGraphInstantiate(&ge, gr, 0));
        const float chain = time_graph(ge, s, reps);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(gr));

        const int grid_p = sms * (bpsm < per_sm_persist ? bpsm : per_sm_persist);
        float pms[2];
        for (int barriers = 0; barriers <= 1; barriers++)
            pms[barriers] = time_persistent((const void *)persistent_kernel<THREADS>, grid_p,
                                            THREADS, w, dph, n_ph, x, sink, barriers, s, reps);
        const int bounds = n_ph; /* a dependency after every phase */
        printf("%d blocks/SM (chain grid %d, persistent grid %d):\n", bpsm, grid_stream, grid_p);
        printf("  stream only   %.3f ms  %5.1f %% of copy bandwidth\n", pms[0],
               100.0 * floor_ms / pms[0]);
        printf("  barrier       %.3f ms  %5.1f %%  (%.2f us a boundary over stream)\n", pms[1],
               100.0 * floor_ms / pms[1], 1e3 * (pms[1] - pms[0]) / bounds);
        printf("  chain (PDL)   %.3f ms  %5.1f %%  (%.2f us a boundary over stream)\n", chain,
               100.0 * floor_ms / chain, 1e3 * (chain - pms[0]) / bounds);
    }

    /* calm's shape (zeux/calm, kernel_forward): one block of 1024 threads a multiprocessor, so a
     * grid barrier waits for 132 arrivals, not 264 .. 660. */
    if (!mega_only) {
        float pms[2];
        for (int barriers = 0; barriers <= 1; barriers++)
            pms[barriers] = time_persistent((const void *)persistent_kernel<1024>, sms, 1024, w,
                                            dph, n_ph, x, sink, barriers, s, reps);
        printf("1 block of 1024 threads a multiprocessor (persistent grid %d):\n", sms);
        printf("  stream only   %.3f ms  %5.1f %% of copy bandwidth\n", pms[0],
               100.0 * floor_ms / pms[0]);
        printf("  barrier       %.3f ms  %5.1f %%  (%.2f us a boundary over stream)\n", pms[1],
               100.0 * floor_ms / pms[1], 1e3 * (pms[1] - pms[0]) / n_ph);
    }

    /* mega: one persistent kernel, the weights streamed ahead by the copy engine, a counter
     * per stream phase instead of a grid barrier, the small op done by every block (sm_90). */
    if (pdl_on) {
        float *buf;
        unsigned *cnt;
        CK(cudaMalloc(&buf, 2 * 32768 * sizeof(float)));
        CK(cudaMemset(buf, 0, 2 * 32768 * sizeof(float)));
        CK(cudaMalloc(&cnt, n_ph * sizeof(unsigned)));
        struct {
            const char *name;
            const void *k;
            int W, STG;
        } mk[] = {
            {"16 warps, 2 stages", (const void *)mega_kernel<16, 2, true>, 16, 2},
            {"16 warps, 2 stages, no waits", (const void *)mega_kernel<16, 2, false>, 16, 2},
            {"16 warps, 2 stages, L2 2 ahead", (const void *)mega_kernel<16, 2, true, false, 2>, 16,
             2},
            {"16 warps, 2 stages, L2 4 ahead", (const void *)mega_kernel<16, 2, true, false, 4>, 16,
             2},
            {"16 warps, 2 stages, L2 8 ahead", (const void *)mega_kernel<16, 2, true, false, 8>, 16,
             2},
            {"16 warps, 2 stages, L2 16 ahead", (const void *)mega_kernel<16, 2, true, false, 16>,
             16, 2},
            {"16 warps, 2 stages, L2 4 ahead, no waits",
             (const void *)mega_kernel<16, 2, false, false, 4>, 16, 2},
            {"8 warps, 4 stages, L2 8 ahead", (const void *)mega_kernel<8, 4, true, false, 8>, 8,
             4},
        };
        printf("mega (one persistent kernel, bulk-copy ring, counters, x in shared memory, "
               "math):\n");
        for (auto &m : mk) {
            const int dsm = m.STG * m.W * ROWB;
            CK(cudaFuncSetAttribute(m.k, cudaFuncAttributeMaxDynamicSharedMemorySize, dsm));
            /* on the timed stream: a memset on the legacy stream could land in a running step */
            CK(cudaMemsetAsync(cnt, 0, n_ph * sizeof(unsigned), s));
            unsigned target = 0;
            const int nt = (m.W + 1) * 32;
            const float ms = time_reps(s, reps, [&] {
                target += (unsigned)sms;
                void *args[] = {(void *)&w,   (void *)&dph,    (void *)&n_ph, (void *)&buf,
                                (void *)&cnt, (void *)&target, (void *)&sink};
                CK(cudaLaunchCooperativeKernel(m.k, sms, nt, args, (size_t)dsm, s));
            });
            printf("  %-30s %.3f ms  %5.1f %%\n", m.name, ms, 100.0 * floor_ms / ms);
        }
        CK(cudaFree(buf));
        CK(cudaFree(cnt));
    }

    if (mega_only) return 0;

    /* The chain with product-shaped streams, with the trivial fold or a product's arithmetic
     * (math: bf16 weights against x through L1, as matvec.cu). */
    const size_t rowsw = ROWB / 16;
    const int lim_smem = 31 * 1024; /* 7 blocks a multiprocessor: 6 of a kernel + 1 of the next */
    void (*const rows_k[3])(const uint4 *, int, float *, const float *) = {
        rows_kernel<false, false>, rows_kernel<true, false>, rows_kernel<true, true>};
    for (int m = 0; m < 3; m++)
        CK(cudaFuncSetAttribute(rows_k[m], cudaFuncAttributeMaxDynamicSharedMemorySize, lim_smem));
    CK(cudaFuncSetAttribute(rowsk_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            lim_smem));
    CK(cudaFuncSetAttribute(rowsk_kernel<5>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            lim_smem));
    CK(cudaFuncSetAttribute(rowsk_kernel<10>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            lim_smem));
    typedef void (*split_fn)(const uint4 *, int, float *, const float *);
    struct {
        const char *name;
        int kind, bpsm, uu; /* kind 0: rows, 1: even runs, 2: even strided, 3: split, 4: bulk
                               (uu: its stages) */
        int math;           /* 0: the fold, 1: a product's arithmetic, 2: the same, x in shared */
        split_fn k;         /* split: the kernel */
        int threads;
    } shapes[] = {
        {"rows (matvec.cu layout)", 0, 0, 0, 0, NULL, 0},
        {"rows, math", 0, 0, 0, 1, NULL, 0},
        {"rows, math, x in shared memory", 0, 0, 0, 2, NULL, 0},
        {"even runs, 3 blocks/SM, 8 first", 1, 3, 8, 0, NULL, 0},
        {"strided, 3 blocks/SM, 8 first", 2, 3, 8, 0, NULL, 0},
        {"split 10 warps, 8 rows", 3, 4, 0, 0, split_kernel<10, 8, false>, 320},
        {"split 10 warps, 8 rows, math", 3, 4, 0, 1, split_kernel<10, 8, true>, 320},
        {"split 10 warps, 8 rows, math, x in shared", 3, 4, 0, 2, split_kernel<10, 8, true, true>,
         320},
        {"split 5 warps, 4 rows", 3, 8, 0, 0, split_kernel<5, 4, false>, 160},
        {"split 5 warps, 4 rows, math", 3, 8, 0, 1, split_kernel<5, 4, true>, 160},
        {"split 5 warps, 4 rows, math, x in shared", 3, 8, 0, 2, split_kernel<5, 4, true, true>,
         160},
        {"split 2 warps, 2 rows", 3, 16, 0, 0, split_kernel<2, 2, false>, 64},
        {"split 2 warps, 2 rows, math", 3, 16, 0, 1, split_kernel<2, 2, true>, 64},
        {"bulk 8 warps, 4 stages, 1/SM", 4, 1, 4, 0, bulk_kernel<8, 4, false>, 288},
        {"bulk 8 warps, 4 stages, 1/SM, math", 4, 1, 4, 1, bulk_kernel<8, 4, true>, 288},
        {"bulk 8 warps, 2 stages, 1/SM", 4, 1, 2, 0, bulk_kernel<8, 2, false>, 288},
        {"bulk 8 warps, 2 stages, 1/SM, math", 4, 1, 2, 1, bulk_kernel<8, 2, true>, 288},
        {"bulk 8 warps, 2 stages, 1/SM, math, x in regs", 4, 1, 2, 1, bulk_kernel<8, 2, true, true>,
         288},
        {"bulk 4 warps, 4 stages, 1/SM, math", 4, 1, 4, 1, bulk_kernel<4, 4, true>, 160},
        {"bulk 4 warps, 4 stages, 1/SM, math, x in regs", 4, 1, 4, 1, bulk_kernel<4, 4, true, true>,
         160},
        {"bulk 4 warps, 2 stages, 2/SM, math, x in regs", 4, 2, 2, 1, bulk_kernel<4, 2, true, true>,
         160},
        {"bulk 4 warps, 5 stages, 2/SM, math, x in regs", 4, 2, 5, 1, bulk_kernel<4, 5, true, true>,
         160},
        {"split-K rows, math, 2 first", 5, 2, 0, 1, NULL, 256},
        {"split-K rows, math, 5 first", 5, 5, 0, 1, NULL, 256},
        {"split-K rows, math, 10 first", 5, 10, 0, 1, NULL, 256},
        {"split-K rows, math, 2 first, again", 5, 2, 0, 1, NULL, 256},
        {"rows again", 0, 0, 0, 0, NULL, 0},
    };
    float base = 0.0f;
    for (size_t v = 0; v < sizeof shapes / sizeof shapes[0]; v++) {
        cudaGraph_t gr;
        cudaGraphExec_t ge;
        int grid_p = 0;
        size_t dsmem = 0; /* bulk: the ring of stages */
        if (shapes[v].kind == 4) {
            if (!pdl_on) continue; /* cp.async.bulk is sm_90 */
            dsmem = (size_t)shapes[v].uu * ((shapes[v].threads / 32) - 1) * ROWB;
            CK(cudaFuncSetAttribute(shapes[v].k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)dsmem));
        }
        if (shapes[v].kind == 3 ||
            shapes[v].kind == 4) { /* a resident grid: at most what the registers allow */
            int fit = 0;
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, shapes[v].k, shapes[v].threads,
                                                             dsmem));
            grid_p = (shapes[v].bpsm < fit ? shapes[v].bpsm : fit) * sms;
        }
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int p = 0; p < n_ph; p++) {
            const int rows = (int)(ph[p].n16 / rowsw);
            const uint4 *wp = w + ph[p].off;
            if (!ph[p].n16) {
                launch_pdl(small_kernel, 1, 0, s, x);
            } else if (shapes[v].kind == 0) {
                launch_pdl(rows_k[shapes[v].math], (rows + 7) / 8, lim_smem, s, wp, rows, sink,
                           (const float *)x);
            } else if (shapes[v].kind == 5) {
                const int K = split_k(rows, sms), grid = (rows + 8 / K - 1) / (8 / K);
                void (*rk)(const uint4 *, int, int, float *, const float *) =
                    shapes[v].bpsm == 2   ? rowsk_kernel<2>
                    : shapes[v].bpsm == 5 ? rowsk_kernel<5>
                                          : rowsk_kernel<10>;
                launch_pdl(rk, grid, lim_smem, s, wp, rows, K, sink, (const float *)x);
            } else if (shapes[v].kind >= 3) {
                launch_pdl_ex(shapes[v].k, grid_p, shapes[v].threads, dsmem, s, wp, rows, sink,
                              (const float *)x);
            } else {
                const int warps = shapes[v].bpsm * sms * 8, per = (rows + warps - 1) / warps;
                const int grid = ((rows + per - 1) / per + 7) / 8;
                const bool st = shapes[v].kind == 2;
                if (shapes[v].uu == 4)
                    launch_pdl(st ? even_kernel<4, true> : even_kernel<4, false>, grid, 0, s, wp,
                               rows, per, sink);
                else
                    launch_pdl(st ? even_kernel<8, true> : even_kernel<8, false>, grid, 0, s, wp,
                               rows, per, sink);
            }
        }
        CK(cudaStreamEndCapture(s, &gr));
        CK(cudaGraphInstantiate(&ge, gr, 0));
        const float ms = time_graph(ge, s, reps);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(gr));
        if (!v) base = ms;
        char grid_note[48] = "";
        if (shapes[v].kind == 3 || shapes[v].kind == 4)
            snprintf(grid_note, sizeof grid_note, " [%d/SM]", grid_p / sms);
        printf("  chain, %-30s %.3f ms  %5.1f %%  (%.3f of rows)%s\n", shapes[v].name, ms,
               100.0 * floor_ms / ms, ms / base, grid_note);
    }
    /* One matrix at a time, launched back to back (20 launches in a graph, PDL): the kernel's
     * own streaming rate, without the step's small ops. */
    {
        const double mbs[] = {105.0, 52.0, 15.7, 5.2};
        typedef void (*mk)(const uint4 *, int, float *, const float *);
        struct {
            const char *name;
            mk k;
            int bpsm; /* 0: one block per 8 rows (rows layout), else a resident grid */
        } ks[] = {
            {"rows, math", rows_kernel<true, false>, 0},
            {"rows, fold", rows_kernel<false, false>, 0},
            {"ring 8, 3/SM, math", ring_kernel<8, true>, 3},
            {"ring 8, 4/SM, math", ring_kernel<8, true>, 4},
            {"ring 12, 2/SM, math", ring_kernel<12, true>, 2},
            {"ring 12, 3/SM, math", ring_kernel<12, true>, 3},
            {"ring 4, 6/SM, math", ring_kernel<4, true>, 6},
            {"ring 8, 3/SM, fold", ring_kernel<8, false>, 3},
        };
        printf("one matrix back to back (GB/s, %% of copy bandwidth):\n  %-22s", "");
        for (double mb : mbs)
            printf(" %10.1f MB", mb);
        printf("\n");
        for (auto &kk : ks) {
            int fit = 0;
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, kk.k, THREADS,
                                                             kk.bpsm ? 0 : lim_smem));
            printf("  %-22s", kk.name);
            for (double mb : mbs) {
                const int rows = (int)(mb * 1e6 / ROWB);
                const int grid = kk.bpsm ? sms * (kk.bpsm < fit ? kk.bpsm : fit) : (rows + 7) / 8;
                cudaGraph_t gr;
                cudaGraphExec_t ge;
                CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
                for (int r = 0; r < 20; r++)
                    launch_pdl_ex(kk.k, grid, THREADS, kk.bpsm ? 0 : lim_smem, s,
                                  (const uint4 *)(w + (size_t)r * 0), rows, sink, (const float *)x);
                CK(cudaStreamEndCapture(s, &gr));
                CK(cudaGraphInstantiate(&ge, gr, 0));
                const float ms = time_graph(ge, s, 5) / 20;
                CK(cudaGraphExecDestroy(ge));
                CK(cudaGraphDestroy(gr));
                const double gbs = (double)rows * ROWB / (ms * 1e-3) / 1e9;
                printf("  %5.0f %3.0f%%", gbs, 100.0 * gbs / copy_gbs);
            }
            printf("   [%d/SM]\n", kk.bpsm ? (kk.bpsm < fit ? kk.bpsm : fit) : fit);
        }
    }
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, rows_kernel<true, false>));
    printf("registers: rows math %d", fa.numRegs);
    for (size_t v = 0; v < sizeof shapes / sizeof shapes[0]; v++)
        if (shapes[v].k) {
            CK(cudaFuncGetAttributes(&fa, shapes[v].k));
            printf(", %s %d", shapes[v].name, fa.numRegs);
        }
    printf("\n");
    return 0;
}
