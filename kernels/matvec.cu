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

#define MV_WARPS 8 /* warps (rows) per block */

/* Rows [row] of out for inputs t0 .. t0 + NT - 1 (those below n). VEC: 16-byte loads (cols a
 * multiple of the vector width and the matrix 16-byte aligned), else one element per lane. */
template <typename T, int NT, bool VEC>
__global__ void __launch_bounds__(MV_WARPS * 32)
    matvec_kernel(float *__restrict__ out, const T *__restrict__ w, const float *__restrict__ x,
                  int rows, int cols, int n) {
    const int lane = threadIdx.x & 31;
    const int row = blockIdx.x * MV_WARPS + (threadIdx.x >> 5);
    if (row >= rows) return;
    const T *wr = w + (size_t)row * cols;
    for (int t0 = 0; t0 < n; t0 += NT) {
        float acc[NT];
#pragma unroll
        for (int t = 0; t < NT; t++)
            acc[t] = 0.0f;
        if (VEC) {
            constexpr int V = vec16<T>::n;
#pragma unroll 4
            for (int c = lane * V; c < cols; c += 32 * V) {
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
        } else {
            for (int c = lane; c < cols; c += 32) {
                float wv = to_f32(wr[c]);
#pragma unroll
                for (int t = 0; t < NT; t++)
                    if (t0 + t < n) acc[t] += wv * x[(size_t)(t0 + t) * cols + c];
            }
        }
#pragma unroll
        for (int t = 0; t < NT; t++) {
            float v = warp_sum(acc[t]);
            if (lane == 0 && t0 + t < n) out[(size_t)(t0 + t) * rows + row] = v;
        }
    }
}

template <typename T>
static void launch(cudaStream_t s, float *out, const void *w, const float *x, int rows, int cols,
                   int n) {
    const T *wt = (const T *)w;
    const bool vec =
        cols % vec16<T>::n == 0 && ((uintptr_t)w & 15) == 0 && ((uintptr_t)x & 15) == 0;
    dim3 grid(k_blocks((size_t)rows, MV_WARPS)), block(MV_WARPS * 32);
    if (n == 1) {
        if (vec)
            matvec_kernel<T, 1, true><<<grid, block, 0, s>>>(out, wt, x, rows, cols, n);
        else
            matvec_kernel<T, 1, false><<<grid, block, 0, s>>>(out, wt, x, rows, cols, n);
    } else if (n <= 4) {
        if (vec)
            matvec_kernel<T, 4, true><<<grid, block, 0, s>>>(out, wt, x, rows, cols, n);
        else
            matvec_kernel<T, 4, false><<<grid, block, 0, s>>>(out, wt, x, rows, cols, n);
    } else {
        if (vec)
            matvec_kernel<T, 8, true><<<grid, block, 0, s>>>(out, wt, x, rows, cols, n);
        else
            matvec_kernel<T, 8, false><<<grid, block, 0, s>>>(out, wt, x, rows, cols, n);
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
