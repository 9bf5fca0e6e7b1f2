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
 *             launch - the engine's form (each stream kernel loads its first chunks before it
 *             waits for its predecessor, as matvec.cu does);
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
 *             kernel's 34-40 registers), so that one block of the next kernel fits beside them;
 *   even      the rows dealt evenly to the warps of B blocks per multiprocessor, each warp a
 *             run of consecutive rows ("runs") or, warp g of W, rows g, g + W, ... ("strided"),
 *             its first U chunks loaded before the wait;
 *   split     a block of K warps reads one row together (warp k its chunks k, k + K, ...), the
 *             blocks of a resident grid take rows b, b + G, ..., UR rows in flight a warp;
 *   split-K   matvec.cu's lean decode kernel more closely: K warps a row, K from the launch's
 *   rows      size as split_for picks it, with 2, 5 or 10 chunks a lane loaded before the wait.
 *
 * Two more chain rows: "x bf16", the arithmetic with x in bf16 (one 16-byte load of x a chunk
 * instead of two), and "small op in last block", where the last block of a product to finish
 * (a fence and a counter) runs the small op that follows, one kernel boundary fewer (a ticket).
 *
 * Last, one matrix at a time launched back to back (105, 52, 15.7, 5.2 MB), with and without the
 * arithmetic, with the arithmetic against x loaded once (wrong sums: the x loads' share), with
 * the fold plus the x loads, x in shared memory, and x in bf16: a kernel's own streaming rate,
 * apart from the step. step_mega.cu (same bytes, step_common.cuh) runs the step as one
 * persistent kernel that streams the weights ahead.
 *
 * Measured on an H200: the persistent kernel with grid barriers reaches 65 % of the floor on the
 * bytes alone, 2.0 us a barrier; a PDL boundary whose kernel reads nothing the last one wrote
 * costs 0.6 us. The persistent form is not in the engine (docs/gpu.md, "Tried and dropped").
 *
 * Built with -DDEV_CUDA=ON (dev/cuda/CMakeLists.txt), or by hand:
 * nvcc -O3 -arch=sm_90 -o step_shape dev/cuda/step_shape.cu && ./step_shape
 * Prints ms per step for each way, the per-boundary cost, and the share of copy bandwidth. */
#include <cooperative_groups.h>

#include "step_common.cuh"

namespace cg = cooperative_groups;

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

/* matvec.cu's decode layout: warp per row, block per 8 rows, 2 chunks a lane before the wait. */
/* XS: x is copied into shared memory after the wait, and the dot products read it there (as
 * calm's kernels do). */
/* X1: every chunk against the same 8 floats of x (wrong sums, the same arithmetic): the x loads
 * leave the loop, so the row's time without them is what they cost. XF (with the fold): x is
 * loaded for every chunk as the arithmetic would, and only added in: the x loads without the
 * products.
 * XB: x in bf16 (16 bytes of x for 16 of weights instead of 32): half the x loads, which are
 * what a product loses against a copy.
 * TICKET: the block stores its rows, and the last block of the launch to finish (a fence and
 * a counter, as a kernel that folds its successor into its epilogue must) runs the small op
 * that follows - one kernel boundary fewer. */
template <bool MATH, bool XS, bool X1 = false, bool XF = false, bool XB = false,
          bool TICKET = false>
__device__ __forceinline__ void rows_body(const uint4 *w, int rows, float *sink,
                                          const float *__restrict__ x, float *small_x,
                                          unsigned *ticket) {
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
    /* the fold plus this chunk's x loads (XF) */
    auto xfold = [&](uint4 u, int col, float a) {
        const float4 *xp = reinterpret_cast<const float4 *>(x + col);
        const float4 xa = __ldg(xp), xb = __ldg(xp + 1);
        return a + fold(u) + (xa.x + xb.w);
    };
    auto dot = [&](uint4 u, int col, float a) {
        return XF   ? xfold(u, col, a)
               : XB ? chunk_dot_xb(u, x, X1 ? col % 256 : col, a)
                    : chunk_dot<MATH, XS>(u, x, X1 ? col % 256 : col, a);
    };
    float acc = dot(f0, lane * 8, 0.0f);
    acc = dot(f1, 256 + lane * 8, acc);
#pragma unroll 8
    for (int c = 2; c < RCH; c++)
        acc = dot(__ldcs(p + 32 * c), c * 256 + lane * 8, acc);
    acc = warp_sum(acc);
    if (TICKET) {
        __shared__ bool last;
        if (live && lane == 0) sink[row] = acc;
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            last = atomicAdd(ticket, 1u) == gridDim.x - 1;
        }
        __syncthreads();
        if (last) {
            __threadfence();
            small_op(small_x);
            if (threadIdx.x == 0) *ticket = 0;
        }
    } else if (live && acc == 12345.0f) {
        sink[row] = acc + limiter[0];
    }
}

template <bool MATH, bool XS, bool X1 = false, bool XF = false, bool XB = false>
__global__ void __launch_bounds__(THREADS)
    rows_kernel(const uint4 *w, int rows, float *sink, const float *__restrict__ x) {
    rows_body<MATH, XS, X1, XF, XB>(w, rows, sink, x, nullptr, nullptr);
}

template <bool XB>
__global__ void __launch_bounds__(THREADS)
    rows_ticket_kernel(const uint4 *w, int rows, float *sink, const float *__restrict__ x,
                       float *small_x, unsigned *ticket) {
    rows_body<true, false, false, false, XB, true>(w, rows, sink, x, small_x, ticket);
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

/* The whole step in one kernel of NT-thread blocks. barriers: 0 = stream only. At most 64
 * registers (4 blocks of 256 threads, or one of 1024, a multiprocessor), the bound its figures
 * in docs/gpu.md were measured with. */
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

static float time_persistent(const void *k, int grid, int nt, const uint4 *w, const phase *ph,
                             int n_ph, float *x, float *sink, int barriers, cudaStream_t s,
                             int reps) {
    void *args[] = {(void *)&w, (void *)&ph,   (void *)&n_ph,
                    (void *)&x, (void *)&sink, (void *)&barriers};
    return time_reps(s, reps, [&] { CK(cudaLaunchCooperativeKernel(k, grid, nt, args, 0, s)); });
}

/* One matrix at a time, launched back to back (20 launches in a graph, PDL): the kernel's own
 * streaming rate, without the step's small ops - what the arithmetic costs apart from the step's
 * structure. STEP_SHAPE_MB=N: only the matrix of N MB (for a profiler). */
static void one_matrix(const uint4 *w, const float *x, float *sink, cudaStream_t s, double copy_gbs,
                       int lim_smem) {
    const char *only = getenv("STEP_SHAPE_MB");

    const double mbs[] = {105.0, 52.0, 15.7, 5.2};
    const struct {
        const char *name;
        void (*k)(const uint4 *, int, float *, const float *);
    } ks[] = {{"rows, math", rows_kernel<true, false>},
              {"rows, fold", rows_kernel<false, false>},
              {"rows, math, x once", rows_kernel<true, false, true>},
              {"rows, fold, x loads", rows_kernel<false, false, false, true>},
              {"rows, math, x in shared", rows_kernel<true, true>},
              {"rows, math, x bf16", rows_kernel<true, false, false, false, true>}};
    printf("one matrix back to back (GB/s, %% of copy bandwidth):\n  %-22s", "");
    for (double mb : mbs)
        if (!only || atof(only) == mb) printf(" %10.1f MB", mb);
    printf("\n");
    for (auto &kk : ks) {
        printf("  %-22s", kk.name);
        for (double mb : mbs) {
            if (only && atof(only) != mb) continue;
            const int rows = (int)(mb * 1e6 / ROWB);
            cudaGraph_t gr;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            for (int r = 0; r < 20; r++)
                launch_pdl(kk.k, (rows + 7) / 8, lim_smem, s, (const uint4 *)w, rows, sink,
                           (const float *)x);
            CK(cudaStreamEndCapture(s, &gr));
            CK(cudaGraphInstantiate(&ge, gr, 0));
            const float ms = time_graph(ge, s, 5) / 20;
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(gr));
            const double gbs = (double)rows * ROWB / (ms * 1e-3) / 1e9;
            printf("  %5.0f %3.0f%%", gbs, 100.0 * gbs / copy_gbs);
        }
        printf("\n");
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it is measured */
    step_setup S = step_setup_new();
    const int sms = S.sms, n_ph = S.n_ph;
    const phase *ph = S.ph, *dph = S.dph;
    uint4 *w = S.w;
    float *x = S.x, *sink = S.sink;
    const cudaStream_t s = S.s;
    const double floor_ms = S.floor_ms, copy_gbs = S.copy_gbs;
    const int lim_smem = 31 * 1024; /* 7 blocks a multiprocessor: 6 of a kernel + 1 of the next */
    if (getenv("STEP_SHAPE_ONE")) { /* STEP_SHAPE_ONE=1: the one-matrix table alone */
        one_matrix(w, x, sink, s, copy_gbs, lim_smem);
        return 0;
    }

    int per_sm_stream = 0, per_sm_persist = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_stream, stream_kernel, THREADS, 0));
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm_persist, persistent_kernel<THREADS>,
                                                     THREADS, 0));
    const int reps = 20;
    for (int bpsm = 2; bpsm <= 8; bpsm *= 2) {
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
    {
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

    /* The chain with product-shaped streams, with the trivial fold or a product's arithmetic
     * (math: bf16 weights against x through L1, as matvec.cu). */
    const size_t rowsw = ROWB / 16;
    void (*const rows_k[4])(const uint4 *, int, float *, const float *) = {
        rows_kernel<false, false>, rows_kernel<true, false>, rows_kernel<true, true>,
        rows_kernel<true, false, false, false, true>};
    for (int m = 0; m < 4; m++)
        CK(cudaFuncSetAttribute(rows_k[m], cudaFuncAttributeMaxDynamicSharedMemorySize, lim_smem));
    CK(cudaFuncSetAttribute(rows_ticket_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            lim_smem));
    CK(cudaFuncSetAttribute(rows_ticket_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            lim_smem));
    unsigned *ticket;
    CK(cudaMalloc(&ticket, sizeof *ticket));
    CK(cudaMemset(ticket, 0, sizeof *ticket));
    CK(cudaFuncSetAttribute(rowsk_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            lim_smem));
    CK(cudaFuncSetAttribute(rowsk_kernel<5>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            lim_smem));
    CK(cudaFuncSetAttribute(rowsk_kernel<10>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            lim_smem));
    typedef void (*split_fn)(const uint4 *, int, float *, const float *);
    struct {
        const char *name;
        int kind, bpsm, uu; /* kind 0: rows, 1: even runs, 2: even strided, 3: split, 5: split-K
                               rows (bpsm: its chunks first), 6: rows whose last block runs the
                               small op that follows (TICKET) */
        int math; /* 0: the fold, 1: a product's arithmetic, 2: the same, x in shared, 3: x bf16 */
        split_fn k; /* split: the kernel */
        int threads;
    } shapes[] = {
        {"rows (matvec.cu layout)", 0, 0, 0, 0, NULL, 0},
        {"rows, math", 0, 0, 0, 1, NULL, 0},
        {"rows, math, x in shared memory", 0, 0, 0, 2, NULL, 0},
        {"rows, math, x bf16", 0, 0, 0, 3, NULL, 0},
        {"rows, math, small op in last block", 6, 0, 0, 1, NULL, 0},
        {"rows, math, x bf16, small op in last", 6, 0, 0, 3, NULL, 0},
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
        if (shapes[v].kind == 3) { /* a resident grid: at most what the registers allow */
            int fit = 0;
            CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, shapes[v].k, shapes[v].threads,
                                                             0));
            grid_p = (shapes[v].bpsm < fit ? shapes[v].bpsm : fit) * sms;
        }
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int p = 0; p < n_ph; p++) {
            const int rows = (int)(ph[p].n16 / rowsw);
            const uint4 *wp = w + ph[p].off;
            if (!ph[p].n16) {
                launch_pdl(small_kernel, 1, 0, s, x);
            } else if (shapes[v].kind == 6) {
                const bool fold_next = p + 1 < n_ph && !ph[p + 1].n16;
                if (fold_next)
                    launch_pdl(
                        shapes[v].math == 3 ? rows_ticket_kernel<true> : rows_ticket_kernel<false>,
                        (rows + 7) / 8, lim_smem, s, wp, rows, sink, (const float *)x, x, ticket);
                else
                    launch_pdl(rows_k[shapes[v].math], (rows + 7) / 8, lim_smem, s, wp, rows, sink,
                               (const float *)x);
                p += fold_next; /* the small op ran in the last block */
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
            } else if (shapes[v].kind == 3) {
                launch_pdl_ex(shapes[v].k, grid_p, shapes[v].threads, 0, s, wp, rows, sink,
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
        if (shapes[v].kind == 3) snprintf(grid_note, sizeof grid_note, " [%d/SM]", grid_p / sms);
        printf("  chain, %-30s %.3f ms  %5.1f %%  (%.3f of rows)%s\n", shapes[v].name, ms,
               100.0 * floor_ms / ms, ms / base, grid_note);
    }
    one_matrix(w, x, sink, s, copy_gbs, lim_smem);
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
