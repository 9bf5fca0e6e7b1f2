/* matvec.cu: matrix-vector and small matrix products, weights in their file dtype.
 *
 * Decoding reads every weight once per token, so this kernel decides the speed of a step.
 * Each warp owns one weight row and streams it with 16-byte loads (8 bf16 per lane, 512
 * bytes per warp per iteration, several iterations in flight after unrolling), converting to
 * fp32 in registers; the input x (a few KB) is read through L1, where every warp of the block
 * finds it. For n > 1 inputs (prefill, teacher forcing, speculative verify) the loaded
 * weights are dotted with up to 8 inputs before moving on, so the row is read from memory
 * once per 8 inputs. The accumulation is fp32 throughout; the order differs from the CPU
 * backend's, so results agree to rounding, not bit for bit. */
#include "kcommon.cuh"

#define MV_WARPS 8 /* warps per block */

/* K warps share one weight row (split-K) when the matrix has too few rows to keep every
 * multiprocessor streaming: warp k of a row reads the row's 16-byte chunks k, k + K, ... and the
 * K partial sums are added in a fixed order, so a row's result depends only on the matrix
 * shape, never on n (a verify pass reproduces the decode steps it stands for bit for bit).
 * Rows [row] of out for inputs t0 .. t0 + NT - 1 (those below n). VEC: 16-byte loads (cols a
 * multiple of the vector width and the matrix 16-byte aligned), else one element per lane. */
template <typename T, int NT, bool VEC, int K>
__global__ void __launch_bounds__(MV_WARPS * 32)
    matvec_kernel(float *__restrict__ out, const T *__restrict__ w, const float *__restrict__ x,
                  int rows, int cols, int n) {
    k_wait_prior();
    constexpr int R = MV_WARPS / K; /* rows per block */
    __shared__ float part[K > 1 ? MV_WARPS : 1][NT];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int slice = warp % K;
    const int row = blockIdx.x * R + warp / K;
    const bool live = row < rows; /* no early return: the block meets at a barrier below */
    const T *wr = w + (size_t)(live ? row : 0) * cols;
    for (int t0 = 0; t0 < n; t0 += NT) {
        float acc[NT];
#pragma unroll
        for (int t = 0; t < NT; t++)
            acc[t] = 0.0f;
        if (live && VEC) {
            constexpr int V = vec16<T>::n;
#pragma unroll 4
            for (int c = (slice * 32 + lane) * V; c < cols; c += K * 32 * V) {
                float wf[V];
                load16_stream(wr + c, wf);
#pragma unroll
                for (int t = 0; t < NT; t++) {
                    if (t0 + t < n) {
                        const float4 *xp =
                            reinterpret_cast<const float4 *>(x + (size_t)(t0 + t) * cols + c);
#pragma unroll
                        for (int q = 0; q < V / 4; q++) {
                            float4 xv = __ldg(xp + q);
                            acc[t] += wf[4 * q] * xv.x + wf[4 * q + 1] * xv.y +
                                      wf[4 * q + 2] * xv.z + wf[4 * q + 3] * xv.w;
                        }
                    }
                }
            }
        } else if (live) {
            for (int c = slice * 32 + lane; c < cols; c += K * 32) {
                float wv = to_f32(wr[c]);
#pragma unroll
                for (int t = 0; t < NT; t++)
                    if (t0 + t < n) acc[t] += wv * x[(size_t)(t0 + t) * cols + c];
            }
        }
#pragma unroll
        for (int t = 0; t < NT; t++)
            acc[t] = warp_sum(acc[t]);
        if (K == 1) {
#pragma unroll
            for (int t = 0; t < NT; t++)
                if (live && lane == 0 && t0 + t < n) out[(size_t)(t0 + t) * rows + row] = acc[t];
        } else {
            if (lane == 0)
#pragma unroll
                for (int t = 0; t < NT; t++)
                    part[warp][t] = acc[t];
            __syncthreads();
            if (live && lane == 0 && slice == 0)
#pragma unroll
                for (int t = 0; t < NT; t++) {
                    float v = 0.0f;
#pragma unroll
                    for (int k = 0; k < K; k++)
                        v += part[warp + k][t];
                    if (t0 + t < n) out[(size_t)(t0 + t) * rows + row] = v;
                }
            __syncthreads(); /* part is reused by the next group of inputs */
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

template <typename T, int NT, bool VEC>
static void launch_k(cudaStream_t s, float *out, const T *w, const float *x, int rows, int cols,
                     int n, int k) {
    dim3 block(MV_WARPS * 32);
    dim3 grid(k_blocks((size_t)rows, MV_WARPS / k));
    switch (k) {
    case 1:
        k_launch(matvec_kernel<T, NT, VEC, 1>, dim3(grid), dim3(block), s, out, w, x, rows, cols,
                 n);
        break;
    case 2:
        k_launch(matvec_kernel<T, NT, VEC, 2>, dim3(grid), dim3(block), s, out, w, x, rows, cols,
                 n);
        break;
    case 4:
        k_launch(matvec_kernel<T, NT, VEC, 4>, dim3(grid), dim3(block), s, out, w, x, rows, cols,
                 n);
        break;
    default:
        k_launch(matvec_kernel<T, NT, VEC, 8>, dim3(grid), dim3(block), s, out, w, x, rows, cols,
                 n);
        break;
    }
}

template <typename T>
static void launch(cudaStream_t s, float *out, const void *w, const float *x, int rows, int cols,
                   int n) {
    const T *wt = (const T *)w;
    const bool vec =
        cols % vec16<T>::n == 0 && ((uintptr_t)w & 15) == 0 && ((uintptr_t)x & 15) == 0;
    /* Split K until there are about 8 blocks per multiprocessor, while every warp still gets
     * at least one full pass of 32 lanes' loads. */
    const int per_pass = 32 * (vec ? vec16<T>::n : 1);
    int k = 1;
    while (k < MV_WARPS && (long)rows * k / MV_WARPS < 8L * sm_count() && cols >= 2 * k * per_pass)
        k *= 2;
    if (n == 1) {
        if (vec)
            launch_k<T, 1, true>(s, out, wt, x, rows, cols, n, k);
        else
            launch_k<T, 1, false>(s, out, wt, x, rows, cols, n, k);
    } else if (n <= 4) {
        if (vec)
            launch_k<T, 4, true>(s, out, wt, x, rows, cols, n, k);
        else
            launch_k<T, 4, false>(s, out, wt, x, rows, cols, n, k);
    } else {
        if (vec)
            launch_k<T, 8, true>(s, out, wt, x, rows, cols, n, k);
        else
            launch_k<T, 8, false>(s, out, wt, x, rows, cols, n, k);
    }
    K_CHECK_LAUNCH();
}

extern "C" void k_matvec(cudaStream_t s, float *out, const void *w, int wdtype, const float *x,
                         int rows, int cols, int n) {
    if (rows <= 0 || n <= 0) return;
    if (wdtype == KDT_BF16)
        launch<__nv_bfloat16>(s, out, w, x, rows, cols, n);
    else if (wdtype == KDT_F16)
        launch<__half>(s, out, w, x, rows, cols, n);
    else
        launch<float>(s, out, w, x, rows, cols, n);
}

/* kcommon.cuh: programmatic dependent launch on or off for every launcher. */
int k_pdl = 0;

extern "C" void k_set_pdl(int on) {
    k_pdl = on;
}
