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
#include <cooperative_groups.h>

#include "kcommon.cuh"

#define ATT_WARPS         4
#define ATT_MAXD          512 /* largest head_dim (E4B's full layers) */
#define ATT_PER_LANE      (ATT_MAXD / 32)
#define ATT_MAX_SPLITS    64  /* slices of a (row, head); the merge has a thread per slice */
#define ATT_MERGE_THREADS 256 /* a thread per output dim of a 256-wide head */
#define ATT_MERGE_UNROLL  16  /* slices a merge thread loads at once */
#define ATT_CL_MAX        16  /* slices merged inside a cluster (above 8: a non-portable size) */
#define ATT_CL_SPAN       64  /* longest slice the cluster path takes, in positions */

namespace cg = cooperative_groups;

/* Launch `kernel` with clusters of `cluster` blocks along x (and programmatic dependent launch as
 * k_launch). Cluster sizes above 8 need the kernel's non-portable attribute, set once. */
template <typename... KArgs, typename... Args>
static void att_launch_cluster(void (*kernel)(KArgs...), dim3 grid, int cluster, cudaStream_t s,
                               Args... args) {
    if (cluster > 8)
        cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(ATT_WARPS * 32);
    cfg.stream = s;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = k_pdl;
    attr[1].id = cudaLaunchAttributeClusterDimension;
    attr[1].val.clusterDim.x = (unsigned)cluster;
    attr[1].val.clusterDim.y = 1;
    attr[1].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 2;
    cudaLaunchKernelEx(&cfg, kernel, ((KArgs)args)...);
}

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
    if (!n || (k_skip & K_SKIP_ELEMENTWISE)) return;
    k_launch(kv_write_kernel, dim3(k_blocks(n, 256)), dim3(256), s, cache, src, n_tok, kv_dim, dpos,
             pos0, len);
    K_CHECK_LAUNCH();
}

/* The key and value rows of position j for this lane (dims lane, lane + 32, ..., PER of them),
 * or zeros past the slice (j >= j1). Loaded together: the value does not depend on the score. */
template <int PER>
__device__ __forceinline__ void att_load_kv(float *kr, float *vr, const float *kc, const float *vc,
                                            int j, int j1, int len, size_t kv_dim, int kvh, int hd,
                                            int lane) {
    const bool live = j < j1;
    const size_t row = (size_t)(live ? j % len : 0) * kv_dim + (size_t)kvh * hd;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        kr[i] = live && d < hd ? kc[row + d] : 0.0f;
        vr[i] = live && d < hd ? vc[row + d] : 0.0f;
    }
}

/* One slice of one (row t, head h), by a block of ATT_WARPS warps, into dst[0 .. hd + 2) = the
 * slice's unnormalised output, its max, its sum (dst: global memory for the merge kernel, or this
 * block's shared memory for the cluster's merge). PER: dims per lane, head_dim / 32 rounded up to
 * a power of two for heads up to 128 wide, 16 for wider ones. A lane holds PER dims of q, of its
 * accumulator and of two positions' keys and values, so the registers (and with them the blocks a
 * multiprocessor holds) follow the head: compiled for the largest head (512) it took 152
 * registers a thread - 3 blocks per multiprocessor - also for the small model's 32-wide heads (32
 * registers with PER = 1: its decode 3 %, its k = 3 speculation 16 % faster, docs/bench_gpu.md).
 * Wider heads keep PER = 16: E4B's 256-wide layers with PER = 8 (79 registers) measured 0.4 %
 * slower a step. Dims past head_dim were never summed, so every PER gives the same bits. */
template <int PER>
__device__ __forceinline__ void
att_slice(float *dst, const float *q, const float *kc, const float *vc, int p, int window, int len,
          int n_heads, int n_kv_heads, int hd, int split, int n_splits, int h, int t) {
    __shared__ float sm_m[ATT_WARPS], sm_l[ATT_WARPS];
    __shared__ float sm_acc[ATT_WARPS][ATT_MAXD];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h / (n_heads / n_kv_heads);
    const size_t kv_dim = (size_t)n_kv_heads * hd;
    const int lo = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
    const int count = p - lo + 1;
    const int per = (count + n_splits - 1) / n_splits;
    const int j0 = lo + split * per;
    const int j1 = min(p + 1, j0 + per); /* exclusive */

    float qr[PER], acc[PER];
    const float *qh = q + ((size_t)t * n_heads + h) * hd;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        qr[i] = d < hd ? qh[d] : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    /* Software-pipelined: the key and value rows of the warp's next position are loaded
     * before the current one is scored, so a position costs its arithmetic, not a memory
     * round trip (the loads never depend on a score). The arithmetic and its order are those
     * of the plain loop. */
    float kr[PER], vr[PER], kn[PER], vn[PER];
    att_load_kv<PER>(kr, vr, kc, vc, j0 + warp, j1, len, kv_dim, kvh, hd, lane);
    for (int j = j0 + warp; j < j1; j += ATT_WARPS) {
        att_load_kv<PER>(kn, vn, kc, vc, j + ATT_WARPS, j1, len, kv_dim, kvh, hd, lane);
        float sdot = 0.0f;
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            if (d < hd) sdot += qr[i] * kr[i];
        }
        sdot = warp_sum(sdot);
        const float mn = fmaxf(m, sdot);
        const float corr = expf(m - mn), e = expf(sdot - mn);
        l = l * corr + e;
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            if (d < hd) acc[i] = acc[i] * corr + e * vr[i];
            kr[i] = kn[i];
            vr[i] = vn[i];
        }
        m = mn;
    }
    /* Merge the warps of the block. */
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        if (d < hd) sm_acc[warp][d] = acc[i];
    }
    __syncthreads();
    float M = -INFINITY;
    for (int w = 0; w < ATT_WARPS; w++)
        M = fmaxf(M, sm_m[w]);
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

/* Slice blockIdx.x of (row blockIdx.z, head blockIdx.y) into partial: [row][head][split][hd + 2].
 */
template <int PER>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attn_split_kernel(float *partial, const float *q, const float *kc, const float *vc,
                      const int *dpos, int pos0, int len, int window, int n_heads, int n_kv_heads,
                      int hd, int n_splits) {
    k_wait_prior();
    const int split = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
    float *dst = partial + (((size_t)t * n_heads + h) * n_splits + split) * (hd + 2);
    att_slice<PER>(dst, q, kc, vc, step_pos(dpos, pos0) + t, window, len, n_heads, n_kv_heads, hd,
                   split, n_splits, h, t);
}

/* out[row][head][:] from the slices' partial results. The slices' weights exp(m_s - M) are
 * worked out once per block (a thread per slice) instead of once per output dim, and a thread's
 * sum over the slices loads them ATT_MERGE_UNROLL at a time, so that a merge costs a few memory
 * round trips instead of one per slice; the sums are taken in slice order as before, so the
 * result is the same bits. */
__global__ void attn_merge_kernel(float *out, const float *partial, int n_heads, int hd,
                                  int n_splits) {
    k_wait_prior();
    __shared__ float sw[ATT_MAX_SPLITS], sl[ATT_MAX_SPLITS], s_inv;
    __shared__ float red[32];
    const int h = blockIdx.x, t = blockIdx.y;
    const float *src = partial + ((size_t)t * n_heads + h) * n_splits * (hd + 2);
    const int s = threadIdx.x;
    const float ms = s < n_splits ? src[(size_t)s * (hd + 2) + hd] : -INFINITY;
    const float ls = s < n_splits ? src[(size_t)s * (hd + 2) + hd + 1] : 0.0f;
    const float M = block_max(ms, red);
    /* weight 0 marks an empty slice (skipped below, as in a sum that never saw it) */
    if (s < n_splits) {
        sw[s] = ms != -INFINITY ? expf(ms - M) : 0.0f;
        sl[s] = ms != -INFINITY ? ls : 0.0f;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float L = 0.0f;
        for (int k = 0; k < n_splits; k++)
            if (sw[k] != 0.0f) L += sl[k] * sw[k];
        s_inv = 1.0f / L;
    }
    __syncthreads();
    const float inv = s_inv;
    float *oh = out + ((size_t)t * n_heads + h) * hd;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float a = 0.0f;
        for (int k = 0; k < n_splits; k += ATT_MERGE_UNROLL) {
            float v[ATT_MERGE_UNROLL];
#pragma unroll
            for (int u = 0; u < ATT_MERGE_UNROLL; u++)
                v[u] = k + u < n_splits ? src[(size_t)(k + u) * (hd + 2) + d] : 0.0f;
#pragma unroll
            for (int u = 0; u < ATT_MERGE_UNROLL; u++)
                if (k + u < n_splits && sw[k + u] != 0.0f) a += v[u] * sw[k + u];
        }
        oh[d] = a * inv;
    }
}

/* Split and merge in one kernel (sm_90): the n_splits slices of a (row, head) are the blocks of
 * one thread-block cluster. Each block leaves its slice's result in its own shared memory; after
 * the cluster's barrier every block merges a share of the head's dims, reading the other blocks'
 * results through distributed shared memory - no partial buffer in global memory, and no second
 * kernel, whose launch and memory round trips were 0.12 ms of E4B's 3.45 ms step (docs/
 * bench_gpu.md, session 14). The merge is attn_merge_kernel's: the slices' weights once per
 * block, the sums in slice order. */
template <int PER>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attn_cluster_kernel(float *out, const float *q, const float *kc, const float *vc,
                        const int *dpos, int pos0, int len, int window, int n_heads, int n_kv_heads,
                        int hd, int n_splits) {
    k_wait_prior();
    __shared__ float part[ATT_MAXD + 2]; /* this slice's result, read by the whole cluster */
    const int split = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
    att_slice<PER>(part, q, kc, vc, step_pos(dpos, pos0) + t, window, len, n_heads, n_kv_heads, hd,
                   split, n_splits, h, t);
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900 /* clusters: sm_90 and later */
    __shared__ float sw[ATT_CL_MAX], sl[ATT_CL_MAX], s_inv, red[32];
    __shared__ float gath[ATT_MAXD + ATT_CL_MAX]; /* n_splits x this block's share of the dims */
    cg::cluster_group cl = cg::this_cluster();
    cl.sync(); /* every slice's result is in place (and visible to the cluster) */
    const int s = threadIdx.x;
    const float *ps = s < n_splits ? cl.map_shared_rank(part, s) : part;
    const float ms = s < n_splits ? ps[hd] : -INFINITY;
    const float ls = s < n_splits ? ps[hd + 1] : 0.0f;
    const float M = block_max(ms, red);
    if (s < n_splits) {
        sw[s] = ms != -INFINITY ? expf(ms - M) : 0.0f;
        sl[s] = ms != -INFINITY ? ls : 0.0f;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float L = 0.0f;
        for (int k = 0; k < n_splits; k++)
            if (sw[k] != 0.0f) L += sl[k] * sw[k];
        s_inv = 1.0f / L;
    }
    __syncthreads();
    const float inv = s_inv;
    /* This block's share of the dims, [d0, d0 + nd): first every slice's values of it, fetched
     * from the other blocks all at once (one round trip), then each dim summed in slice order. */
    const int share = (hd + n_splits - 1) / n_splits, d0 = split * share;
    const int nd = max(0, min(hd, d0 + share) - d0);
    for (int i = threadIdx.x; i < n_splits * nd; i += blockDim.x) {
        const int k = i / nd;
        gath[i] = sw[k] != 0.0f ? cl.map_shared_rank(part, k)[d0 + i % nd] : 0.0f;
    }
    __syncthreads();
    float *oh = out + ((size_t)t * n_heads + h) * hd + d0;
    for (int d = threadIdx.x; d < nd; d += blockDim.x) {
        float a = 0.0f;
        for (int k = 0; k < n_splits; k++)
            if (sw[k] != 0.0f) a += gath[k * nd + d] * sw[k];
        oh[d] = a * inv;
    }
    cl.sync(); /* no block leaves while another still reads its shared memory */
#endif
}

/* The cluster path: on (k_set_att_cluster), and a GPU with clusters (sm_90 and later). */
static int att_cluster = 1;

extern "C" void k_set_att_cluster(int on) {
    att_cluster = on;
}

static int att_cluster_hw(void) {
    static int hw = -1;
    if (hw < 0) {
        int dev = 0, major = 0;
        hw =
            cudaGetDevice(&dev) == cudaSuccess &&
            cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
            major >= 9;
    }
    return hw;
}

extern "C" int k_attention_splits(int max_ctx, int n_tok, int n_heads) {
    /* About 512 blocks per row, no slice shorter than 16 positions, at most 64 slices; with
     * clusters (att_cluster) at most ATT_CL_MAX, as long as a slice stays within ATT_CL_SPAN
     * positions (longer contexts keep the split kernel's 64 slices and the merge kernel). The count
     * does not depend on n_tok, so a row's result (its slices and the order they are summed in) is
     * the same whether it is decoded alone or inside a prefill / verify chunk: a speculative verify
     * pass reproduces plain decoding bit for bit. */
    (void)n_tok;
    int want = 512 / (n_heads > 0 ? n_heads : 1);
    int most = (max_ctx + 15) / 16;
    if (att_cluster && att_cluster_hw() && max_ctx <= ATT_CL_MAX * ATT_CL_SPAN && want > ATT_CL_MAX)
        want = ATT_CL_MAX;
    int s = want < most ? want : most;
    if (s > ATT_MAX_SPLITS) s = ATT_MAX_SPLITS;
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
    if (att_cluster && att_cluster_hw() && n_splits <= ATT_CL_MAX) {
        void (*fused)(float *, const float *, const float *, const float *, const int *, int, int,
                      int, int, int, int, int) = head_dim <= 32   ? attn_cluster_kernel<1>
                                                 : head_dim <= 64 ? attn_cluster_kernel<2>
                                                 : head_dim <= 128
                                                     ? attn_cluster_kernel<4>
                                                     : attn_cluster_kernel<ATT_PER_LANE>;
        if (k_skip & (K_SKIP_ATTN_SPLIT | K_SKIP_ATTN_MERGE)) return;
        att_launch_cluster(fused, grid, n_splits, s, out, q, kc, vc, dpos, pos0, len, window,
                           n_heads, n_kv_heads, head_dim, n_splits);
        K_CHECK_LAUNCH();
        return;
    }
    void (*split)(float *, const float *, const float *, const float *, const int *, int, int, int,
                  int, int, int, int) = head_dim <= 32    ? attn_split_kernel<1>
                                        : head_dim <= 64  ? attn_split_kernel<2>
                                        : head_dim <= 128 ? attn_split_kernel<4>
                                                          : attn_split_kernel<ATT_PER_LANE>;
    if (!(k_skip & K_SKIP_ATTN_SPLIT))
        k_launch(split, dim3(grid), dim3(ATT_WARPS * 32), s, partial, q, kc, vc, dpos, pos0, len,
                 window, n_heads, n_kv_heads, head_dim, n_splits);
    K_CHECK_LAUNCH();
    if (!(k_skip & K_SKIP_ATTN_MERGE))
        k_launch(attn_merge_kernel, dim3(n_heads, n_tok), dim3(ATT_MERGE_THREADS), s, out,
                 (const float *)partial, n_heads, head_dim, n_splits);
    K_CHECK_LAUNCH();
}
