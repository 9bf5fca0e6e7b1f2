/* draft_head.cu: the MTP drafter's centroid-masked greedy head on the device (assistant.h).
 *
 * The drafter scores its vocabulary in two stages: a linear layer gives one score per cluster
 * of tokens (the centroid scores, an ordinary matvec done before this), the top K clusters are
 * kept, and exact logits are computed only for the tokens of those clusters. On the host that
 * meant downloading the centroid scores, sorting them, launching K small matvecs and
 * downloading again: two round trips per drafted token. Here it is two kernels and no host at
 * all, so a chain of draft steps can be captured as one CUDA graph:
 *
 *   draft_topk    one warp per cluster counts the clusters that beat it (a higher score, or
 *                 an equal score and a lower index): that count is its rank, and ranks below
 *                 K write the cluster into work[rank]. The order is exactly the host's
 *                 top_clusters() (descending, ties to the lower index).
 *   draft_logits  one warp per kept token row: logits[j * per + t] = head[c_j * per + t] . x.
 *                 The best (logit, token id) of each block goes into one 64-bit word with
 *                 atomicMax; the key orders by logit and then by the smaller id (the host's
 *                 better()). The last block to finish turns the word into the token id.
 *
 * work (device words): [0, K) the chosen clusters; then, 8-byte aligned, the running best
 * (64 bits) and the count of finished blocks. draft_topk resets both for each call, and a
 * block of draft_logits starts only after draft_topk has finished (stream order; k_wait_prior
 * under programmatic dependent launch). */
#include "kcommon.cuh"

#define DH_WARPS 8 /* warps per block, both kernels */

/* Where the running best and the block counter sit in work. */
__host__ __device__ static inline int dh_key_word(int top_k) {
    return (top_k + 1) & ~1;
}

/* (logit, id) as one orderable 64-bit key: larger logit first, then smaller id. -0 counts as
 * +0 (the two compare equal on the host too); NaN never wins (key 0, below every real one). */
__device__ __forceinline__ unsigned long long dh_key(float v, int id) {
    if (v != v) return 0ull;
    unsigned u = __float_as_uint(v == 0.0f ? 0.0f : v);
    u = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
    return ((unsigned long long)u << 32) | (unsigned long long)(0xffffffffu - (unsigned)id);
}

__global__ void __launch_bounds__(DH_WARPS * 32)
    draft_topk_kernel(int *work, const float *cscores, int n_centroids, int top_k) {
    k_wait_prior();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int c = blockIdx.x * DH_WARPS + warp;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const int kw = dh_key_word(top_k);
        *reinterpret_cast<unsigned long long *>(work + kw) = 0ull;
        work[kw + 2] = 0;
    }
    if (c >= n_centroids) return;
    const float sc = cscores[c];
    int rank = 0;
    for (int o = lane; o < n_centroids; o += 32) {
        const float so = cscores[o];
        rank += so > sc || (so == sc && o < c);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        rank += __shfl_xor_sync(0xffffffffu, rank, o);
    if (lane == 0 && rank < top_k) work[rank] = c;
}

/* One warp per kept token row. VEC: 16-byte loads of the head row (cols a multiple of the
 * vector width, head and x 16-byte aligned). */
template <typename T, bool VEC>
__global__ void __launch_bounds__(DH_WARPS * 32)
    draft_logits_kernel(int *id, int *work, float *logits, const T *__restrict__ head,
                        const int *__restrict__ ordering, const float *x, int cols, int per,
                        int top_k) {
    k_wait_prior();
    __shared__ unsigned long long best[DH_WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int r = blockIdx.x * DH_WARPS + warp, n_rows = top_k * per;
    unsigned long long key = 0ull;
    if (r < n_rows) {
        const int hr = work[r / per] * per + r % per; /* the row in cluster order */
        const T *w = head + (size_t)hr * cols;
        float acc = 0.0f;
        if (VEC) {
            constexpr int V = vec16<T>::n;
            for (int c = lane * V; c < cols; c += 32 * V) {
                float wf[V];
                load16(w + c, wf);
                const float4 *xp = reinterpret_cast<const float4 *>(x + c);
#pragma unroll
                for (int q = 0; q < V / 4; q++) {
                    const float4 xv = k_ld_act(xp + q);
                    acc += wf[4 * q] * xv.x + wf[4 * q + 1] * xv.y + wf[4 * q + 2] * xv.z +
                           wf[4 * q + 3] * xv.w;
                }
            }
        } else {
            for (int c = lane; c < cols; c += 32)
                acc += to_f32(w[c]) * x[c];
        }
        acc = warp_sum(acc);
        if (lane == 0) logits[r] = acc;
        key = dh_key(acc, ordering[hr]);
    }
    if (lane == 0) best[warp] = key;
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned long long *gbest = reinterpret_cast<unsigned long long *>(work + dh_key_word(top_k));
    int *done = work + dh_key_word(top_k) + 2;
    unsigned long long b = best[0];
    for (int i = 1; i < DH_WARPS; i++)
        b = best[i] > b ? best[i] : b;
    if (b) atomicMax(gbest, b);
    __threadfence(); /* our best is in before we count ourselves finished */
    if (atomicAdd(done, 1) != (int)gridDim.x - 1) return;
    /* The last block: every other block's best is in. */
    __threadfence();
    b = atomicAdd(gbest, 0ull);
    /* All logits NaN (no key): the first kept token, a valid id that the target will reject. */
    *id = b ? (int)(0xffffffffu - (unsigned)(b & 0xffffffffull)) : ordering[work[0] * per];
}

template <typename T>
static void launch_logits(cudaStream_t s, int *id, int *work, float *logits, const void *head,
                          const int *ordering, const float *x, int cols, int per, int top_k) {
    const T *h = (const T *)head;
    const bool vec = cols % vec16<T>::n == 0 && cols % 4 == 0 && ((uintptr_t)head & 15) == 0 &&
                     ((uintptr_t)x & 15) == 0;
    const dim3 grid(k_blocks((size_t)top_k * per, DH_WARPS)), block(DH_WARPS * 32);
    if (vec)
        k_launch(draft_logits_kernel<T, true>, grid, block, s, id, work, logits, h, ordering, x,
                 cols, per, top_k);
    else
        k_launch(draft_logits_kernel<T, false>, grid, block, s, id, work, logits, h, ordering, x,
                 cols, per, top_k);
}

extern "C" void k_draft_head(cudaStream_t s, int *id, int *work, float *logits,
                             const float *cscores, int n_centroids, int top_k, const void *head,
                             int wdtype, int cols, int per, const int *ordering, const float *x) {
    if (n_centroids <= 0 || top_k <= 0 || top_k > n_centroids || per <= 0 || cols <= 0) {
        fprintf(stderr, "%s:%d: draft_head: %d clusters, top %d, %d tokens each, %d columns\n",
                __FILE__, __LINE__, n_centroids, top_k, per, cols);
        exit(1);
    }
    k_launch(draft_topk_kernel, dim3(k_blocks((size_t)n_centroids, DH_WARPS)), dim3(DH_WARPS * 32),
             s, work, cscores, n_centroids, top_k);
    K_CHECK_LAUNCH();
    if (wdtype == KDT_BF16)
        launch_logits<__nv_bfloat16>(s, id, work, logits, head, ordering, x, cols, per, top_k);
    else if (wdtype == KDT_F16)
        launch_logits<__half>(s, id, work, logits, head, ordering, x, cols, per, top_k);
    else
        launch_logits<float>(s, id, work, logits, head, ordering, x, cols, per, top_k);
    K_CHECK_LAUNCH();
}
