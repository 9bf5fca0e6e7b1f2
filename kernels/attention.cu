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
#include <cooperative_groups.h>

#include "kcommon.cuh"

namespace cg = cooperative_groups;

#define ATT_WARPS      4
#define ATT_MAXD       512 /* largest head_dim (E4B's full layers) */
#define ATT_PER_LANE   (ATT_MAXD / 32)
#define ATT_MAX_SPLITS 64 /* slices of a (row, head); the merge has a thread per slice */

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

/* One position of the online softmax: its score q.k (lane partial sums over dims lane, lane +
 * 32, ..., then the warp sum), the running max m and sum l, the accumulator rescaled and the
 * value row added. */
template <int PER>
__device__ __forceinline__ void att_step(float &m, float &l, float *acc, const float *qr,
                                         const float *kr, const float *vr, int hd, int lane) {
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
    }
    m = mn;
}

/* Positions j0 + warp, j0 + warp + W, ... (below j1) of one (row, head) with an online
 * softmax: the warp's running max m, sum l and unnormalised accumulator acc (PER dims a lane,
 * lane i holding dims i, i + 32, ...). It waits for the previous kernel (k_wait_only) itself,
 * after the loads that may go before it.
 *
 * A warp's positions are loaded NB at a time: every key and value row of a batch is
 * asked for before any of them is scored, so that a batch costs one memory round trip, not one a
 * position (the loads never depend on a score). A decode step gives a warp few positions (E4B's
 * sliding layers 3-4, the small model 1-2), so it is mostly one batch.
 *
 * The first batch's rows before the wait. A position before p0 was stored by an earlier step;
 * this step's stores (positions p0 .. p0 + n_tok - 1) land in ring rows that none of its rows
 * attends to (decoder.c sizes a sliding ring window + chunk - 1), so a position before p0 that
 * a row attends to reads the same before and after them. Its rows are therefore loaded before
 * waiting for the previous kernel, and the wait overlaps that round trip: after it, a warp with
 * one batch waits only for q (and the new rows, if it scores them). This rests on the earlier
 * steps being complete when this one starts: under PDL a kernel may start before kernels two or
 * more back have finished, but every step (and every draft loop) begins with a plain stream copy
 * of its ids / position word (backend_cuda.c), which waits for all of them. A path that chained
 * steps on the device without one would have to load these rows after the wait.
 *
 * Measured on an H200 against a loop that loads the warp's next position while scoring the
 * current one: the small model's step 7 % faster, E4B's 0.5-1 % (the split form 1.7 %), its
 * verify passes 1-2 %. The positions, their order and the arithmetic are that loop's, so the
 * bits are too.
 *
 * G heads of one KV head at once (qh: head g's q at qh + g hd; m[g], l[g], acc[g PER ..]): each
 * key and value row is loaded once for the G of them, and each head's steps are the ones it
 * takes alone, in the same order - the same bits (attn_cluster_heads_kernel). */
template <int PER, int W, int NB, int G = 1>
__device__ __forceinline__ void
att_score(float *m, float *l, float *acc, const float *qh, const float *kc, const float *vc, int j0,
          int j1, int p0, int len, size_t kv_dim, int kvh, int hd, int lane, int warp) {
    float kr[NB][PER], vr[NB][PER];
    const int j = j0 + warp;
#pragma unroll
    for (int b = 0; b < NB; b++)
        if (j + b * W < p0)
            att_load_kv<PER>(kr[b], vr[b], kc, vc, j + b * W, j1, len, kv_dim, kvh, hd, lane);
    k_wait_only();
#pragma unroll
    for (int b = 0; b < NB; b++)
        if (j + b * W >= p0)
            att_load_kv<PER>(kr[b], vr[b], kc, vc, j + b * W, j1, len, kv_dim, kvh, hd, lane);

    float qr[G][PER];
#pragma unroll
    for (int g = 0; g < G; g++) {
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            qr[g][i] = d < hd ? qh[g * hd + d] : 0.0f;
            acc[g * PER + i] = 0.0f;
        }
        m[g] = -INFINITY;
        l[g] = 0.0f;
    }
    for (int jb = j; jb < j1; jb += NB * W) {
#pragma unroll
        for (int b = 0; b < NB; b++)
            if (jb + b * W < j1)
#pragma unroll
                for (int g = 0; g < G; g++)
                    att_step<PER>(m[g], l[g], acc + g * PER, qr[g], kr[b], vr[b], hd, lane);
        if (jb + NB * W < j1)
#pragma unroll
            for (int b = 0; b < NB; b++)
                att_load_kv<PER>(kr[b], vr[b], kc, vc, jb + (NB + b) * W, j1, len, kv_dim, kvh, hd,
                                 lane);
    }
}

/* The largest of the block's W warp maxima (-INFINITY when every warp's slice was empty). */
template <int W> __device__ __forceinline__ float att_max_of(const float *sm_m) {
    float M = -INFINITY;
    for (int w = 0; w < W; w++)
        M = fmaxf(M, sm_m[w]);
    return M;
}

/* The block's W warps merged through shared memory (sm_m[W], sm_l[W], sm_acc[W][stride]): the
 * block's max M (-INFINITY for an empty slice) is returned, after a barrier; then
 * att_block_acc and att_block_sum give its accumulator and sum in the block's terms. */
template <int PER, int W>
__device__ __forceinline__ float att_block_max(float *sm_m, float *sm_l, float *sm_acc, int stride,
                                               float m, float l, const float *acc, int hd, int lane,
                                               int warp) {
    if (lane == 0) {
        sm_m[warp] = m;
        sm_l[warp] = l;
    }
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        if (d < hd) sm_acc[warp * stride + d] = acc[i];
    }
    __syncthreads();
    return att_max_of<W>(sm_m);
}

template <int W>
__device__ __forceinline__ float att_block_acc(const float *sm_m, const float *sm_acc, int stride,
                                               float M, int d) {
    float a = 0.0f;
    if (M != -INFINITY)
        for (int w = 0; w < W; w++)
            if (sm_m[w] != -INFINITY) a += sm_acc[w * stride + d] * expf(sm_m[w] - M);
    return a;
}

template <int W>
__device__ __forceinline__ float att_block_sum(const float *sm_m, const float *sm_l, float M) {
    float L = 0.0f;
    if (M != -INFINITY)
        for (int w = 0; w < W; w++)
            if (sm_m[w] != -INFINITY) L += sm_l[w] * expf(sm_m[w] - M);
    return L;
}

/* The slice [j0, j1) of a (row, head) cut into n_splits slices: the positions a row at p
 * attends to, lo .. p, in slices of ceil(count / n_splits). */
__device__ __forceinline__ void att_slice(int p, int window, int split, int n_splits, int &j0,
                                          int &j1) {
    const int lo = window_lo(p, window);
    const int count = p - lo + 1;
    const int per = (count + n_splits - 1) / n_splits;
    j0 = lo + split * per;
    j1 = min(p + 1, j0 + per); /* exclusive */
}

/* One slice of one (row, head). partial: [row][head][split][head_dim + 2] = acc..., max, sum.
 * PER: dims per lane, head_dim / 32 rounded up to a power of two for heads up to 128 wide, 16
 * for wider ones. A lane holds PER dims of q,
 * of its accumulator and of NB positions' keys and values, so the registers (and with them
 * the blocks a multiprocessor holds) follow the head: compiled for the largest head (512) it
 * took 152 registers a thread - 3 blocks per multiprocessor - also for the small model's
 * 32-wide heads (32 registers with PER = 1: its decode 3 %, its k = 3 speculation 16 % faster,
 * on an H200). Wider heads keep PER = 16: E4B's 256-wide layers with PER = 8 (79
 * registers) measured 0.4 % slower a step (with a one-position-ahead loop rather than
 * batches). Dims past head_dim were never summed, so every PER gives the same bits.
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
    att_score<PER, ATT_WARPS, NB>(&m, &l, acc, q + ((size_t)t * n_heads + h) * hd, kc, vc, j0, j1,
                                  p0, len, kv_dim, kvh, hd, lane, warp);
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
 * The shape was measured (E4B-sized model, 256-token prompt, an H200): 8 blocks a cluster (the
 * portable size) of 16 warps for heads up to 256 wide, 8 for 512-wide heads (PER 16 holds more
 * registers than 16 warps leave a thread), against clusters of 16 and of 4 and 4-8 warps a block.
 * It has fewer, longer slices than the split form (128 or 64 warps a (row, head) against up to
 * 256), so long contexts stay with the split form: k_attention_splits picks the cluster form for a
 * ring of at most ATT_CLUSTER_POS positions a warp. */
#define ATT_CLUSTER     8  /* blocks a cluster: slices a (row, head) */
#define ATT_CLUSTER_POS 16 /* positions a warp the cluster form takes at most */

/* One output dim from the ATT_CLUSTER slices' maxima rm, sums rl and accumulators rv[s stride]:
 * the merge kernel's arithmetic (a slice's weight exp(m_s - M), 0 for an empty slice; sums in
 * slice order). */
__device__ __forceinline__ float att_merge_slices(const float *rm, const float *rl, const float *rv,
                                                  int stride) {
    float Mg = -INFINITY;
    for (int s = 0; s < ATT_CLUSTER; s++)
        Mg = fmaxf(Mg, rm[s]);
    float L = 0.0f, a = 0.0f;
    for (int s = 0; s < ATT_CLUSTER; s++) {
        const float w = rm[s] != -INFINITY ? expf(rm[s] - Mg) : 0.0f;
        if (w != 0.0f) {
            L += rl[s] * w;
            a += rv[s * stride] * w;
        }
    }
    return a * (1.0f / L);
}

template <int PER, int W, int NB, int MINB = 1>
__global__ void __launch_bounds__(W * 32, MINB)
    attn_cluster_kernel(float *out, const float *q, const float *kc, const float *vc,
                        const int *dpos, int pos0, int len, int window, int n_heads, int n_kv_heads,
                        int hd) {
    k_launch_next();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int STRIDE = PER * 32; /* floats a warp's accumulator takes in sm_acc */
    __shared__ float sm_m[W], sm_l[W], sm_acc[W * STRIDE];
    __shared__ float recv[ATT_MAXD], recv_m[ATT_CLUSTER], recv_l[ATT_CLUSTER];
    constexpr int C = ATT_CLUSTER;
    cg::cluster_group cluster = cg::this_cluster();
    const int split = (int)cluster.block_rank();
    const int h = blockIdx.y, t = blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h / (n_heads / n_kv_heads);
    const size_t kv_dim = (size_t)n_kv_heads * hd;
    const int p0 = step_pos(dpos, pos0), p = p0 + t;
    int j0, j1;
    att_slice(p, window, split, C, j0, j1);
    /* A block may write another's shared memory only once that block has started: this
     * arrival says so, and the wait for everyone's comes after the scoring, which hides it. */
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");

    float m, l, acc[PER];
    att_score<PER, W, NB>(&m, &l, acc, q + ((size_t)t * n_heads + h) * hd, kc, vc, j0, j1, p0, len,
                          kv_dim, kvh, hd, lane, warp);
    const float M = att_block_max<PER, W>(sm_m, sm_l, sm_acc, STRIDE, m, l, acc, hd, lane, warp);
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    /* dim d goes to block d / dw, at recv[slice * dw + d % dw] there (dw = hd / C rounded up:
     * C dw <= 512, as 512 is a multiple of C) */
    static_assert(ATT_MAXD % C == 0, "recv holds C dw floats");
    const int dw = (hd + C - 1) / C;
    for (int d = threadIdx.x; d < hd; d += blockDim.x) {
        float *r = cluster.map_shared_rank(recv, d / dw);
        r[split * dw + d % dw] = att_block_acc<W>(sm_m, sm_acc, STRIDE, M, d);
    }
    if (threadIdx.x < C) {
        const float L = att_block_sum<W>(sm_m, sm_l, M);
        cluster.map_shared_rank(recv_m, (int)threadIdx.x)[split] = M;
        cluster.map_shared_rank(recv_l, (int)threadIdx.x)[split] = L;
    }
    cluster.sync();

    /* This block's dims from the C slices. dw <= 512 / C = 64 threads. */
    const int d = split * dw + (int)threadIdx.x;
    if ((int)threadIdx.x >= dw || d >= hd) return;
    out[((size_t)t * n_heads + h) * hd + d] =
        att_merge_slices(recv_m, recv_l, recv + threadIdx.x, dw);
#else
    __trap(); /* never launched before sm_90 (k_attention refuses the form there): a build
               * without sm_90 code run on a newer GPU would otherwise leave out unwritten */
#endif
}

/* The cluster form for several rows (a verify pass, a prefill chunk) with G heads of one KV head
 * a cluster: grid (ATT_CLUSTER, n_heads / G, rows). Over several rows the per-head form is a
 * cluster for every (row, head) - 512 blocks of 16 warps over 8 rows, two waves at two blocks a
 * multiprocessor - each loading its KV head's keys and values for itself, G times over. Here a
 * warp loads each position's key and value row once and scores it for its G heads (att_score
 * with G), and the block merges its warps and the cluster its slices head by head, with the
 * per-head form's arithmetic in the same order: each (row, head) gets the bits it gets alone,
 * in a decode step. Heads up to 256 wide (G q rows and accumulators in registers); the warps'
 * accumulators in dynamic shared memory, G W PER * 32 floats (64 KiB for E4B's 256-wide heads,
 * G = 4). */
template <int PER, int W, int NB, int G>
__global__ void __launch_bounds__(W * 32, 1)
    attn_cluster_heads_kernel(float *out, const float *q, const float *kc, const float *vc,
                              const int *dpos, int pos0, int len, int window, int n_heads,
                              int n_kv_heads, int hd) {
    static_assert(PER <= 8, "heads up to 256 wide");
    k_launch_next();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int STRIDE = PER * 32, C = ATT_CLUSTER;
    extern __shared__ float sm_acc[]; /* [G][W][STRIDE] */
    __shared__ float sm_m[G][W], sm_l[G][W];
    __shared__ float recv[G][STRIDE], recv_m[G][C], recv_l[G][C];
    cg::cluster_group cluster = cg::this_cluster();
    const int split = (int)cluster.block_rank();
    const int h0 = blockIdx.y * G, t = blockIdx.z;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int kvh = h0 / (n_heads / n_kv_heads);
    const size_t kv_dim = (size_t)n_kv_heads * hd;
    const int p0 = step_pos(dpos, pos0), p = p0 + t;
    int j0, j1;
    att_slice(p, window, split, C, j0, j1);
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");

    float m[G], l[G], acc[G * PER];
    att_score<PER, W, NB, G>(m, l, acc, q + ((size_t)t * n_heads + h0) * hd, kc, vc, j0, j1, p0,
                             len, kv_dim, kvh, hd, lane, warp);
    /* att_block_max's stores for each head, then one barrier for all G */
#pragma unroll
    for (int g = 0; g < G; g++) {
        if (lane == 0) {
            sm_m[g][warp] = m[g];
            sm_l[g][warp] = l[g];
        }
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            if (d < hd) sm_acc[(g * W + warp) * STRIDE + d] = acc[g * PER + i];
        }
    }
    __syncthreads();
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    /* dim d of head g goes to block d / dw, at recv[g][slice * dw + d % dw] there (C dw <= STRIDE:
     * STRIDE is a multiple of C at least hd) */
    const int dw = (hd + C - 1) / C;
    for (int e = threadIdx.x; e < G * hd; e += blockDim.x) {
        const int g = e / hd, d = e % hd;
        float *r = cluster.map_shared_rank(&recv[g][0], d / dw);
        r[split * dw + d % dw] =
            att_block_acc<W>(sm_m[g], sm_acc + g * W * STRIDE, STRIDE, att_max_of<W>(sm_m[g]), d);
    }
    if (threadIdx.x < G * C) {
        const int g = threadIdx.x / C, r = threadIdx.x % C;
        const float M = att_max_of<W>(sm_m[g]);
        cluster.map_shared_rank(&recv_m[g][0], r)[split] = M;
        cluster.map_shared_rank(&recv_l[g][0], r)[split] = att_block_sum<W>(sm_m[g], sm_l[g], M);
    }
    cluster.sync();

    /* This block's dims of the G heads from the C slices: G dw <= 4 x 32 threads */
    const int g = (int)threadIdx.x / dw, x = (int)threadIdx.x % dw, d = split * dw + x;
    if (g >= G || d >= hd) return;
    out[((size_t)t * n_heads + h0 + g) * hd + d] =
        att_merge_slices(recv_m[g], recv_l[g], &recv[g][x], dw);
#else
    __trap(); /* never launched before sm_90, as attn_cluster_kernel */
#endif
}

/* out[row][head][:] from the slices' partial results: a thread per output dim (the launch has at
 * least head_dim and n_splits threads). Every load is asked for at once, before anything waits
 * on one - the thread's dim of every slice (ATT_MAX_SPLITS of them, unrolled) and, for a thread
 * per slice, that slice's max and sum - so a merge costs one memory round trip. The slices'
 * weights exp(m_s - M) are worked out once per block, and the sums are taken in slice order with
 * empty slices skipped, as in a sum that never saw them: the bits do not depend on the launch.
 * (A thread taking its dims 16 slices at a time after the weights would wait, on E4B's 512-wide
 * heads - 64 slices over 256 threads - for 1 + 8 round trips.) */
__global__ void attn_merge_kernel(float *out, const float *partial, int n_heads, int hd,
                                  int n_splits) {
    k_wait_prior();
    __shared__ float sw[ATT_MAX_SPLITS], sl[ATT_MAX_SPLITS], s_inv;
    __shared__ float red[32];
    const int h = blockIdx.x, t = blockIdx.y, d = threadIdx.x, s = threadIdx.x;
    const float *src = partial + ((size_t)t * n_heads + h) * n_splits * (hd + 2);
    float v[ATT_MAX_SPLITS];
#pragma unroll
    for (int u = 0; u < ATT_MAX_SPLITS; u++)
        v[u] = u < n_splits && d < hd ? src[(size_t)u * (hd + 2) + d] : 0.0f;
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
    if (d >= hd) return;
    float a = 0.0f;
#pragma unroll
    for (int u = 0; u < ATT_MAX_SPLITS; u++)
        if (u < n_splits && sw[u] != 0.0f) a += v[u] * sw[u];
    out[((size_t)t * n_heads + h) * hd + d] = a * s_inv;
}

/* ---- launch ------------------------------------------------------------------------------ */

typedef void (*attn_cluster_fn)(float *, const float *, const float *, const float *, const int *,
                                int, int, int, int, int, int);
/* Positions a warp of the split form loads at once (att_score): 4; 2 for heads wider than 256,
 * and for heads over 128 wide in chunks of several rows (verify passes). The batch changes no
 * bit (att_score), so a verify chunk may take another than the decode step it reproduces. The
 * split form compiles every head over 128 wide with 16 dims a lane: 2 positions take 128
 * registers a thread, 4 take 201 (2 blocks of 4 warps a multiprocessor). Measured on the H200,
 * E4B-sized model, one process, alternating:
 *   - 2 for the 512-wide heads (in both forms): the split form's step 3.27-3.29 ms against
 *     3.31-3.33 with 4, verify passes 0.5-1 % faster;
 *   - 2 for the 256-wide heads in verify passes over 2 / 4 / 8 rows
 *     4.68-4.70 / 6.24 / 10.16-10.17 ms against 4.76-4.78 / 6.39 / 10.67-10.68, but the decode
 *     step 3.25-3.27 against 3.23 with 2 (so decode keeps 4). */
static int att_split_batch(int head_dim, int n_tok) {
    return head_dim > 256 || (head_dim > 128 && n_tok > 1) ? 2 : 4;
}

/* The cluster form's kernels, one a head width (heads up to `width` wide), each with its warps a
 * block (W) taken from its template, so that the reach below cannot disagree with the launch.
 * Positions a batch: 4, and 2 for heads wider than 256 (128 registers a thread against 203).
 *
 * A launch of several rows (a verify pass) may take another kernel of the same warps (`rows`):
 * the batch and the registers change no bit (att_score). A verify pass is n_heads x n_tok
 * clusters of 8 blocks (512 blocks over 8 rows) where a decode step has 64, so kernels held to
 * two blocks a multiprocessor halve its waves. E4B, H200, one process alternating:
 *   - the 256-wide heads at 64 registers, 2 positions a batch: verify over 2 / 4 / 8 rows
 *     3.407 / 4.265 / 7.654 ms against 3.504 / 4.370 / 8.004, the sliding layers' attention
 *     18.3 us against 27.7 over 8 rows; 1 position a batch 3.404 / 4.295 / 7.700. (2 positions a
 *     batch alone, one block a multiprocessor, made those passes 0.5-0.9 % slower.)
 *   - then the 512-wide heads at 128 registers (136 unbounded), no spill: 3.366 /
 *     4.214 / 7.524 against 3.414 / 4.261 / 7.613; 1 position a batch 3.371 / 4.223 / 7.536.
 * The decode step keeps the unbounded kernels: one block a multiprocessor is all its 64 clusters
 * fill. */
struct attn_cluster_shape {
    int width, warps;
    attn_cluster_fn fn, rows; /* one row; several */
    /* several rows, 4 and 2 heads a cluster (attn_cluster_heads_kernel; none past 256 wide), and
     * their dynamic shared memory */
    attn_cluster_fn heads4, heads2;
    size_t smem4, smem2;
};
template <int PER, int W, int NBR, int G> constexpr attn_cluster_fn attn_heads_of() {
    if constexpr (PER <= 8)
        return attn_cluster_heads_kernel<PER, W, NBR, G>;
    else
        return nullptr;
}
template <int PER, int W, int NB, int NBR = NB, int MINBR = 1>
constexpr attn_cluster_shape attn_cluster_of(int width) {
    return {width,
            W,
            attn_cluster_kernel<PER, W, NB>,
            attn_cluster_kernel<PER, W, NBR, MINBR>,
            attn_heads_of<PER, W, NBR, 4>(),
            attn_heads_of<PER, W, NBR, 2>(),
            (size_t)4 * W * PER * 32 * sizeof(float),
            (size_t)2 * W * PER * 32 * sizeof(float)};
}
static const attn_cluster_shape attn_cluster_shapes[] = {
    attn_cluster_of<1, 16, 4>(32),
    attn_cluster_of<2, 16, 4>(64),
    attn_cluster_of<4, 16, 4>(128),
    attn_cluster_of<8, 16, 4, 2, 2>(256),
    attn_cluster_of<ATT_PER_LANE, 8, 2, 2, 2>(ATT_MAXD),
};
#define ATT_CLUSTER_SHAPES ((int)(sizeof attn_cluster_shapes / sizeof attn_cluster_shapes[0]))
static_assert(ATT_CLUSTER_SHAPES < K_ATTN_HORIZON_CLASSES,
              "a horizon class for every reach, and 0");

static const attn_cluster_shape *attn_cluster_shape_for(int head_dim) {
    for (int i = 0; i < ATT_CLUSTER_SHAPES - 1; i++)
        if (head_dim <= attn_cluster_shapes[i].width) return &attn_cluster_shapes[i];
    return &attn_cluster_shapes[ATT_CLUSTER_SHAPES - 1];
}

/* The clusters of each shape's several-rows kernels the device runs at once: rows, heads2,
 * heads4 (attn_clusters_fit; 0 for none). */
static int attn_at_once[ATT_CLUSTER_SHAPES][3];

/* The kernel for n_tok rows of n_heads heads over n_kv_heads (*g heads a cluster; smem, its
 * dynamic shared memory). Over several rows, of a head a cluster and 2 or 4 where they divide the
 * heads a KV head has, the one that runs in the fewest waves of clusters, on a tie the one of
 * fewer heads (more blocks for the same work). Why waves: a cluster of 4 heads takes about 1.5
 * times as long as one of a head (E4B's sliding layers: about 9 us against 6), and the device
 * holds half as many of them (one block a multiprocessor against two: on an H200 15 clusters at
 * once against 30). So on E4B (8 heads, 2 KV heads) a verify pass over 2 or 3 rows keeps a head a
 * cluster (16 or 24 clusters, one wave; with 4 heads for every n: 3.119 / 3.460 ms against 3.008
 * / 3.385), and from 4 rows takes 4 heads (this rule):
 * over 4 / 5 / 6 / 7 / 8 / 16 / 64 rows 3.735 / 4.362 / 4.697 / 5.081 / 5.703 / 12.84 / 49.55 ms
 * against 3.850 / 4.495 / 4.848 / 5.251 / 5.708 / 13.01 / 50.75 (over 8 rows, 2 waves against 3:
 * the same). */
static attn_cluster_fn attn_cluster_for(int head_dim, int n_tok, int n_heads, int n_kv_heads,
                                        int *warps, int *g, size_t *smem) {
    const attn_cluster_shape *c = attn_cluster_shape_for(head_dim);
    const int *at_once = attn_at_once[c - attn_cluster_shapes];
    *warps = c->warps;
    *g = 1;
    *smem = 0;
    if (n_tok == 1) return c->fn;
    const attn_cluster_fn fns[3] = {c->rows, c->heads2, c->heads4};
    const size_t smems[3] = {0, c->smem2, c->smem4};
    const long clusters = (long)n_tok * n_heads;
    long best = -1;
    attn_cluster_fn fn = c->rows;
    for (int i = 0; i < 3; i++) {
        const int gi = 1 << i;
        if (!fns[i] || at_once[i] <= 0 || (n_heads / n_kv_heads) % gi) continue;
        const long waves = (clusters / gi + at_once[i] - 1) / at_once[i];
        if (best < 0 || waves < best) best = waves, fn = fns[i], *g = gi, *smem = smems[i];
    }
    return fn;
}

/* The longest context a cluster kernel takes: ATT_CLUSTER_POS positions a warp. */
static int attn_cluster_reach_of(const attn_cluster_shape *c) {
    return ATT_CLUSTER * c->warps * ATT_CLUSTER_POS;
}
static int attn_cluster_reach(int head_dim) {
    return attn_cluster_reach_of(attn_cluster_shape_for(head_dim));
}

/* Whether the current device runs the cluster form: sm_90 or later, and a cluster of every one
 * of its kernels fits - a MIG or MPS share of a GPU may place none. -1 until first asked: the
 * driver is asked once a process. */
static int attn_has_clusters = -1;

/* The clusters of fn the device runs at once (0: none fit). */
static int attn_cluster_fits(attn_cluster_fn fn, int warps, size_t smem) {
    if (smem > 48 * 1024 && cudaFuncSetAttribute(fn, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                                 (int)smem) != cudaSuccess)
        return 0;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(ATT_CLUSTER);
    cfg.blockDim = dim3(warps * 32);
    cfg.dynamicSmemBytes = smem;
    cudaLaunchAttribute a = k_cluster_attr(ATT_CLUSTER);
    cfg.attrs = &a;
    cfg.numAttrs = 1;
    int n = 0;
    return cudaOccupancyMaxActiveClusters(&n, fn, &cfg) == cudaSuccess && n > 0 ? n : 0;
}

static int attn_clusters_fit(void) {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        major < 9)
        return 0;
    for (int i = 0; i < ATT_CLUSTER_SHAPES; i++) {
        const attn_cluster_shape *c = &attn_cluster_shapes[i];
        int *at_once = attn_at_once[i];
        at_once[0] = attn_cluster_fits(c->rows, c->warps, 0);
        at_once[1] = c->heads2 ? attn_cluster_fits(c->heads2, c->warps, c->smem2) : 0;
        at_once[2] = c->heads4 ? attn_cluster_fits(c->heads4, c->warps, c->smem4) : 0;
        /* the forms of 2 and 4 heads are optional (attn_cluster_for passes them over) */
        if (!attn_cluster_fits(c->fn, c->warps, 0) || !at_once[0]) return 0;
    }
    return 1;
}

/* The number of distinct reaches the horizon lies within. k_attention_splits's answer for a ring
 * and a head width depends on the horizon only through whether it lies within that width's reach,
 * and which reaches it lies within is fixed by how many distinct ones it does (they are
 * thresholds): so two horizons of one class get the same answers everywhere. A horizon past every
 * reach decides nothing, as none does: class 0. */
extern "C" int k_attention_horizon_class(int horizon) {
    int c = 0;
    for (int i = 0; i < ATT_CLUSTER_SHAPES && horizon > 0; i++) {
        const int r = attn_cluster_reach_of(&attn_cluster_shapes[i]);
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= attn_cluster_reach_of(&attn_cluster_shapes[j]) == r;
        c += !seen && horizon <= r;
    }
    return c;
}

extern "C" int k_attention_has_clusters(void) {
    if (attn_has_clusters < 0) {
        attn_has_clusters = attn_clusters_fit();
        cudaGetLastError(); /* a refused query only means no clusters */
    }
    return attn_has_clusters;
}

extern "C" int k_attention_cluster_heads(int head_dim, int n_tok, int n_heads, int n_kv_heads,
                                         int *at_once) {
    *at_once = 0;
    if (!k_attention_has_clusters() || n_kv_heads <= 0 || n_heads % n_kv_heads) return 0;
    int warps, g;
    size_t smem;
    attn_cluster_for(head_dim, n_tok, n_heads, n_kv_heads, &warps, &g, &smem);
    const attn_cluster_shape *c = attn_cluster_shape_for(head_dim);
    *at_once = n_tok == 1 ? 0 : attn_at_once[c - attn_cluster_shapes][g == 4 ? 2 : g == 2 ? 1 : 0];
    return g;
}

extern "C" int k_attention_splits(int form, int max_ctx, int horizon, int n_tok, int n_heads,
                                  int head_dim) {
    /* The count does not depend on n_tok, so a row's result (its slices and the order they are
     * summed in) is the same whether it is decoded alone or inside a prefill / verify chunk:
     * a speculative verify pass reproduces plain decoding bit for bit. */
    (void)n_tok;
    /* The form goes by the positions a row of this sequence can attend to - the ring's, or
     * fewer when the sequence ends sooner (its horizon) - and the split form's slices by the
     * ring alone, so that only the form changes with the horizon. A ring of 4096 (the record's
     * MAX_MODEL_LEN) and a short chat sequence: one cluster kernel, not slices + merge
     * (E4B step 3.072-3.083 ms against 3.117-3.120 on an H200). Past 1024
     * actual positions a 512-wide head's slices are the faster (3.204 against 3.275 ms at 2048). */
    const int ctx = horizon > 0 && horizon < max_ctx ? horizon : max_ctx;
    if (form == K_ATTN_CLUSTER && ctx <= attn_cluster_reach(head_dim)) return 0;
    /* The split form: about 512 blocks per row, no slice shorter than 16 positions, at most 64
     * slices. */
    int want = 512 / (n_heads > 0 ? n_heads : 1);
    int most = (max_ctx + 15) / 16;
    int s = want < most ? want : most;
    if (s > ATT_MAX_SPLITS) s = ATT_MAX_SPLITS;
    return s < 1 ? 1 : s;
}

/* The merge's threads: one per output dim and at least one per slice, in whole warps. */
static int attn_merge_threads(int head_dim) {
    const int n = head_dim > ATT_MAX_SPLITS ? head_dim : ATT_MAX_SPLITS;
    return (n + 31) / 32 * 32;
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
        int warps, g;
        size_t smem;
        attn_cluster_fn fn =
            attn_cluster_for(head_dim, n_tok, n_heads, n_kv_heads, &warps, &g, &smem);
        if (!(k_skip & K_SKIP_ATTN_SPLIT))
            k_launch_ex(fn, dim3(ATT_CLUSTER, n_heads / g, n_tok), dim3(warps * 32), ATT_CLUSTER,
                        smem, s, out, q, kc, vc, dpos, pos0, len, window, n_heads, n_kv_heads,
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
        k_launch(attn_merge_kernel, dim3(n_heads, n_tok), dim3(attn_merge_threads(head_dim)), s,
                 out, (const float *)partial, n_heads, head_dim, n_splits);
    K_CHECK_LAUNCH();
}
