/* mlp_slice.cu: E4B's MLP (gate, up, GeLU, down) with a block owning a slice of the intermediate
 * dimension instead of rows of each product - the layout of kernels/mlp.cu, measured apart from
 * the engine.
 *
 * As two products (kernels/matvec.cu: the gate + up pair with its GeLU epilogue, then down) and
 * a norm + add, a decode layer's MLP reads at 83 % and 70 % of copy bandwidth (ncu). What a
 * product loses against a copy is the loads of x through L1, 32 bytes of fp32 x for every 16
 * bytes of weights, because a warp owns a row and every row needs all of x. Here:
 *
 *   - one block a multiprocessor owns intermediate indices [k0, k1) (10240 / 132 = 77-78);
 *   - its 320 consumer threads each own 8 columns of the hidden size (2560 = 320 x 8) and hold
 *     those 8 floats of x in registers for the whole kernel: a gate or up row is a 16-byte
 *     read of shared memory and 8 fmas a thread, then one sum over the block;
 *   - down is stored transposed (row k = column k of down: 2560 bf16), so the block's slice of it
 *     is 77 contiguous rows and its contribution is h[k] (a broadcast scalar) times row k, added
 *     into 8 accumulators a thread - no x at all;
 *   - the block's 2560 partial outputs go to partial[block]; a second kernel sums the 132
 *     partials of each output in block order (deterministic, as the engine's reproducibility
 *     rule needs);
 *   - a producer warp streams the block's rows (gate and up of a batch of B indices, then their
 *     down rows) into a ring of S one-row stages with cp.async.bulk and waits only for a free
 *     stage: there is no dependency between blocks inside the MLP, and the ring fills before the
 *     programmatic-dependent-launch wait.
 *
 * Printed: us a layer and the share of copy bandwidth of the MLP's 157 MB, for the kernel alone,
 * with the partial sums, and with a one-block norm after them (the chain a layer would run),
 * against a CPU reference of one layer. The two-product form's figures for comparison: gate + up
 * 29.7 us + down 17.4 us + norm 4.0 (each isolated) - about 47 us of products a layer in the step.
 *
 * The reduction after the MLP without a kernel of its own: kernel, partial sums and norm as
 * three kernels cross two boundaries of about 2 us each. Two ways to fewer, measured as chains
 * beside that form:
 *   - pairs: the kernel in clusters of 2 blocks (a TPC), each pair adding its two partials
 *     through distributed shared memory, so the sums read 66 partials instead of 132;
 *   - reduce-norm: the partial sums and the norm as one kernel of one cluster of 8 blocks (320
 *     columns each), the sum of squares exchanged through distributed shared memory;
 *   - both.
 * Each of these forms' first layer is checked against the CPU (the norm's output against the
 * reference's norm). Measured on an H200, the pairs are slower: 52.1-52.5 against 50.9-51.1 us
 * a layer (docs/gpu.md, "Tried and dropped").
 *
 * sm_90 and later (cp.async.bulk); elsewhere it says so and exits.
 * nvcc -O3 -arch=sm_90 -std=c++17 -o mlp_slice dev/cuda/mlp_slice.cu && ./mlp_slice */
#include <cooperative_groups.h>
#include <math.h>

#include "../../kernels/bulk.cuh"
#include "../../kernels/warp_sum_t.cuh"
#include "step_common.cuh"

#define HID   2560      /* hidden size */
#define INTER 10240     /* intermediate size */
#define CT    (HID / 8) /* consumer threads: 8 columns each */
#define CW    (CT / 32) /* consumer warps */
#define NTH   (CT + 32) /* and the producer warp */
#define ROW   (HID * 2) /* bytes of a bf16 row */
#define MLPL  42        /* layers of distinct weights (6.6 GB: far beyond L2) */
#define RN_CL 8         /* reduce-norm: blocks of its one cluster */

namespace cg = cooperative_groups;

__device__ __forceinline__ float gelu_tanh(float x) {
    const float k = 0.7978845608028654f;
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

/* The MLP of one layer for one input: gate, up [INTER][HID] and down transposed [INTER][HID], bf16;
 * x [HID] fp32 (already normalised); partial [gridDim.x / CL][HID]. CL 2: launched in clusters of
 * 2, a pair adds its two blocks' outputs (rank 0's first) through distributed shared memory,
 * rank r writing columns [r HID / 2, (r + 1) HID / 2) of the pair's partial. */
template <int B, int S, int CL = 1, int MODE = 0>
__global__ void __launch_bounds__(NTH, 1)
    mlp_slice_kernel(const uint4 *__restrict__ gate, const uint4 *__restrict__ up,
                     const uint4 *__restrict__ downt, const float *__restrict__ x,
                     float *__restrict__ partial) {
    extern __shared__ __align__(128) unsigned char ring[]; /* S stages of one row */
    __shared__ uint64_t full[S], empty[S];
    __shared__ float red[CW][2 * B], hs[B];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int k0 = (int)((long long)INTER * blockIdx.x / gridDim.x);
    const int k1 = (int)((long long)INTER * (blockIdx.x + 1) / gridDim.x);
    ring_init(full, empty, S, CW);
    __syncthreads();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
    if (warp == CW) { /* the producer: weights need nothing of the previous kernel */
        if (lane == 0) {
            unsigned g = 0;
            for (int kb = k0; kb < k1; kb += B) {
                const int n = min(B, k1 - kb);
                for (int m = 0; m < 3; m++)
                    for (int i = 0; i < n; i++, g++) {
                        const uint4 *src = (m == 0   ? gate
                                            : m == 1 ? up
                                                     : downt) +
                                           (size_t)(kb + i) * (ROW / 16);
                        ring_put_at<S>(ring, full, empty, g, src, ROW);
                    }
            }
        }
#if BULK_OK                     /* clusters: sm_90 and later, as the copy engine */
        if constexpr (CL > 1) { /* every thread of a cluster meets its barriers */
            __syncwarp();
            cg::this_cluster().sync();
            cg::this_cluster().sync();
        }
#endif
        return;
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
    const int t = threadIdx.x;
    float xr[8], out[8];
    {
        const float4 a = reinterpret_cast<const float4 *>(x)[2 * t];
        const float4 b = reinterpret_cast<const float4 *>(x)[2 * t + 1];
        xr[0] = a.x, xr[1] = a.y, xr[2] = a.z, xr[3] = a.w;
        xr[4] = b.x, xr[5] = b.y, xr[6] = b.z, xr[7] = b.w;
    }
#pragma unroll
    for (int j = 0; j < 8; j++)
        out[j] = 0.0f;
    unsigned g = 0;
    /* MODE 1: the rows taken and folded, no arithmetic - the ring and the chain alone; MODE 2:
     * the products without the block's sums (each thread's own partial dot stands in for the
     * sum; wrong results) - what the two barriers a batch cost. */
    if constexpr (MODE == 1)
        for (int r = 0; r < 3 * (k1 - k0); r++, g++)
            out[0] += fold(ring_take_at<S>(ring, full, empty, g, ROW, t, lane));
    else
        for (int kb = k0; kb < k1; kb += B) {
            const int n = min(B, k1 - kb);
            float acc[2 * B];
#pragma unroll
            for (int m = 0; m < 2; m++)
#pragma unroll
                for (int i = 0; i < B; i++) {
                    acc[m * B + i] = 0.0f;
                    if (i < n) {
                        float w[8];
                        bf16x8(ring_take_at<S>(ring, full, empty, g, ROW, t, lane), w);
                        float a = 0.0f;
#pragma unroll
                        for (int j = 0; j < 8; j++)
                            a = fmaf(w[j], xr[j], a);
                        acc[m * B + i] = a;
                        g++;
                    }
                }
            if constexpr (MODE == 0) {
                int row;
                const float v = warp_sum_t<2 * B>(acc, lane, &row);
                if ((lane & (32 / (2 * B) - 1)) == 0) red[warp][row] = v;
                bar_consumers(CT);
                if (t < n) {
                    float gs = 0.0f, us = 0.0f;
                    for (int w = 0; w < CW; w++)
                        gs += red[w][t], us += red[w][B + t];
                    hs[t] = gelu_tanh(gs) * us;
                }
                bar_consumers(CT);
            }
#pragma unroll
            for (int i = 0; i < B; i++)
                if (i < n) {
                    float w[8];
                    bf16x8(ring_take_at<S>(ring, full, empty, g, ROW, t, lane), w);
                    const float h = MODE == 0 ? hs[i] : acc[i] * acc[B + i];
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        out[j] = fmaf(h, w[j], out[j]);
                    g++;
                }
        }
    if constexpr (CL == 1) {
        float4 *po = reinterpret_cast<float4 *>(partial + (size_t)blockIdx.x * HID) + 2 * t;
        po[0] = make_float4(out[0], out[1], out[2], out[3]);
        po[1] = make_float4(out[4], out[5], out[6], out[7]);
    } else {
#if BULK_OK
        /* the outputs go to the ring's first 10 KB, which no copy writes any more once every
         * consumer has taken its last row (hence the barrier), so the pairs' kernel needs no
         * more shared memory than the plain one (two blocks a multiprocessor either way) */
        float *xfer = reinterpret_cast<float *>(ring);
        cg::cluster_group cl = cg::this_cluster();
        bar_consumers(CT);
        float4 *px = reinterpret_cast<float4 *>(xfer) + 2 * t;
        px[0] = make_float4(out[0], out[1], out[2], out[3]);
        px[1] = make_float4(out[4], out[5], out[6], out[7]);
        cl.sync(); /* every block's xfer is written */
        const int rank = (int)cl.block_rank(), c = blockIdx.x / CL;
        for (int j = t; j < HID / CL; j += CT) {
            const int col = rank * (HID / CL) + j;
            float v = 0.0f;
#pragma unroll
            for (int q = 0; q < CL; q++)
                v += cl.map_shared_rank(xfer, q)[col];
            partial[(size_t)c * HID + col] = v;
        }
        cl.sync(); /* no block leaves while another still reads its xfer */
#endif
    }
}

/* y[j] = the sum over blocks b of partial[b][j], b in order. */
__global__ void __launch_bounds__(128)
    mlp_reduce_kernel(const float *__restrict__ partial, int nb, float *__restrict__ y) {
    pdl_wait();
    const int j = blockIdx.x * 128 + threadIdx.x;
    float s = 0.0f;
#pragma unroll 12
    for (int b = 0; b < nb; b++)
        s += __ldcg(partial + (size_t)b * HID + j);
    y[j] = s;
}

__global__ void __launch_bounds__(THREADS) norm_kernel(float *x) {
    pdl_wait();
    small_op(x);
}

/* The partial sums and the norm as one cluster of RN_CL blocks: block r sums columns
 * [r HID / RN_CL, (r + 1) HID / RN_CL) over the nb partials (one thread a column, in block
 * order), the blocks' sums of squares go to every block through distributed shared memory (added
 * in rank order), and each writes its columns as small_op does: y = v / rms(v) + 1e-3. */
__global__ void __launch_bounds__(HID / RN_CL)
    reduce_norm_kernel(const float *__restrict__ partial, int nb, float *__restrict__ y) {
#if BULK_OK /* clusters: sm_90 and later */
    __shared__ float red[HID / RN_CL / 32], sq[RN_CL];
    cg::cluster_group cl = cg::this_cluster();
    /* a block may write another's shared memory only once that block has started: this
     * arrival says so; the wait comes before the first remote write (attention.cu's pattern) */
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    pdl_wait();
    if (cl.num_blocks() != RN_CL) __trap(); /* launched without its cluster: no sums */
    const int r = (int)cl.block_rank(), j = r * (HID / RN_CL) + threadIdx.x;
    float v = 0.0f;
#pragma unroll 12
    for (int b = 0; b < nb; b++)
        v += __ldcg(partial + (size_t)b * HID + j);
    float ss = warp_sum(v * v);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
    __syncthreads();
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    if (threadIdx.x < RN_CL) {
        float b = 0.0f;
        for (int w = 0; w < HID / RN_CL / 32; w++)
            b += red[w];
        cl.map_shared_rank(sq, (int)threadIdx.x)[r] = b;
    }
    cl.sync();
    float tot = 0.0f;
    for (int q = 0; q < RN_CL; q++)
        tot += sq[q];
    y[j] = v * rsqrtf(tot / HID + 1e-6f) + 1e-3f;
#endif
}

/* ---- host ---- */
static uint16_t bf16_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}
static float f_of_bf16(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint64_t rng = 88172645463325252ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* The largest |y[j] - ref[j]| over n outputs, and in *mag the largest |ref[j]|. */
static double max_err(const float *y, const double *ref, int n, double *mag) {
    double err = 0;
    *mag = 0;
    for (int j = 0; j < n; j++) {
        err = fmax(err, fabs(y[j] - ref[j]));
        *mag = fmax(*mag, fabs(ref[j]));
    }
    return err;
}

/* ms of one replay of the graph that body() issues on s, after reset() (outside the graph). */
template <typename F, typename R> static float chain_ms(cudaStream_t s, int reps, F body, R reset) {
    cudaGraph_t gr;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    body();
    CK(cudaStreamEndCapture(s, &gr));
    CK(cudaGraphInstantiate(&ge, gr, 0));
    reset();
    const float ms = time_graph(ge, s, reps);
    CK(cudaGraphExecDestroy(ge));
    CK(cudaGraphDestroy(gr));
    return ms;
}

struct variant {
    const char *name;
    void (*k)(const uint4 *, const uint4 *, const uint4 *, const float *, float *);
    int S;
};

int main(void) {
    int dev = 0, major, sms;
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    if (major < 9) {
        printf("mlp_slice: needs sm_90 or later (cp.async.bulk); this device is sm_%d\n", major);
        return 0;
    }
    pdl_on = 1;
    const int reps = getenv("MLP_REPS") ? atoi(getenv("MLP_REPS")) : 20;
    const size_t mat = (size_t)INTER * HID; /* elements of one matrix */
    const double layer_bytes = 3.0 * mat * 2;

    /* weights: random bf16 of about the scale of a trained MLP's */
    uint16_t *hw = (uint16_t *)malloc(3 * mat * 2);
    for (size_t i = 0; i < 3 * mat; i++)
        hw[i] = bf16_of(0.03f * frand());
    uint16_t *dw;
    CK(cudaMalloc(&dw, 3 * mat * 2 * MLPL));
    for (int l = 0; l < MLPL; l++) /* the same values in every layer (the check uses layer 0) */
        CK(cudaMemcpy(dw + 3 * mat * l, hw, 3 * mat * 2, cudaMemcpyHostToDevice));
    float hx[HID], *dx, *dpart, *dy;
    for (int j = 0; j < HID; j++)
        hx[j] = frand();
    CK(cudaMalloc(&dx, HID * 4));
    CK(cudaMalloc(&dy, HID * 4));
    CK(cudaMalloc(&dpart, (size_t)sms * HID * 4));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    const double copy_gbs = copy_gbs_measure(s);
    const double floor_us = layer_bytes / (copy_gbs * 1e9) * 1e6;
    printf(
        "device: %d SMs, copy bandwidth %.0f GB/s; an MLP layer streams %.1f MB: floor %.2f us\n",
        sms, copy_gbs, layer_bytes / 1e6, floor_us);

    /* CPU reference of layer 0 (double sums of the bf16 weights) */
    static double ref[HID];
    {
        const uint16_t *G = hw, *Up = hw + mat, *Dt = hw + 2 * mat;
        for (int k = 0; k < INTER; k++) {
            double gs = 0, us = 0;
            for (int j = 0; j < HID; j++) {
                gs += (double)f_of_bf16(G[(size_t)k * HID + j]) * hx[j];
                us += (double)f_of_bf16(Up[(size_t)k * HID + j]) * hx[j];
            }
            const double h =
                0.5 * gs * (1 + tanh(0.7978845608028654 * (gs + 0.044715 * gs * gs * gs))) * us;
            for (int j = 0; j < HID; j++)
                ref[j] += h * f_of_bf16(Dt[(size_t)k * HID + j]);
        }
    }

    const variant V[] = {
        {"B=8  S=36", mlp_slice_kernel<8, 36>, 36},
        {"B=16 S=36", mlp_slice_kernel<16, 36>, 36},
        {"B=8  S=20", mlp_slice_kernel<8, 20>, 20},
        {"B=16 S=20", mlp_slice_kernel<16, 20>, 20},
        {"B=8  S=42", mlp_slice_kernel<8, 42>, 42},
        {"B=4  S=36", mlp_slice_kernel<4, 36>, 36},
        {"B=16 S=20, rows only (MODE 1)", mlp_slice_kernel<16, 20, 1, 1>, 20},
        {"B=16 S=20, no block sums (MODE 2)", mlp_slice_kernel<16, 20, 1, 2>, 20},
    };
    for (const variant &v : V) {
        const size_t smem = (size_t)v.S * ROW;
        CK(cudaFuncSetAttribute(v.k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        /* the check: layer 0 once, against the CPU */
        CK(cudaMemcpy(dx, hx, HID * 4, cudaMemcpyHostToDevice));
        launch_pdl_ex(v.k, sms, NTH, smem, s, (const uint4 *)dw, (const uint4 *)(dw + mat),
                      (const uint4 *)(dw + 2 * mat), (const float *)dx, dpart);
        launch_pdl_ex(mlp_reduce_kernel, HID / 128, 128, 0, s, (const float *)dpart, sms, dy);
        CK(cudaStreamSynchronize(s));
        float hy[HID];
        CK(cudaMemcpy(hy, dy, HID * 4, cudaMemcpyDeviceToHost));
        double mag;
        const double err = max_err(hy, ref, HID, &mag);
        /* three chains of MLPL layers: the kernel alone, + the partial sums, + a norm */
        for (int form = 0; form < 3; form++) {
            const float ms = chain_ms(
                s, reps,
                [&] {
                    for (int l = 0; l < MLPL; l++) {
                        const uint16_t *w = dw + 3 * mat * l;
                        launch_pdl_ex(v.k, sms, NTH, smem, s, (const uint4 *)w,
                                      (const uint4 *)(w + mat), (const uint4 *)(w + 2 * mat),
                                      (const float *)dx, dpart);
                        if (form >= 1)
                            launch_pdl_ex(mlp_reduce_kernel, HID / 128, 128, 0, s,
                                          (const float *)dpart, sms, dx);
                        if (form >= 2) launch_pdl_ex(norm_kernel, 1, THREADS, 0, s, dx);
                    }
                },
                [&] { CK(cudaMemcpy(dx, hx, HID * 4, cudaMemcpyHostToDevice)); });
            const double us = ms * 1e3 / MLPL;
            static const char *fn[] = {"kernel alone", "+ partial sums", "+ sums + norm"};
            printf("%s  %-15s %7.2f us a layer  %6.0f GB/s  %5.1f %% of copy   (layer 0 against "
                   "the CPU: max |err| %.2e of max |y| %.2e)\n",
                   v.name, fn[form], us, layer_bytes / (us * 1e-6) / 1e9, 100.0 * floor_us / us,
                   err, mag);
        }
    }

    /* The reduction after the MLP with fewer kernels (B = 16, S = 20: the engine's decode
     * form). The first layer of each form against the CPU's y / rms(y) + 1e-3; a form off by
     * more than 1e-3 of the largest output makes the exit status 1. */
    int bad = 0;
    {
        double rn[HID], ss = 0;
        for (int j = 0; j < HID; j++)
            ss += ref[j] * ref[j];
        for (int j = 0; j < HID; j++)
            rn[j] = ref[j] / sqrt(ss / HID + 1e-6) + 1e-3;
        typedef void (*mlp_fn)(const uint4 *, const uint4 *, const uint4 *, const float *, float *);
        const mlp_fn k1 = mlp_slice_kernel<16, 20>, k2 = mlp_slice_kernel<16, 20, 2>;
        const size_t smem = (size_t)20 * ROW;
        CK(cudaFuncSetAttribute(k1, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        CK(cudaFuncSetAttribute(k2, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const int g2 = sms / 2 * 2; /* the pairs' grid */
        struct form {
            const char *name;
            int pairs, fused; /* the kernel in pairs; the reduce-norm cluster kernel */
        } F[] = {{"kernel, sums (132), norm: three kernels", 0, 0},
                 {"pairs, sums (66), norm", 1, 0},
                 {"kernel, reduce-norm cluster (132)", 0, 1},
                 {"pairs, reduce-norm cluster (66)", 1, 1},
                 {"kernel, sums (132), norm: again", 0, 0}};
        auto layer = [&](const form &f, const uint16_t *w) {
            const int grid = f.pairs ? g2 : sms, nb = f.pairs ? g2 / 2 : sms;
            launch_pdl_cl(f.pairs ? k2 : k1, grid, NTH, smem, s, f.pairs ? 2 : 1, (const uint4 *)w,
                          (const uint4 *)(w + mat), (const uint4 *)(w + 2 * mat), (const float *)dx,
                          dpart);
            if (f.fused)
                launch_pdl_cl(reduce_norm_kernel, RN_CL, HID / RN_CL, 0, s, RN_CL,
                              (const float *)dpart, nb, dx);
            else {
                launch_pdl_ex(mlp_reduce_kernel, HID / 128, 128, 0, s, (const float *)dpart, nb,
                              dx);
                launch_pdl_ex(norm_kernel, 1, THREADS, 0, s, dx);
            }
        };
        printf("the reduction after the MLP (B=16 S=20), chains of %d layers:\n", MLPL);
        for (const form &f : F) {
            CK(cudaMemcpy(dx, hx, HID * 4, cudaMemcpyHostToDevice));
            layer(f, dw);
            CK(cudaStreamSynchronize(s));
            float hy[HID];
            CK(cudaMemcpy(hy, dx, HID * 4, cudaMemcpyDeviceToHost));
            double mag;
            const double err = max_err(hy, rn, HID, &mag);
            const double us =
                chain_ms(
                    s, reps,
                    [&] {
                        for (int l = 0; l < MLPL; l++)
                            layer(f, dw + 3 * mat * l);
                    },
                    [&] { CK(cudaMemcpy(dx, hx, HID * 4, cudaMemcpyHostToDevice)); }) *
                1e3 / MLPL;
            /* fp32 sums of bf16 products against double ones: 1e-3 of the largest output */
            const int ok = err <= 1e-3 * mag;
            bad |= !ok;
            printf("  %-42s %7.2f us a layer  %5.1f %% of copy   (layer 0's norm against the "
                   "CPU: max |err| %.2e of max %.2e%s)\n",
                   f.name, us, 100.0 * floor_us / us, err, mag, ok ? "" : ": WRONG");
        }
    }
    return bad;
}
