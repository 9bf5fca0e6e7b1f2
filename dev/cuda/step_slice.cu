/* step_slice.cu: E4B's decode step (step_common.cuh: the same bytes and small ops as
 * step_shape.cu and step_mega.cu) as a chain of PDL launches in which every stream is a product
 * in the layout of kernels/mlp.cu - whether every product of the engine would gain from that
 * layout.
 *
 * kernels/mlp.cu's layout - one block a multiprocessor owning a run of rows, x in registers
 * (8 columns a thread), the rows streamed through a shared-memory ring by the copy engine -
 * streams E4B's MLP at 99.8 % of copy bandwidth in a chain of its own kernels (mlp_slice.cu),
 * because a launch's ring (100 KB) fits beside the running one's and fills under it
 * (programmatic dependent launch). In the engine it gains only 1 %: the products before it hold
 * the multiprocessors, so its ring starts late. If every product had the layout, every ring
 * could fill under its predecessor. This measures that chain:
 *
 *   - slice: every stream one slice_kernel launch (rows of 2560 bf16, batches of 16 rows a block
 *     reduction), every small op one one-block kernel that reads the product's first 2560
 *     outputs and writes x (a norm's latency chain), all PDL;
 *   - the same without the small ops (the streams' own overlap);
 *   - rings of 20 and 9 rows (100 and 45 KB: two or four launches' rings fit a multiprocessor);
 *   - the producer keeps at most D rows in flight (asked for, not landed), the ring
 *     still 20 rows: a ring of 100 KB a multiprocessor, two launches' worth, is 13-26 MB asked
 *     of memory at once, 3-6 us of the copy bandwidth. If the memory system serves requests
 *     roughly in order, every request on a dependency's path (the reduction's stores, the small
 *     op's reads of y, the next launch's reads of x) queues behind that much, and a boundary
 *     costs that long (Little's law). About 3 MB in flight (0.7 us of latency times the
 *     bandwidth) should keep memory busy; more only adds queueing. Measured on an H200:
 *     8-10 rows best, 2.46 against 2.55 ms with the small ops; 4 and fewer starve memory.
 *     Asking L2 for the next 8 / 24 MB at each stream's end costs 3-19 %, so the program has no
 *     such prefetch (docs/gpu.md, "Tried and dropped").
 *
 * The layout as a whole: 76.5 % of copy against 76.6 % for the rows layout (streams only), no
 * gain (docs/gpu.md, "Tried and dropped"). Compare with step_shape's "chain" rows (the engine's
 * layout) run on the same machine. The sums are real (x in registers against the weights) but
 * the values are not checked: this is the timing of the layout, not a kernel of the engine.
 *
 * sm_90 and later (cp.async.bulk); elsewhere it says so and exits.
 * nvcc -O3 -arch=sm_90 -std=c++17 -o step_slice dev/cuda/step_slice.cu && ./step_slice */
#include "../../kernels/bulk.cuh"
#include "../../kernels/warp_sum_t.cuh"
#include "step_common.cuh"

#define SL_CT  (ROWB / 16) /* consumer threads: 8 columns each (320) */
#define SL_CW  (SL_CT / 32)
#define SL_NTH (SL_CT + 32)
#define SL_B   16 /* rows a block reduction */

/* Rows [r0, r1) of w (rows x 2560 bf16) against x, a block a multiprocessor; y[r] = w[r] . x.
 * depth: the most rows the producer has asked for that have not landed (S: no limit). */
template <int S>
__global__ void __launch_bounds__(SL_NTH, 1)
    slice_kernel(const uint4 *__restrict__ w, int rows, const float *__restrict__ x,
                 float *__restrict__ y, int depth) {
    extern __shared__ __align__(128) unsigned char ring[];
    __shared__ uint64_t full[S], empty[S];
    __shared__ float red[SL_CW][SL_B];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r0 = (int)((long long)rows * blockIdx.x / gridDim.x);
    const int r1 = (int)((long long)rows * (blockIdx.x + 1) / gridDim.x);
    ring_init(full, empty, S, SL_CW);
    __syncthreads();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
    if (warp == SL_CW) { /* the producer: weights need nothing of the previous kernel */
        if (lane == 0) {
            for (int r = r0, g = 0; r < r1; r++, g++) {
                /* row g - depth's stage is refilled only at g - depth + S > g: its phase is
                 * still the one to wait for */
                if (depth < S && g >= depth) ring_wait_landed<S>(full, g - depth);
                ring_put_at<S>(ring, full, empty, g, w + (size_t)r * (ROWB / 16), ROWB);
            }
        }
        return;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    const int t = threadIdx.x;
    float xr[8];
    {
        const float4 a = reinterpret_cast<const float4 *>(x)[2 * t];
        const float4 b = reinterpret_cast<const float4 *>(x)[2 * t + 1];
        xr[0] = a.x, xr[1] = a.y, xr[2] = a.z, xr[3] = a.w;
        xr[4] = b.x, xr[5] = b.y, xr[6] = b.z, xr[7] = b.w;
    }
    for (int rb = r0, g = 0; rb < r1; rb += SL_B) {
        const int nr = min(SL_B, r1 - rb);
        float acc[SL_B];
#pragma unroll
        for (int i = 0; i < SL_B; i++) {
            acc[i] = 0.0f;
            if (i < nr) {
                float wf[8];
                bf16x8(ring_take_at<S>(ring, full, empty, g, ROWB, t, lane), wf);
                float a = 0.0f;
#pragma unroll
                for (int j = 0; j < 8; j++)
                    a = fmaf(wf[j], xr[j], a);
                acc[i] = a;
                g++;
            }
        }
        int row;
        const float v = warp_sum_t<SL_B>(acc, lane, &row);
        if ((lane & (32 / SL_B - 1)) == 0) red[warp][row] = v;
        bar_consumers(SL_CT);
        if (t < nr) {
            float sum = 0.0f;
            for (int k = 0; k < SL_CW; k++)
                sum += red[k][t];
            y[rb + t] = sum;
        }
        bar_consumers(SL_CT);
    }
}

/* The small op: x = y / rms(y) over the product's first SMALL_N outputs, one block. */
__global__ void __launch_bounds__(THREADS) slice_small_kernel(const float *y, float *x) {
    pdl_wait();
    small_op(y, x);
}

/* The kernel's ring of S rows allowed, at a preferred shared-memory carveout in percent (-1:
 * the driver's choice), which decides whether the next launch's block (its ring) fits beside a
 * running one; returns how many of its blocks a multiprocessor then holds. */
template <int S> static int slice_attrs(int carveout) {
    CK(cudaFuncSetAttribute(slice_kernel<S>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            S * ROWB));
    CK(cudaFuncSetAttribute(slice_kernel<S>, cudaFuncAttributePreferredSharedMemoryCarveout,
                            carveout));
    int blocks = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, slice_kernel<S>, SL_NTH, S * ROWB));
    return blocks;
}

/* depth: rows in flight a producer at most (S: no limit) */
template <int S>
static float slice_chain(const step_setup &St, float *y, int small_ops, int reps, int carveout,
                         int depth = S) {
    const size_t smem = (size_t)S * ROWB;
    slice_attrs<S>(carveout);
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(St.s, cudaStreamCaptureModeThreadLocal));
    for (int p = 0; p < St.n_ph; p++)
        if (St.ph[p].n16)
            launch_pdl_ex(slice_kernel<S>, St.sms, SL_NTH, smem, St.s,
                          (const uint4 *)(St.w + St.ph[p].off), (int)(St.ph[p].n16 * 16 / ROWB),
                          (const float *)St.x, y, depth);
        else if (small_ops)
            launch_pdl(slice_small_kernel, 1, 0, St.s, (const float *)y, St.x);
    CK(cudaStreamEndCapture(St.s, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    const float ms = time_graph(ge, St.s, reps);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(gr));
    return ms;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    int major;
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    if (major < 9) {
        printf("step_slice: needs sm_90 or later (cp.async.bulk); this device is sm_%d\n", major);
        return 0;
    }
    step_setup St = step_setup_new();
    float *y;
    CK(cudaMalloc(&y, (size_t)32 << 20)); /* outputs of the largest stream (20.5 K rows) */
    CK(cudaMemset(y, 0, (size_t)32 << 20));
    const int reps = getenv("STEP_SLICE_REPS") ? atoi(getenv("STEP_SLICE_REPS")) : 20;
    /* the driver's carveout, then 100 %: how many blocks fit a multiprocessor (the next
     * launch's ring must fit beside the running one's for PDL to fill it early), then the
     * chains */
    const int carveouts[2] = {-1, 100};
    for (int k = 0; k < 2; k++) {
        const int co = carveouts[k];
        printf("carveout %s: blocks a multiprocessor, ring of 20 rows %d, of 9 rows %d\n",
               co < 0 ? "driver's" : "100 %", slice_attrs<20>(co), slice_attrs<9>(co));
    }
    for (int k = 0; k < 2; k++)
        for (int small_ops = 1, co = carveouts[k]; small_ops >= 0; small_ops--) {
            const float m20 = slice_chain<20>(St, y, small_ops, reps, co);
            const float m9 = slice_chain<9>(St, y, small_ops, reps, co);
            const char *what = small_ops ? "with the small ops" : "streams only";
            const char *cv = co < 0 ? "" : ", carveout 100 %";
            printf("slice chain, ring of 20 rows (100 KB), %-18s %.3f ms  %5.1f %% of copy%s\n",
                   what, m20, 100.0 * St.floor_ms / m20, cv);
            printf("slice chain, ring of  9 rows  (45 KB), %-18s %.3f ms  %5.1f %% of copy%s\n",
                   what, m9, 100.0 * St.floor_ms / m9, cv);
        }
    /* at most D rows in flight a producer (ring of 20 rows, driver's carveout), against the
     * same chain without the limit, measured again beside them */
    for (int small_ops = 1; small_ops >= 0; small_ops--) {
        const char *what = small_ops ? "with the small ops" : "streams only";
        const float m0 = slice_chain<20>(St, y, small_ops, reps, -1);
        printf("slice chain, ring of 20 rows, %-18s, no limit in flight   %.3f ms  %5.1f %%\n",
               what, m0, 100.0 * St.floor_ms / m0);
        const int depths[6] = {6, 8, 10, 12, 14, 16};
        for (int i = 0; i < 6; i++) {
            const float m = slice_chain<20>(St, y, small_ops, reps, -1, depths[i]);
            printf("slice chain, ring of 20 rows, %-18s, %2d rows in flight     %.3f ms  %5.1f %% "
                   "(%.1f MB a launch)\n",
                   what, depths[i], m, 100.0 * St.floor_ms / m,
                   depths[i] * (double)ROWB * St.sms / 1e6);
        }
    }
    return 0;
}
