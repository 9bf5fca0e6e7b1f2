/* attention.cu: the KV ring (kv_write) and causal attention over it, for one decode row or
 * for n rows at once (prefill, teacher forcing, speculative verify).
 *
 * Shape of the work. Gemma 4 has few KV heads (2 on E4B) and decodes one row at a time, so
 * one block per head would leave most of the GPU idle on a long context. The positions a
 * row attends to are therefore cut into n_splits slices (split-KV, "flash decoding"); block
 * (split, head, row) scores its slice with an online softmax, one position per warp at a
 * time (lane i holds dims i, i + 32, ... of the head, so the q.k dot is a warp sum), merges
 * its 4 warps in shared memory and writes (max, sum, unnormalised output) for the slice.
 * attn_merge then combines the slices of each (row, head). The number of slices is fixed by
 * the longest context the ring can hold, not by the current position, so a decode step
 * captured in a CUDA graph stays correct as the sequence grows; slices past the current
 * context are empty and cost one early exit.
 *
 * The caches are fp32 rows [len][n_kv_heads][head_dim] used as rings (position p in row
 * p % len); a row attends to max(0, p - window + 1) .. p. */
#include "kcommon.cuh"

#define ATT_WARPS    4
#define ATT_MAXD     512 /* largest head_dim (E4B's full layers) */
#define ATT_PER_LANE (ATT_MAXD / 32)

__global__ void kv_write_kernel(float *cache, const float *src, int n_tok, int kv_dim,
                                const int *dpos, int pos0, int len) {
    k_wait_prior();
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)n_tok * kv_dim) return;
    const int t = (int)(i / kv_dim), c = (int)(i % kv_dim);
    const int row = (step_pos(dpos, pos0) + t) % len;
    cache[(size_t)row * kv_dim + c] = src[i];
}

extern "C" void k_kv_write(cudaStream_t s, float *cache, const float *src, int n_tok, int kv_dim,
                           const int *dpos, int pos0, int len) {
    const size_t n = (size_t)n_tok * kv_dim;
    if (!n) return;
    k_launch(kv_write_kernel, dim3(k_blocks(n, 256)), dim3(256), s, cache, src, n_tok, kv_dim, dpos,
             pos0, len);
    K_CHECK_LAUNCH();
}

/* One slice of one (row, head). partial: [row][head][split][head_dim + 2] = acc..., max, sum. */
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attn_split_kernel(float *partial, const float *q, const float *kc, const float *vc,
                      const int *dpos, int pos0, int len, int window, int n_heads, int n_kv_heads,
                      int hd, int n_splits) {
    k_wait_prior();
    __shared__ float sm_m[ATT_WARPS], sm_l[ATT_WARPS];
    __shared__ float sm_acc[ATT_WARPS][ATT_MAXD];
    const int split = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h / (n_heads / n_kv_heads);
    const size_t kv_dim = (size_t)n_kv_heads * hd;
    const int p = step_pos(dpos, pos0) + t;
    const int lo = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
    const int count = p - lo + 1;
    const int per = (count + n_splits - 1) / n_splits;
    const int j0 = lo + split * per;
    const int j1 = min(p + 1, j0 + per); /* exclusive */

    float qr[ATT_PER_LANE], acc[ATT_PER_LANE];
    const float *qh = q + ((size_t)t * n_heads + h) * hd;
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++) {
        const int d = lane + 32 * i;
        qr[i] = d < hd ? qh[d] : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int j = j0 + warp; j < j1; j += ATT_WARPS) {
        const size_t row = (size_t)(j % len) * kv_dim + (size_t)kvh * hd;
        const float *kj = kc + row, *vj = vc + row;
        /* The key and the value row are loaded together: one memory round trip per position,
         * not two (the value does not depend on the score). */
        float kr[ATT_PER_LANE], vr[ATT_PER_LANE];
#pragma unroll
        for (int i = 0; i < ATT_PER_LANE; i++) {
            const int d = lane + 32 * i;
            kr[i] = d < hd ? kj[d] : 0.0f;
            vr[i] = d < hd ? vj[d] : 0.0f;
        }
        float sdot = 0.0f;
#pragma unroll
        for (int i = 0; i < ATT_PER_LANE; i++) {
            const int d = lane + 32 * i;
            if (d < hd) sdot += qr[i] * kr[i];
        }
        sdot = warp_sum(sdot);
        const float mn = fmaxf(m, sdot);
        const float corr = expf(m - mn), e = expf(sdot - mn);
        l = l * corr + e;
#pragma unroll
        for (int i = 0; i < ATT_PER_LANE; i++) {
            const int d = lane + 32 * i;
            if (d < hd) acc[i] = acc[i] * corr + e * vr[i];
        }
        m = mn;
    }
    /* Merge the warps of the block. */
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int i = 0; i < ATT_PER_LANE; i++) {
        const int d = lane + 32 * i;
        if (d < hd) sm_acc[warp][d] = acc[i];
    }
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < ATT_WARPS; w++)
        M = fmaxf(M, sm_m[w]);
    float *dst = partial + (((size_t)t * n_heads + h) * n_splits + split) * (hd + 2);
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0.0f;
        if (M != -INFINITY)
            for (int w = 0; w < ATT_WARPS; w++)
                if (sm_m[w] != -INFINITY) a += sm_acc[w][d] * expf(sm_m[w] - M);
        dst[d] = a;
    }
    if (threadIdx.x == 0) {
        float L = 0.0f;
        if (M != -INFINITY)
            for (int w = 0; w < ATT_WARPS; w++)
                if (sm_m[w] != -INFINITY) L += sm_l[w] * expf(sm_m[w] - M);
        dst[hd] = M;
        dst[hd + 1] = L;
    }
}

/* out[row][head][:] from the slices' partial results. */
__global__ void attn_merge_kernel(float *out, const float *partial, int n_heads, int hd,
                                  int n_splits) {
    k_wait_prior();
    const int h = blockIdx.x, t = blockIdx.y;
    const float *src = partial + ((size_t)t * n_heads + h) * n_splits * (hd + 2);
    float M = -INFINITY;
    for (int s = 0; s < n_splits; s++)
        M = fmaxf(M, src[(size_t)s * (hd + 2) + hd]);
    float L = 0.0f;
    for (int s = 0; s < n_splits; s++) {
        const float *ps = src + (size_t)s * (hd + 2);
        if (ps[hd] != -INFINITY) L += ps[hd + 1] * expf(ps[hd] - M);
    }
    const float inv = 1.0f / L;
    float *oh = out + ((size_t)t * n_heads + h) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0.0f;
        for (int s = 0; s < n_splits; s++) {
            const float *ps = src + (size_t)s * (hd + 2);
            if (ps[hd] != -INFINITY) a += ps[d] * expf(ps[hd] - M);
        }
        oh[d] = a * inv;
    }
}

extern "C" int k_attention_splits(int max_ctx, int n_tok, int n_heads) {
    /* About 512 blocks per row, no slice shorter than 16 positions, at most 64 slices. The
     * count does not depend on n_tok, so a row's result (its slices and the order they are
     * summed in) is the same whether it is decoded alone or inside a prefill / verify chunk:
     * a speculative verify pass reproduces plain decoding bit for bit. */
    (void)n_tok;
    int want = 512 / (n_heads > 0 ? n_heads : 1);
    int most = (max_ctx + 15) / 16;
    int s = want < most ? want : most;
    if (s > 64) s = 64;
    return s < 1 ? 1 : s;
}

extern "C" void k_attention(cudaStream_t s, float *out, const float *q, const float *kc,
                            const float *vc, int n_tok, const int *dpos, int pos0, int len,
                            int window, int n_heads, int n_kv_heads, int head_dim, int n_splits,
                            float *partial) {
    if (n_tok <= 0) return;
    if (head_dim > ATT_MAXD || n_kv_heads <= 0 || n_heads % n_kv_heads) {
        fprintf(stderr, "%s:%d: attention: head_dim %d (at most %d), %d heads over %d kv heads\n",
                __FILE__, __LINE__, head_dim, ATT_MAXD, n_heads, n_kv_heads);
        exit(1);
    }
    dim3 grid(n_splits, n_heads, n_tok);
    k_launch(attn_split_kernel, dim3(grid), dim3(ATT_WARPS * 32), s, partial, q, kc, vc, dpos, pos0,
             len, window, n_heads, n_kv_heads, head_dim, n_splits);
    K_CHECK_LAUNCH();
    k_launch(attn_merge_kernel, dim3(n_heads, n_tok), dim3(128), s, out, (const float *)partial,
             n_heads, head_dim, n_splits);
    K_CHECK_LAUNCH();
}
