/* rope.cu: rotary position embedding, "rotate half" layout, in place. One thread per
 * (row, head, pair); the angle is inv_freq * position in fp32, as transformers computes it,
 * with the accurate sinf / cosf (no fast-math: positions reach thousands of radians). The
 * position comes from device memory when the step is a captured graph. */
#include "kcommon.cuh"

__global__ void rope_kernel(float *x, int n_tok, int n_heads, int head_dim, const int *dpos,
                            int pos0, const float *inv_freq) {
    k_wait_prior();
    const int half = head_dim / 2;
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)n_tok * n_heads * half) return;
    const int pair = (int)(i % half);
    const size_t th = i / half; /* t * n_heads + h */
    const int t = (int)(th / n_heads);
    const float f = inv_freq[pair];
    if (f == 0.0f) return; /* proportional RoPE: this pair is not rotated */
    const float ang = f * (float)(step_pos(dpos, pos0) + t);
    float sn, cs;
    sincosf(ang, &sn, &cs);
    float *xh = x + th * head_dim;
    const float x1 = xh[pair], x2 = xh[pair + half];
    xh[pair] = x1 * cs - x2 * sn;
    xh[pair + half] = x2 * cs + x1 * sn;
}

extern "C" void k_rope(cudaStream_t s, float *x, int n_tok, int n_heads, int head_dim,
                       const int *dpos, int pos0, const float *inv_freq) {
    const size_t n = (size_t)n_tok * n_heads * (head_dim / 2);
    if (!n || (k_skip & K_SKIP_ELEMENTWISE)) return;
    k_launch(rope_kernel, dim3(k_blocks(n, 256)), dim3(256), s, x, n_tok, n_heads, head_dim, dpos,
             pos0, inv_freq);
    K_CHECK_LAUNCH();
}
