/* gelu.cu: the MLP's gate activation fused with the product by the up projection,
 * gelu_pytorch_tanh(gate) * up, one pass over both (also used for the per-layer-input gate,
 * whose "up" is a strided slice of the per-layer inputs). gelu_tanh is kcommon.cuh's; the
 * matrix-vector kernel applies the same function when the backend fuses the two (matvec.cu). */
#include "kcommon.cuh"

__global__ void gelu_mul_kernel(float *out, const float *gate, const float *up, int rows, int dim,
                                int up_stride) {
    k_wait_prior();
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * dim) return;
    const size_t r = i / dim, j = i % dim;
    out[i] = gelu_tanh(gate[i]) * up[r * up_stride + j];
}

extern "C" void k_gelu_mul(cudaStream_t s, float *out, const float *gate, const float *up, int rows,
                           int dim, int up_stride) {
    const size_t n = (size_t)rows * dim;
    if (!n || (k_skip & K_SKIP_ELEMENTWISE)) return;
    k_launch(gelu_mul_kernel, dim3(k_blocks(n, 256)), dim3(256), s, out, gate, up, rows, dim,
             up_stride);
    K_CHECK_LAUNCH();
}
