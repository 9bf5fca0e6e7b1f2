/* attention.cuh: the pieces of the decode attention that attention.cu (the split and cluster
 * forms) and attention_o.cu (the cluster form with the o projection by heads) share - how a
 * (row, head)'s positions are cut into slices, how a warp scores its positions with an online
 * softmax, and how a block merges its warps. One definition, so that every kernel built from
 * them gives the same bits for the same row. Device-side only; see attention.cu for the design. */
#ifndef ATTENTION_CUH
#define ATTENTION_CUH

#include <cooperative_groups.h>

#include "kcommon.cuh"

#define ATT_WARPS         4
#define ATT_MAXD          512 /* largest head_dim (E4B's full layers) */
#define ATT_PER_LANE      (ATT_MAXD / 32)
#define ATT_MAX_SPLITS    64  /* slices of a (row, head); the merge has a thread per slice */
#define ATT_MERGE_THREADS 256 /* a thread per output dim of a 256-wide head */
#define ATT_MERGE_UNROLL  16  /* slices a merge thread loads at once */
#define ATT_CLUSTER       8   /* blocks a cluster: slices a (row, head) */
#define ATT_CLUSTER_POS   16  /* positions a warp the cluster form takes at most */
/* The cluster form's warps a block: 16 for heads up to 256 wide, 8 for wider ones (attention.cu,
 * attn_cluster_for). A warp's positions are a slice's, so this decides the order of the sums. */
#define ATT_CLUSTER_WARPS(hd) ((hd) <= 256 ? 16 : 8)

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
 * Measured on the H200 (docs/bench_gpu.md, session 23) against the loop before, which loaded the
 * warp's next position while scoring the current one: the small model's step 7 % faster, E4B's
 * 0.5-1 % (the split form 1.7 %), its verify passes 1-2 %. The positions, their order and the
 * arithmetic are the loop's, so the bits are too (the op test compared them, calls 1-2). */
template <int PER, int W, int NB>
__device__ __forceinline__ void
att_score(float &m, float &l, float *acc, const float *qh, const float *kc, const float *vc, int j0,
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

    float qr[PER];
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        qr[i] = d < hd ? qh[d] : 0.0f;
        acc[i] = 0.0f;
    }
    m = -INFINITY;
    l = 0.0f;
    for (int jb = j; jb < j1; jb += NB * W) {
#pragma unroll
        for (int b = 0; b < NB; b++)
            if (jb + b * W < j1) att_step<PER>(m, l, acc, qr, kr[b], vr[b], hd, lane);
        if (jb + NB * W < j1)
#pragma unroll
            for (int b = 0; b < NB; b++)
                att_load_kv<PER>(kr[b], vr[b], kc, vc, jb + (NB + b) * W, j1, len, kv_dim, kvh, hd,
                                 lane);
    }
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
    float M = -INFINITY;
    for (int w = 0; w < W; w++)
        M = fmaxf(M, sm_m[w]);
    return M;
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
    const int lo = window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
    const int count = p - lo + 1;
    const int per = (count + n_splits - 1) / n_splits;
    j0 = lo + split * per;
    j1 = min(p + 1, j0 + per); /* exclusive */
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* The body of the cluster form (attention.cu, attn_cluster_kernel; sm_90): block (rank, h, t) of
 * a cluster of C (ATT_CLUSTER, or 16 for attention_o.cu) scores slice `rank` of row t's head h,
 * the blocks hand their
 * partials to the blocks that finish them through distributed shared memory, and each block
 * merges its dims [rank dw, (rank + 1) dw) (dw = head_dim / C rounded up). Returns
 * in v, in threads 0 .. dw - 1, dim (the return value) of the head's output; -1 in the others.
 * Every thread of the block must call it (it holds cluster barriers). */
template <int PER, int W, int NB, int C = ATT_CLUSTER>
__device__ __forceinline__ int att_cluster_head(float &v, const float *q, const float *kc,
                                                const float *vc, const int *dpos, int pos0, int len,
                                                int window, int n_heads, int n_kv_heads, int hd) {
    namespace cg = cooperative_groups;
    constexpr int STRIDE = PER * 32; /* floats a warp's accumulator takes in sm_acc */
    __shared__ float sm_m[W], sm_l[W], sm_acc[W * STRIDE];
    __shared__ float recv[ATT_MAXD], recv_m[C], recv_l[C];
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
    att_score<PER, W, NB>(m, l, acc, q + ((size_t)t * n_heads + h) * hd, kc, vc, j0, j1, p0, len,
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

    /* This block's dims from the C slices: the merge kernel's arithmetic (a slice's weight
     * exp(m_s - M), 0 for an empty slice; sums in slice order). dw <= 512 / C = 64 threads. */
    const int d = split * dw + (int)threadIdx.x;
    if ((int)threadIdx.x >= dw || d >= hd) return -1;
    float Mg = -INFINITY;
    for (int s = 0; s < C; s++)
        Mg = fmaxf(Mg, recv_m[s]);
    float L = 0.0f, a = 0.0f;
    for (int s = 0; s < C; s++) {
        const float w = recv_m[s] != -INFINITY ? expf(recv_m[s] - Mg) : 0.0f;
        if (w != 0.0f) {
            L += recv_l[s] * w;
            a += recv[s * dw + threadIdx.x] * w;
        }
    }
    v = a * (1.0f / L);
    return d;
}
#endif

#endif
