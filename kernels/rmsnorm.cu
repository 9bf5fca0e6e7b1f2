/* rmsnorm.cu: RMSNorm over many short vectors (Gemma 4 normalises the residual stream, every
 * query and key head, and the values without a scale). One block per vector: the vector is
 * read once into registers / L1, its sum of squares reduced over the block, then scaled. */
#include "kcommon.cuh"

/* Threads a block for rows of dim: a thread an element for rows of up to 1024; longer rows in as
 * few threads as hold 4 elements each (at most 1024). Both kernels below sum a row in the same
 * threads (thread t its elements t, t + threads, ... in order, then block_sum), so the fused
 * norm_add_norm leaves the bits k_rmsnorm would. Measured on an H200 (one process, alternating;
 * norm_add_norm): E4B's 2560-wide rows in 640
 * threads instead of 1024 made the step 0.014-0.031 ms faster in five pairs out of five, 512
 * threads (5 each) 0.05 ms slower; the small model's 256-wide rows 4 a thread (64 threads)
 * 1.3 % slower. */
static unsigned norm_threads(int dim) {
    const int want = dim <= 1024 ? dim : (dim + 3) / 4;
    return want >= 1024 ? 1024 : (unsigned)((want + 31) / 32 * 32);
}

template <typename T>
__global__ void rmsnorm_kernel(float *out, const float *x, const T *w, int dim, float eps) {
    k_wait_prior();
    __shared__ float red[32];
    const float *xv = x + (size_t)blockIdx.x * dim;
    float *ov = out + (size_t)blockIdx.x * dim;
    float ss = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x)
        ss += xv[i] * xv[i];
    ss = block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) {
        float v = xv[i] * inv;
        ov[i] = w ? v * to_f32(w[i]) : v;
    }
}

extern "C" void k_rmsnorm(cudaStream_t s, float *out, const float *x, const void *w, int wdtype,
                          int n_vec, int dim, float eps) {
    if (n_vec <= 0 || (k_skip & K_SKIP_RMSNORM)) return;
    const unsigned threads = norm_threads(dim);
    if (wdtype == KDT_BF16)
        k_launch(rmsnorm_kernel<__nv_bfloat16>, dim3(n_vec), dim3(threads), s, out, x,
                 (const __nv_bfloat16 *)w, dim, eps);
    else if (wdtype == KDT_F16)
        k_launch(rmsnorm_kernel<__half>, dim3(n_vec), dim3(threads), s, out, x, (const __half *)w,
                 dim, eps);
    else
        k_launch(rmsnorm_kernel<float>, dim3(n_vec), dim3(threads), s, out, x, (const float *)w,
                 dim, eps);
    K_CHECK_LAUNCH();
}

/* ---- fused neighbours -------------------------------------------------------------------- */
/* What the forward pass does after every block - normalise the block's output, add it to the
 * residual stream, normalise the stream for the next block - in one pass per row instead of
 * three launches and three round trips: o = rmsnorm(o) * wo; x += o; then, when xn is
 * non-NULL, xn = rmsnorm(x) * wx. o and x are written back, so the result is exactly what the
 * separate ops leave in memory (a row is summed in k_rmsnorm's threads: norm_threads).
 *
 * Latency is all this kernel has (a decode row is 2560 floats; ncu measured the loop form at
 * 4.5-6.3 us a row, three times a layer, on an H200). So each thread holds its PER
 * elements of o, x and both scales in registers: the scales are loaded BEFORE waiting for the
 * previous kernel (weights never depend on it), o and x together right after, and nothing is
 * read twice - one memory round trip instead of one per loop trip. Each thread sums its
 * elements in index order and the block sums as block_sum does, so the result does not depend
 * on PER, nor on how many rows a launch has. (Rows over 4096 - PER 8 and 16 - spill a few
 * registers: a 1024-thread block has 64 a thread.) */
template <typename T, int PER>
__global__ void __launch_bounds__(1024)
    norm_add_norm_kernel(float *x, float *o, const T *wo, float *xn, const T *wx, int dim,
                         float eps) {
    __shared__ float red[32];
    float *xr = x + (size_t)blockIdx.x * dim, *orow = o + (size_t)blockIdx.x * dim;
    float ov[PER], xv[PER], wov[PER], wxv[PER];
    k_launch_next();
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        wov[k] = wo && i < dim ? to_f32(wo[i]) : 1.0f;
        wxv[k] = wx && i < dim ? to_f32(wx[i]) : 1.0f;
    }
    k_wait_only();
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        ov[k] = i < dim ? orow[i] : 0.0f;
        xv[k] = i < dim ? xr[i] : 0.0f;
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++)
        if (threadIdx.x + k * blockDim.x < dim) ss += ov[k] * ov[k];
    ss = block_sum(ss, red);
    const float inv = 1.0f / sqrtf(ss / dim + eps);
    float ss2 = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i >= dim) continue;
        float v = ov[k] * inv;
        if (wo) v *= wov[k];
        orow[i] = v;
        xv[k] += v;
        xr[i] = xv[k];
        ss2 += xv[k] * xv[k];
    }
    if (!xn) return; /* uniform over the block: no barrier is skipped by some threads only */
    ss2 = block_sum(ss2, red);
    const float inv2 = 1.0f / sqrtf(ss2 / dim + eps);
    float *xnr = xn + (size_t)blockIdx.x * dim;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < dim) xnr[i] = wx ? xv[k] * inv2 * wxv[k] : xv[k] * inv2;
    }
}

template <typename T, int PER>
static void norm_add_norm_launch(cudaStream_t s, float *x, float *o, const void *wo, float *xn,
                                 const void *wx, int n_vec, int dim, float eps, unsigned threads) {
    k_launch(norm_add_norm_kernel<T, PER>, dim3(n_vec), dim3(threads), s, x, o, (const T *)wo, xn,
             (const T *)wx, dim, eps);
}

template <typename T>
static void norm_add_norm_launch_per(cudaStream_t s, float *x, float *o, const void *wo, float *xn,
                                     const void *wx, int n_vec, int dim, float eps,
                                     unsigned threads) {
    const int per = (int)((dim + threads - 1) / threads);
    /* norm_threads gives 1 element a thread up to 1024, 3 or 4 up to 4096, and more only
     * to 1024 threads: PER 2 never comes */
    if (per <= 1)
        norm_add_norm_launch<T, 1>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else if (per <= 4)
        norm_add_norm_launch<T, 4>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else if (per <= 8)
        norm_add_norm_launch<T, 8>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else
        norm_add_norm_launch<T, 16>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
}

extern "C" void k_norm_add_norm(cudaStream_t s, float *x, float *o, const void *wo, float *xn,
                                const void *wx, int wdtype, int n_vec, int dim, float eps) {
    if (n_vec <= 0 || (k_skip & K_SKIP_NORM_ADD)) return;
    if (dim > 16 * 1024) {
        fprintf(stderr, "%s:%d: norm_add_norm: rows of %d (at most %d)\n", __FILE__, __LINE__, dim,
                16 * 1024);
        exit(1);
    }
    const unsigned threads = norm_threads(dim);
    if (wdtype == KDT_BF16)
        norm_add_norm_launch_per<__nv_bfloat16>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else if (wdtype == KDT_F16)
        norm_add_norm_launch_per<__half>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    else
        norm_add_norm_launch_per<float>(s, x, o, wo, xn, wx, n_vec, dim, eps, threads);
    K_CHECK_LAUNCH();
}

/* The attention block's q / k / v after their projections, up to K_NRS_PARTS tensors in one
 * launch (kernels.h: k_norm_rope_store): one block per head vector, one thread per rotated
 * pair, the per-element arithmetic of rmsnorm_kernel then rope_kernel (the sum of squares taken
 * a pair a thread, so its last bits may differ from theirs); a part with a ring also stores the
 * result there (kv_write). Blocks are dealt to the parts in order. */
struct nrs_launch {
    k_nrs_part part[K_NRS_PARTS];
    int block0[K_NRS_PARTS];
    int n_parts;
};

template <typename T>
__global__ void norm_rope_store_kernel(const nrs_launch L, int dim, float eps, const int *dpos,
                                       int pos0) {
    k_nrs_part p = L.part[0];
    int b0 = 0;
#pragma unroll
    for (int k = 1; k < K_NRS_PARTS; k++)
        if (k < L.n_parts && (int)blockIdx.x >= L.block0[k]) {
            p = L.part[k];
            b0 = L.block0[k];
        }
    __shared__ float red[32];
    const int half = dim / 2, i = threadIdx.x, v = (int)blockIdx.x - b0;
    float *xh = p.x + (size_t)v * dim;
    const bool live = i < half;
    const int t = v / p.heads;
    /* What does not depend on the previous kernel first - the scale, the rotation (the
     * position word is written before the step starts) - so that after the wait there is one
     * memory round trip, for x. Same arithmetic as rmsnorm_kernel then rope_kernel. */
    k_launch_next();
    float w1 = 1.0f, w2 = 1.0f, sn = 0.0f, cs = 1.0f;
    bool rot = false;
    if (live && p.w) {
        const T *w = (const T *)p.w;
        w1 = to_f32(w[i]);
        w2 = to_f32(w[i + half]);
    }
    if (live && p.inv_freq) {
        const float f = p.inv_freq[i];
        rot = f != 0.0f;
        if (rot) sincosf(f * (float)(step_pos(dpos, pos0) + t), &sn, &cs);
    }
    k_wait_only();
    const float x1 = live ? xh[i] : 0.0f, x2 = live ? xh[i + half] : 0.0f;
    const float ss = block_sum(x1 * x1 + x2 * x2, red);
    if (!live) return;
    const float inv = 1.0f / sqrtf(ss / dim + eps);
    float a = x1 * inv, b = x2 * inv;
    if (p.w) {
        a *= w1;
        b *= w2;
    }
    if (rot) {
        const float ra = a * cs - b * sn, rb = b * cs + a * sn;
        a = ra;
        b = rb;
    }
    xh[i] = a;
    xh[i + half] = b;
    if (p.cache) {
        const int row = (step_pos(dpos, pos0) + t) % p.len;
        float *cr = p.cache + ((size_t)row * p.heads + v % p.heads) * dim;
        cr[i] = a;
        cr[i + half] = b;
    }
}

extern "C" void k_norm_rope_store(cudaStream_t s, const k_nrs_part *parts, int n_parts, int wdtype,
                                  int dim, float eps, const int *dpos, int pos0) {
    if (n_parts < 1 || n_parts > K_NRS_PARTS || dim < 2 || dim % 2 || dim / 2 > 1024) {
        fprintf(stderr, "%s:%d: k_norm_rope_store: %d parts (1 .. %d), dim %d (even, <= 2048)\n",
                __FILE__, __LINE__, n_parts, K_NRS_PARTS, dim);
        exit(1);
    }
    if (k_skip & K_SKIP_NORM_ROPE) return;
    nrs_launch L = {};
    unsigned blocks = 0;
    for (int k = 0; k < n_parts; k++) {
        L.part[k] = parts[k];
        L.block0[k] = (int)blocks;
        blocks += (unsigned)parts[k].n_vec;
    }
    L.n_parts = n_parts;
    if (!blocks) return;
    const unsigned threads = (unsigned)((dim / 2 + 31) / 32 * 32);
    if (wdtype == KDT_BF16)
        k_launch(norm_rope_store_kernel<__nv_bfloat16>, dim3(blocks), dim3(threads), s, L, dim, eps,
                 dpos, pos0);
    else if (wdtype == KDT_F16)
        k_launch(norm_rope_store_kernel<__half>, dim3(blocks), dim3(threads), s, L, dim, eps, dpos,
                 pos0);
    else
        k_launch(norm_rope_store_kernel<float>, dim3(blocks), dim3(threads), s, L, dim, eps, dpos,
                 pos0);
    K_CHECK_LAUNCH();
}
