/* attention.cu: the KV ring (kv_write) and causal attention over it, for one decode row or
 * for n rows at once (prefill, teacher forcing, speculative verify).
 *
 * Shape of the work. Gemma 4 has few KV heads (2 on E4B) and decodes one row at a time, so
 * one block per head would leave most of the GPU idle on a long context. The positions a
 * row attends to are therefore cut into n_splits slices (split-KV, "flash decoding"); block
 * (split, head, row) scores its slice with an online softmax, each warp its positions in turn,
 * loaded a batch at a time (att_score; lane i holds dims i, i + 32, ... of the head, so the q.k
 * dot is a warp sum), merges
 * its 4 warps in shared memory and writes (max, sum, unnormalised output) for the slice.
 * attn_merge then combines the slices of each (row, head). The number of slices is fixed by
 * the longest context the ring can hold, not by the current position, so a decode step
 * captured in a CUDA graph stays correct as the sequence grows; slices past the current
 * context are empty and cost one early exit.
 *
 * On Hopper (sm_90) the slices of a (row, head) can instead be the blocks of one thread block
 * cluster (the form K_ATTN_CLUSTER, attn_cluster_kernel below): the blocks hand their
 * partial results to each other through distributed shared memory and merge them after one
 * cluster barrier, so a decode step has one attention kernel a layer instead of two, and the
 * partials never go through global memory.
 *
 * The caches are fp32 rows [len][n_kv_heads][head_dim] used as rings (position p in row
 * p % len); a row attends to max(0, p - window + 1) .. p. */

#include "attention.cuh"

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

/* One slice of one (row, head). partial: [row][head][split][head_dim + 2] = acc..., max, sum.
 * PER: dims per lane, head_dim / 32 rounded up to a power of two for heads up to 128 wide, 16
 * for wider ones. A lane holds PER dims of q,
 * of its accumulator and of NB positions' keys and values, so the registers (and with them
 * the blocks a multiprocessor holds) follow the head: compiled for the largest head (512) it
 * took 152 registers a thread - 3 blocks per multiprocessor - also for the small model's
 * 32-wide heads (32 registers with PER = 1: its decode 3 %, its k = 3 speculation 16 % faster,
 * docs/bench_gpu.md). Wider heads keep PER = 16: E4B's 256-wide layers with PER = 8 (79
 * registers) measured 0.4 % slower a step (session 13, with the one-ahead loop; not measured
 * again with batches). Dims past head_dim were never summed, so every PER gives the same bits.
 * NB: positions a warp loads at once (att_split_batch). */
template <int PER, int NB>
__global__ void __launch_bounds__(ATT_WARPS * 32)
    attn_split_kernel(float *partial, const float *q, const float *kc, const float *vc,
                      const int *dpos, int pos0, int len, int window, int n_heads, int n_kv_heads,
                      int hd, int n_splits) {
    k_launch_next();
    __shared__ float sm_m[ATT_WARPS], sm_l[ATT_WARPS];
    __shared__ float sm_acc[ATT_WARPS][ATT_MAXD];
    const int split = blockIdx.x, h = blockIdx.y, t = blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h / (n_heads / n_kv_heads);
    const size_t kv_dim = (size_t)n_kv_heads * hd;
    const int p0 = step_pos(dpos, pos0), p = p0 + t; /* the word is written before the step */
    int j0, j1;
    att_slice(p, window, split, n_splits, j0, j1);

    float m, l, acc[PER];
    att_score<PER, ATT_WARPS, NB>(m, l, acc, q + ((size_t)t * n_heads + h) * hd, kc, vc, j0, j1, p0,
                                  len, kv_dim, kvh, hd, lane, warp);
    const float M = att_block_max<PER, ATT_WARPS>(sm_m, sm_l, &sm_acc[0][0], ATT_MAXD, m, l, acc,
                                                  hd, lane, warp);
    float *dst = partial + (((size_t)t * n_heads + h) * n_splits + split) * (hd + 2);
    for (int d = threadIdx.x; d < hd; d += blockDim.x)
        dst[d] = att_block_acc<ATT_WARPS>(sm_m, &sm_acc[0][0], ATT_MAXD, M, d);
    if (threadIdx.x == 0) {
        dst[hd] = M;
        dst[hd + 1] = att_block_sum<ATT_WARPS>(sm_m, sm_l, M);
    }
}

/* The cluster form (sm_90): the blocks of one cluster are the slices of one (row, head) -
 * cluster rank = slice, ATT_CLUSTER of them, W warps each (a fixed cut: a row's result does not
 * depend on the rows launched with it). Each block scores its slice as attn_split_kernel does
 * and merges its warps; then, instead of writing (acc, max, sum) to memory for a second kernel,
 * it stores them straight into the shared memory of the blocks that finish them: block r owns
 * output dims [r dw, (r + 1) dw) and receives every slice's accumulator for those dims, and
 * every slice's max and sum. One cluster barrier (release / acquire: the remote stores are
 * visible after it, and no block reads another's memory after it, so none has to wait for the
 * others to finish) and each block merges its dims from its own shared memory, in slice order,
 * with the merge kernel's arithmetic.
 *
 * The shape was measured (docs/bench_gpu.md, session 20 calls 2-3; E4B-sized model, 256-token
 * prompt): 8 blocks a cluster (the portable size) of 16 warps for heads up to 256 wide, 8 for
 * 512-wide heads (PER 16 holds more registers than 16 warps leave a thread), against clusters
 * of 16 and of 4 and 4-8 warps a block. It has fewer, longer slices than the split form (128
 * or 64 warps a (row, head) against up to 256), so long contexts stay with the split form:
 * k_attention_splits picks the cluster form for a ring of at most ATT_CLUSTER_POS positions a
 * warp. */
template <int PER, int W, int NB>
__global__ void __launch_bounds__(W * 32)
    attn_cluster_kernel(float *out, const float *q, const float *kc, const float *vc,
                        const int *dpos, int pos0, int len, int window, int n_heads, int n_kv_heads,
                        int hd) {
    k_launch_next();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    float v;
    const int d = att_cluster_head<PER, W, NB>(v, q, kc, vc, dpos, pos0, len, window, n_heads,
                                               n_kv_heads, hd);
    if (d >= 0) out[((size_t)blockIdx.z * n_heads + blockIdx.y) * hd + d] = v;
#else
    __trap(); /* never launched before sm_90 (k_attention refuses the form there): a build
               * without sm_90 code run on a newer GPU would otherwise leave out unwritten */
#endif
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

/* ---- launch ------------------------------------------------------------------------------ */

typedef void (*attn_cluster_fn)(float *, const float *, const float *, const float *, const int *,
                                int, int, int, int, int, int);
/* Positions a warp of the split form loads at once (att_score): 4; 2 for heads wider than 256,
 * and for heads over 128 wide in chunks of several rows (verify passes). The batch changes no
 * bit (att_score), so a verify chunk may take another than the decode step it reproduces. The
 * split form compiles every head over 128 wide with 16 dims a lane: 2 positions take 128
 * registers a thread, 4 take 201 (2 blocks of 4 warps a multiprocessor). Measured on the H200,
 * E4B-sized model, one process, alternating (docs/bench_gpu.md):
 *   - session 23 call 2: 2 for the 512-wide heads (in both forms), the split form's step
 *     3.27-3.29 ms against 3.31-3.33 with 4, verify passes 0.5-1 % faster;
 *   - session 24 calls 3-4: 2 for the 256-wide heads in verify passes over 2 / 4 / 8 rows
 *     4.68-4.70 / 6.24 / 10.16-10.17 ms against 4.76-4.78 / 6.39 / 10.67-10.68, but the decode
 *     step 3.25-3.27 against 3.23 with 2 (so decode keeps 4). */
static int att_split_batch(int head_dim, int n_tok) {
    return head_dim > 256 || (head_dim > 128 && n_tok > 1) ? 2 : 4;
}

/* The cluster form's kernel for a head width, and its warps a block. Its positions a batch: 4,
 * and 2 for heads wider than 256 (128 registers a thread against 203; session 23). 2 for the
 * 256-wide heads in verify chunks made those passes 0.5-0.9 % slower (113 registers with 4;
 * session 24 call 4), so the cluster form keeps one kernel a head width for every n. */
static attn_cluster_fn attn_cluster_for(int head_dim, int *warps) {
    *warps = ATT_CLUSTER_WARPS(head_dim);
    return head_dim <= 32    ? attn_cluster_kernel<1, 16, 4>
           : head_dim <= 64  ? attn_cluster_kernel<2, 16, 4>
           : head_dim <= 128 ? attn_cluster_kernel<4, 16, 4>
           : head_dim <= 256 ? attn_cluster_kernel<8, 16, 4>
                             : attn_cluster_kernel<ATT_PER_LANE, 8, 2>;
}

/* Whether the current device runs the cluster form: sm_90 or later, and a cluster of the
 * largest block (the 512-wide heads' kernel) fits - a MIG or MPS share of a GPU may place none.
 * -1 until first asked: the driver is asked once a process. */
static int attn_has_clusters = -1;

static int attn_clusters_fit(void) {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        major < 9)
        return 0;
    int warps;
    attn_cluster_fn fn = attn_cluster_for(ATT_MAXD, &warps);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(ATT_CLUSTER);
    cfg.blockDim = dim3(warps * 32);
    cudaLaunchAttribute a = k_cluster_attr(ATT_CLUSTER);
    cfg.attrs = &a;
    cfg.numAttrs = 1;
    int n = 0;
    return cudaOccupancyMaxActiveClusters(&n, fn, &cfg) == cudaSuccess && n > 0;
}

extern "C" int k_attention_has_clusters(void) {
    if (attn_has_clusters < 0) {
        attn_has_clusters = attn_clusters_fit();
        cudaGetLastError(); /* a refused query only means no clusters */
    }
    return attn_has_clusters;
}

extern "C" int k_attention_splits(int form, int max_ctx, int n_tok, int n_heads, int head_dim) {
    /* The count does not depend on n_tok, so a row's result (its slices and the order they are
     * summed in) is the same whether it is decoded alone or inside a prefill / verify chunk:
     * a speculative verify pass reproduces plain decoding bit for bit. */
    (void)n_tok;
    if (form == K_ATTN_CLUSTER) {
        int warps;
        attn_cluster_for(head_dim, &warps);
        if (max_ctx <= ATT_CLUSTER * warps * ATT_CLUSTER_POS) return 0;
    }
    /* The split form: about 512 blocks per row, no slice shorter than 16 positions, at most 64
     * slices. */
    int want = 512 / (n_heads > 0 ? n_heads : 1);
    int most = (max_ctx + 15) / 16;
    int s = want < most ? want : most;
    if (s > ATT_MAX_SPLITS) s = ATT_MAX_SPLITS;
    return s < 1 ? 1 : s;
}

extern "C" void k_attention(cudaStream_t s, float *out, const float *q, const float *kc,
                            const float *vc, int n_tok, const int *dpos, int pos0, int len,
                            int window, int n_heads, int n_kv_heads, int head_dim, int n_splits,
                            float *partial) {
    if (n_tok <= 0) return;
    if (head_dim > ATT_MAXD || n_kv_heads <= 0 || n_heads % n_kv_heads ||
        (n_splits == 0 && !k_attention_has_clusters())) {
        fprintf(stderr,
                "%s:%d: attention: head_dim %d (at most %d), %d heads over %d kv heads, %d "
                "splits\n",
                __FILE__, __LINE__, head_dim, ATT_MAXD, n_heads, n_kv_heads, n_splits);
        exit(1);
    }
    if (n_splits == 0) { /* the cluster form */
        int warps;
        attn_cluster_fn fn = attn_cluster_for(head_dim, &warps);
        if (!(k_skip & K_SKIP_ATTN_SPLIT))
            k_launch_clusters(fn, dim3(ATT_CLUSTER, n_heads, n_tok), dim3(warps * 32), ATT_CLUSTER,
                              s, out, q, kc, vc, dpos, pos0, len, window, n_heads, n_kv_heads,
                              head_dim);
        K_CHECK_LAUNCH();
        return;
    }
    dim3 grid(n_splits, n_heads, n_tok);
    void (*split)(float *, const float *, const float *, const float *, const int *, int, int, int,
                  int, int, int, int) = head_dim <= 32    ? attn_split_kernel<1, 4>
                                        : head_dim <= 64  ? attn_split_kernel<2, 4>
                                        : head_dim <= 128 ? attn_split_kernel<4, 4>
                                        : att_split_batch(head_dim, n_tok) == 4
                                            ? attn_split_kernel<ATT_PER_LANE, 4>
                                            : attn_split_kernel<ATT_PER_LANE, 2>;
    if (!(k_skip & K_SKIP_ATTN_SPLIT))
        k_launch(split, dim3(grid), dim3(ATT_WARPS * 32), s, partial, q, kc, vc, dpos, pos0, len,
                 window, n_heads, n_kv_heads, head_dim, n_splits);
    K_CHECK_LAUNCH();
    if (!(k_skip & K_SKIP_ATTN_MERGE))
        k_launch(attn_merge_kernel, dim3(n_heads, n_tok), dim3(ATT_MERGE_THREADS), s, out,
                 (const float *)partial, n_heads, head_dim, n_splits);
    K_CHECK_LAUNCH();
}
