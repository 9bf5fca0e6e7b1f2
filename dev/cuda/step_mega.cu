/* step_mega.cu: E4B's decode step (step_common.cuh: the same bytes as step_shape.cu) as one
 * persistent kernel in the shape of a "megakernel" that streams weights ahead of the step's
 * dependencies - the design that Hazy Research's Llama-1B megakernel and calm's layer kernel
 * point to, measured apart from the engine:
 *
 *   - one block a multiprocessor; a producer warp streams the block's rows of every stream, in
 *     step order, into a ring of shared-memory stages with cp.async.bulk (the copy engine), and
 *     waits for nothing but a free stage (weights never depend on the step's results);
 *   - W consumer warps take the streams in order: wait until every block has finished the
 *     previous stream (a counter per stream, raised by each block with release semantics - only
 *     the consumers wait, the copies in flight keep coming), do the small op themselves (the
 *     norm of the previous output into shared memory, as calm's kernel does), then the products
 *     of their rows against it (bf16 weights from the ring, x from shared memory or registers);
 *   - variants: without the waits (what the dependencies cost), and with the stages ahead of the
 *     copies asked into L2 first (cp.async.bulk.prefetch.L2);
 *   - one more step of the first variants traced (trace_mark: %globaltimer per phase and block
 *     at release, x ready, rows written, counter raised), printed as where a dependency's time
 *     goes: waiting for the slowest block, the poll, the small op, the rows, the fence and
 *     counter (measured: 1.0, 0.5, 1.2, 7.0 and 1.8 us);
 *   - the signal itself three ways (signal_done): a full fence, an acq_rel fence, a release add
 *     (measured: all 1.83-1.87 us - not the fence's kind; most likely the stores draining);
 *   - LL outputs (prev_x): the data as its own signal, no fence, counter or poll;
 *   - FOLD consumers: no x, a fold of the weights - consumers well faster than memory, as
 *     tensor cores would make them, to see whether the ring then absorbs the waits;
 *   - DEPTH: at most that many stages asked for and not landed. The traced 1.8 us of fence +
 *     counter suggests stores draining behind the weight copies: with 160 KB a multiprocessor
 *     asked for at once (21 MB over the GPU, 5 us of bandwidth) every request queues that long.
 *     step_slice.cu and the engine's MLP kernel run faster with 40-60 KB in flight.
 *
 * Measured on an H200: 89 % of copy bandwidth without the waits, 62 % with them - each of the
 * 252 dependencies costs about 3.4 us of the critical path (the last block's fence and counter,
 * the poll, the small op's read of x from L2), no better than the engine's chain of kernels; the
 * L2 prefetch makes it worse (44-52 %). LL outputs 65-66 %; with folding consumers 71 % (94 %
 * without the waits) - a dependency's round trip through L2 under the weight stream outlasts
 * what a ring of 160-200 KB a multiprocessor holds. Over its forms, 61-71 % of the floor with
 * the dependencies and 88-94 % without: the design is not in the engine (docs/gpu.md, "Tried
 * and dropped").
 *
 * sm_90 and later (cp.async.bulk, mbarrier transaction counts); elsewhere it says so and exits.
 * Built with -DDEV_CUDA=ON (dev/cuda/CMakeLists.txt), or by hand:
 * nvcc -O3 -arch=sm_90 -o step_mega dev/cuda/step_mega.cu && ./step_mega
 * STEP_MEGA_REPS=1 for a run under compute-sanitizer. */
#include "step_common.cuh"

#include "../../kernels/bulk.cuh"

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
/* x_dot: acc + 8 bf16 weights against 8 floats of x held in registers */
__device__ __forceinline__ float x_dot(uint4 u, const float *a, float acc) {
    float w[8];
    bf16x8(u, w);
    return acc + (w[0] * a[0] + w[1] * a[1] + w[2] * a[2] + w[3] * a[3]) +
           (w[4] * a[4] + w[5] * a[5] + w[6] * a[6] + w[7] * a[7]);
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

/* trace (null when timing): per stream phase and block, thread 0's %globaltimer (ns, one clock
 * for the whole GPU) when the block is released (0), has x (1), has written its rows (2), and has
 * raised the phase's counter (3): where a dependency's 3.4 us go. */
__device__ __forceinline__ void trace_mark(unsigned long long *trace, int sp, int k) {
    if (!trace || threadIdx.x) return;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    trace[((size_t)sp * gridDim.x + blockIdx.x) * 4 + k] = t;
}

/* A block's "this stream is done" signal: count + 1 at gpu scope, ordered after the block's
 * outputs (the consumers' bar.sync before it makes them this thread's to release). SIG 0:
 * __threadfence() (fence.sc.gpu) and a relaxed atomic add, the form of the header's 62 %; 1:
 * fence.acq_rel.gpu and a relaxed add; 2: one red.release.gpu add, no separate fence. */
template <int SIG> __device__ __forceinline__ void signal_done(unsigned *c) {
    if (SIG == 0) {
        __threadfence();
        atomicAdd(c, 1u);
    } else if (SIG == 1) {
        asm volatile("fence.acq_rel.gpu;\nred.relaxed.gpu.global.add.u32 [%0], 1;" ::"l"(c)
                     : "memory");
    } else {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(c) : "memory");
    }
}

/* LL ("low latency", as NCCL's protocol of that name): an output is one 64-bit store of its
 * value and the step's epoch, so the data is its own signal - no fence, no counter, no poll of
 * a counter before the reads of x: the small op reads the previous phase's outputs and reads
 * again those whose epoch is not yet this step's. Each stream phase has its own buffer (ll +
 * sp x 32768), so no later phase overwrites one a slower block still reads: here a block waits
 * only for the outputs it reads (the first SMALL_N), not for every block, so unlike the
 * counters nothing else holds a fast block back. */
__device__ __forceinline__ void st_relaxed_u64(unsigned long long *p, unsigned long long v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ unsigned long long ld_relaxed_u64(const unsigned long long *p) {
    unsigned long long v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}
/* x[j] of the previous stream phase (rows prev_rows; sp: this one) once it carries epoch */
template <bool LL>
__device__ __forceinline__ float prev_x(const float *prev, const unsigned long long *ll, int sp,
                                        int j, int prev_rows, unsigned epoch) {
    if (!LL) return __ldcg(prev + j);
    if (sp == 0 || j >= prev_rows) return 1e-3f * (float)(j & 7);
    const unsigned long long *q = ll + (size_t)(sp - 1) * 32768 + j;
    unsigned long long u = ld_relaxed_u64(q);
    while ((unsigned)(u >> 32) != epoch)
        u = ld_relaxed_u64(q);
    return __uint_as_float((unsigned)u);
}

/* FOLD: the consumers' products replaced by a fold of the weights (no x, wrong sums): consumers
 * well faster than memory, as tensor cores would make them - does the ring then absorb the
 * waits? */
template <int W, int STG, bool SYNC, bool XR = false, int AHEAD = 0, int SIG = 0, bool LL = false,
          bool FOLD = false, int DEPTH = 0>
__global__ void __launch_bounds__((W + 1) * 32, 1)
    mega_kernel(const uint4 *w, const phase *ph, int n_ph, float *buf, unsigned *cnt,
                unsigned target, float *sink, unsigned long long *trace, unsigned long long *ll,
                unsigned epoch) {
    extern __shared__ __align__(128) unsigned char ring[]; /* STG stages of W rows */
    __shared__ uint64_t full[STG], empty[STG];
    __shared__ __align__(16) float xs[SMALL_N];
    __shared__ float red[W];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, G = gridDim.x;
    ring_init(full, empty, STG, W);
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
            /* DEPTH > 0: at most DEPTH stages asked for and not landed (stage g - DEPTH is
             * refilled only at g - DEPTH + STG > g, so its phase is still the one to wait for) */
            static_assert(DEPTH < STG, "DEPTH counts stages in flight, fewer than the ring's");
            if (DEPTH && g >= DEPTH) mbar_wait(&full[(g - DEPTH) % STG], ((g - DEPTH) / STG) & 1);
            if (g >= STG) mbar_wait(&empty[st], ((g / STG) - 1) & 1);
            mbar_expect(&full[st], nr * ROWB);
            bulk_copy(ring + (size_t)st * W * ROWB, w + ph[it.p].off + (size_t)it.ra * (ROWB / 16),
                      nr * ROWB, &full[st]);
        }
        return;
    }
    unsigned g = 0;
    int sp = 0, prev_rows = 0; /* stream phases done, the last one's rows */
    float tot = 0.0f;
    for (int p = 0; p < n_ph; p++) {
        if (!ph[p].n16) continue;
        float *out = buf + (size_t)(sp & 1) * 32768;
        const float *prev = buf + (size_t)((sp + 1) & 1) * 32768;
        if (SYNC && !LL && sp > 0) {
            if (threadIdx.x == 0)
                while (ld_acquire(&cnt[sp - 1]) < target) {
                }
            bar_consumers(W * 32);
        }
        trace_mark(trace, sp, 0);
        /* the small op: x = prev / rms(prev), into shared memory */
        float ss = 0.0f;
        for (int j = threadIdx.x; j < SMALL_N; j += W * 32) {
            const float v = prev_x<LL>(prev, ll, sp, j, prev_rows, epoch);
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
        trace_mark(trace, sp, 1);
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
                    acc =
                        FOLD ? acc + fold(q[c * 32 + lane])
                        : XR ? x_dot(q[c * 32 + lane], xr + c * 8, acc)
                             : chunk_dot<true, true>(q[c * 32 + lane], xs, c * 256 + lane * 8, acc);
                acc = warp_sum(acc);
                if (lane == 0 && LL)
                    st_relaxed_u64(ll + (size_t)sp * 32768 + row,
                                   (unsigned long long)epoch << 32 | __float_as_uint(acc * 1e-3f));
                else if (lane == 0)
                    out[row] = acc * 1e-3f;
                tot += acc;
            }
            __syncwarp();
            if (lane == 0) mbar_arrive(&empty[st]);
        }
        bar_consumers(W * 32); /* the block's outputs of this phase are written */
        trace_mark(trace, sp, 2);
        if (SYNC && !LL && threadIdx.x == 0) signal_done<SIG>(&cnt[sp]);
        trace_mark(trace, sp, 3);
        sp++;
        prev_rows = rows;
    }
    if (tot == 12345.0f) sink[blockIdx.x] = tot;
}

/* The traced step's dependencies, averaged over the stream phases after the first and over the
 * blocks (us): how long a block that has raised its counter waits for the last block to raise
 * it, how long after that last raise it is released (the poll), then its small op, its rows, and
 * its fence and counter increment. */
static void print_trace(const unsigned long long *dtr, int n_stream, int G) {
    const size_t n = (size_t)n_stream * G * 4;
    unsigned long long *t = (unsigned long long *)malloc(n * sizeof *t);
    CK(cudaMemcpy(t, dtr, n * sizeof *t, cudaMemcpyDeviceToHost));
    double slowest = 0, poll = 0, small = 0, rows = 0, raise = 0;
    long cnt = 0;
    for (int sp = 1; sp < n_stream; sp++) {
        unsigned long long last = 0;
        for (int b = 0; b < G; b++) {
            const unsigned long long r = t[((size_t)(sp - 1) * G + b) * 4 + 3];
            if (r > last) last = r;
        }
        for (int b = 0; b < G; b++) {
            const unsigned long long *e = t + ((size_t)sp * G + b) * 4;
            const unsigned long long mine = t[((size_t)(sp - 1) * G + b) * 4 + 3];
            slowest += (double)(last - mine);
            poll += (double)e[0] - (double)last;
            small += (double)(e[1] - e[0]);
            rows += (double)(e[2] - e[1]);
            raise += (double)(e[3] - e[2]);
            cnt++;
        }
    }
    printf(
        "    traced, a dependency on average: waiting for the last block %.2f us, released %.2f us "
        "after its raise, small op %.2f us, rows %.2f us, fence + counter %.2f us "
        "(%%globaltimer)\n",
        slowest / cnt / 1e3, poll / cnt / 1e3, small / cnt / 1e3, rows / cnt / 1e3,
        raise / cnt / 1e3);
    free(t);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* each line as it is measured */
    step_setup S = step_setup_new();
    if (!pdl_on) {
        printf("step_mega needs sm_90 or later (cp.async.bulk): nothing to measure here\n");
        return 0;
    }
    const int sms = S.sms, n_ph = S.n_ph;
    const uint4 *w = S.w;
    const phase *dph = S.dph;
    float *sink = S.sink;
    const cudaStream_t s = S.s;
    const double floor_ms = S.floor_ms;
    const char *reps_env = getenv("STEP_MEGA_REPS");
    const int reps = reps_env ? atoi(reps_env) : 20;
    /* mega: one persistent kernel, the weights streamed ahead by the copy engine, a counter
     * per stream phase instead of a grid barrier, the small op done by every block (sm_90). */
    {
        float *buf;
        unsigned *cnt;
        unsigned long long *ll; /* LL: a buffer of 32768 outputs a stream phase */
        const size_t ll_bytes = (size_t)S.n_stream * 32768 * sizeof(unsigned long long);
        CK(cudaMalloc(&ll, ll_bytes));
        CK(cudaMemset(ll, 0, ll_bytes));
        unsigned epoch = 0; /* LL: one a launch, never 0 */
        CK(cudaMalloc(&buf, 2 * 32768 * sizeof(float)));
        CK(cudaMemset(buf, 0, 2 * 32768 * sizeof(float)));
        CK(cudaMalloc(&cnt, n_ph * sizeof(unsigned)));
        const size_t trace_bytes = (size_t)S.n_stream * sms * 4 * sizeof(unsigned long long);
        struct {
            const char *name;
            const void *k;
            int W, STG;
            bool trace; /* also run one step traced (trace_mark) */
        } mk[] = {
            {"16 warps, 2 stages", (const void *)mega_kernel<16, 2, true>, 16, 2, true},
            {"16 warps, 2 stages, LL outputs",
             (const void *)mega_kernel<16, 2, true, false, 0, 0, true>, 16, 2, true},
            {"12 warps, 3 stages, LL outputs",
             (const void *)mega_kernel<12, 3, true, false, 0, 0, true>, 12, 3, false},
            {"16 warps, 2 stages, x in registers, LL outputs",
             (const void *)mega_kernel<16, 2, true, true, 0, 0, true>, 16, 2, false},
            {"16 warps, 2 stages, fold",
             (const void *)mega_kernel<16, 2, true, false, 0, 0, false, true>, 16, 2, true},
            {"16 warps, 2 stages, LL outputs, fold",
             (const void *)mega_kernel<16, 2, true, false, 0, 0, true, true>, 16, 2, true},
            {"16 warps, 2 stages, no waits, fold",
             (const void *)mega_kernel<16, 2, false, false, 0, 0, false, true>, 16, 2, false},
            {"8 warps, 4 stages, LL outputs, fold",
             (const void *)mega_kernel<8, 4, true, false, 0, 0, true, true>, 8, 4, false},
            {"16 warps, 2 stages, no waits", (const void *)mega_kernel<16, 2, false>, 16, 2, true},
            {"16 warps, 2 stages, acq_rel fence",
             (const void *)mega_kernel<16, 2, true, false, 0, 1>, 16, 2, true},
            {"16 warps, 2 stages, red.release", (const void *)mega_kernel<16, 2, true, false, 0, 2>,
             16, 2, true},
            {"16 warps, 2 stages, L2 2 ahead", (const void *)mega_kernel<16, 2, true, false, 2>, 16,
             2, false},
            {"16 warps, 2 stages, L2 4 ahead", (const void *)mega_kernel<16, 2, true, false, 4>, 16,
             2, false},
            {"16 warps, 2 stages, L2 8 ahead", (const void *)mega_kernel<16, 2, true, false, 8>, 16,
             2, false},
            {"16 warps, 2 stages, L2 16 ahead", (const void *)mega_kernel<16, 2, true, false, 16>,
             16, 2, false},
            {"16 warps, 2 stages, L2 4 ahead, no waits",
             (const void *)mega_kernel<16, 2, false, false, 4>, 16, 2, false},
            {"8 warps, 4 stages, L2 8 ahead", (const void *)mega_kernel<8, 4, true, false, 8>, 8, 4,
             false},
            /* the stages in flight limited apart from the ring (step_slice and the engine's
             * MLP kernel run faster with 40-60 KB a multiprocessor in flight) */
            {"8 warps, 4 stages", (const void *)mega_kernel<8, 4, true>, 8, 4, false},
            {"8 warps, 4 stages, 1 in flight (40 KB)",
             (const void *)mega_kernel<8, 4, true, false, 0, 0, false, false, 1>, 8, 4, true},
            {"8 warps, 4 stages, 2 in flight (80 KB)",
             (const void *)mega_kernel<8, 4, true, false, 0, 0, false, false, 2>, 8, 4, false},
            {"8 warps, 4 stages, LL outputs, 1 in flight",
             (const void *)mega_kernel<8, 4, true, false, 0, 0, true, false, 1>, 8, 4, true},
            {"8 warps, 4 stages, LL outputs, fold, 1 in flight",
             (const void *)mega_kernel<8, 4, true, false, 0, 0, true, true, 1>, 8, 4, false},
            {"4 warps, 8 stages, 2 in flight (40 KB)",
             (const void *)mega_kernel<4, 8, true, false, 0, 0, false, false, 2>, 4, 8, false},
            {"4 warps, 8 stages, LL outputs, 2 in flight",
             (const void *)mega_kernel<4, 8, true, false, 0, 0, true, false, 2>, 4, 8, false},
            {"4 warps, 8 stages, LL outputs, fold, 2 in flight",
             (const void *)mega_kernel<4, 8, true, false, 0, 0, true, true, 2>, 4, 8, false},
            {"4 warps, 8 stages, no waits, 2 in flight",
             (const void *)mega_kernel<4, 8, false, false, 0, 0, false, false, 2>, 4, 8, false},
            {"16 warps, 2 stages, 1 in flight (80 KB)",
             (const void *)mega_kernel<16, 2, true, false, 0, 0, false, false, 1>, 16, 2, true},
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
            unsigned long long *tr = NULL;
            auto launch = [&] {
                target += (unsigned)sms;
                epoch++;
                void *args[] = {(void *)&w,   (void *)&dph,    (void *)&n_ph, (void *)&buf,
                                (void *)&cnt, (void *)&target, (void *)&sink, (void *)&tr,
                                (void *)&ll,  (void *)&epoch};
                CK(cudaLaunchCooperativeKernel(m.k, sms, nt, args, (size_t)dsm, s));
            };
            const float ms = time_reps(s, reps, launch);
            printf("  %-30s %.3f ms  %5.1f %%\n", m.name, ms, 100.0 * floor_ms / ms);
            if (m.trace) { /* one more step, traced */
                CK(cudaMalloc(&tr, trace_bytes));
                launch();
                CK(cudaStreamSynchronize(s));
                print_trace(tr, S.n_stream, sms);
                CK(cudaFree(tr));
                tr = NULL;
            }
        }
        CK(cudaFree(buf));
        CK(cudaFree(cnt));
        CK(cudaFree(ll));
    }

    return 0;
}
