/* attention_o.cu: the cluster form of the decode attention (attention.cu) with the o projection
 * taken by heads inside it, and the same product alone for chunks of rows.
 *
 * Why. In a decode step the o projection (hidden x n_heads head_dim: 10.5 MB of bf16 on E4B's
 * sliding layers) was its own kernel after the attention: one more kernel boundary, and the
 * memory system nearly idle while the attention walks its chain of latencies (load q and the
 * keys, score, merge through the cluster). Here each block of the attention's cluster - which
 * after the merge holds dims [r dw, (r + 1) dw) of its head's output, dw = head_dim / 8 -
 * multiplies them by the same dw columns of o. o is held in tiles of dw columns, tile-major
 * (k_attention_o_tile), so a block's slice (hidden rows of dw bf16: 160 KB on E4B) is one
 * contiguous piece, which the copy engine brings into the block's shared memory when the block
 * starts, before it waits for the kernel before it: those weights stream under the q / k / v
 * tail and the attention instead of after them. The cluster's blocks then add their products
 * through distributed shared memory (block q owns rows [q rp, (q + 1) rp)), in rank order, and
 * write one partial vector per head: o_part[t][h][hidden]. k_norm_add_norm_parts adds the heads, in
 * head order, before the norm that follows o in every layer.
 *
 * Bits. Row i of row t's projection is sum_h (sum_r (sum_k w[i][h hd + r dw + k] a[t][h][r dw +
 * k])) where the innermost sum is oh_dot's: G lanes a row, each a chain of fmaf over its 8 (or 4)
 * elements in order, then the G lanes added by xor shuffles. The attention's own bits are
 * attn_cluster_kernel's (att_cluster_head, the same warps). The product kernel for chunks
 * (o_heads_kernel: prefill chunks and speculative verify passes, which must reproduce decoding
 * bit for bit) computes exactly that sum from the weights in memory, once a chunk of rows. */
#include "attention.cuh"
#include "bulk.cuh"

namespace cg = cooperative_groups;

#define OH_TOK     8   /* rows (tokens) o_heads_kernel multiplies per pass over its weights */
#define OH_THREADS 512 /* o_heads_kernel's block */
#define OH_SMEM    (200 * 1024) /* dynamic shared memory either kernel may ask for, at most */

/* Lanes a weight row of dw bf16 takes in the product (16 bytes a lane), and its elements a
 * lane. */
template <int DW> struct oh_shape {
    static constexpr int G = DW >= 8 ? DW / 8 : 1;
    static constexpr int E = DW / G;
};

/* The E weights of lane g of a row, as fp32 (src: the row's dw bf16, 16-byte aligned, shared or
 * global memory). */
template <int DW>
__device__ __forceinline__ void oh_weights(const __nv_bfloat16 *src, int g, float *w) {
    constexpr int E = oh_shape<DW>::E;
    if constexpr (E == 8) {
        unpack16<__nv_bfloat16>(reinterpret_cast<const uint4 *>(src)[g], w);
    } else {
        static_assert(E == 4, "rows of 4 or a multiple of 8");
        const uint2 u = reinterpret_cast<const uint2 *>(src)[g];
        w[0] = __uint_as_float(u.x << 16);
        w[1] = __uint_as_float(u.x & 0xffff0000u);
        w[2] = __uint_as_float(u.y << 16);
        w[3] = __uint_as_float(u.y & 0xffff0000u);
    }
}

/* A row's dot with the head slice a (dw floats): every lane of the row's group gets it. All 32
 * lanes of the warp must call it (the shuffles). */
template <int DW> __device__ __forceinline__ float oh_dot(const float *w, const float *a, int g) {
    constexpr int G = oh_shape<DW>::G, E = oh_shape<DW>::E;
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < E; k++)
        s = fmaf(w[k], a[g * E + k], s);
#pragma unroll
    for (int o = 1; o < G; o <<= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
/* Rows 0 .. rows - 1 of this block's product: w(i) . a for each, stored at
 * recv[rank rp + i % rp] of block i / rp of the cluster (its rows). Every thread calls it;
 * the trips are the same for every warp (the shuffles). */
template <int DW, typename WRow>
__device__ __forceinline__ void oh_product(WRow wrow, const float *a, int rows, int rp, float *recv,
                                           int rank, cg::cluster_group &cluster) {
    constexpr int G = oh_shape<DW>::G, E = oh_shape<DW>::E;
    const int g = (int)threadIdx.x % G, per_pass = (int)blockDim.x / G;
    for (int i0 = 0; i0 < rows; i0 += per_pass) {
        const int i = i0 + (int)threadIdx.x / G;
        float w[E];
        if (i < rows)
            oh_weights<DW>(wrow(i), g, w);
        else
#pragma unroll
            for (int k = 0; k < E; k++)
                w[k] = 0.0f;
        const float s = oh_dot<DW>(w, a, g);
        if (i < rows && g == 0) cluster.map_shared_rank(recv, i / rp)[rank * rp + i % rp] = s;
    }
}

/* This block's rows [rank rp, (rank + 1) rp) of the head's projection: the C blocks' products
 * for them, in rank order. */
template <int C>
__device__ __forceinline__ void oh_finish(float *dst, const float *recv, int rows, int rp,
                                          int rank) {
    for (int j = threadIdx.x; j < rp && rank * rp + j < rows; j += blockDim.x) {
        float s = recv[j];
        for (int r = 1; r < C; r++)
            s += recv[r * rp + j];
        dst[rank * rp + j] = s;
    }
}
#endif

/* One row (a decode step): attn_cluster_kernel's attention of head h, then its product with
 * the block's slice of o. Dynamic shared memory: the slice (rows x DW bf16), then the
 * cluster's products of this block's rows (C x rp floats). */
template <int PER, int W, int NB, int DW, int C>
__global__ void __launch_bounds__(W * 32)
    attn_o_kernel(float *out, float *o_part, const float *q, const float *kc, const float *vc,
                  const int *dpos, int pos0, int len, int window, int n_heads, int n_kv_heads,
                  int hd, const __nv_bfloat16 *wo, int rows, unsigned chunk) {
    k_launch_next();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char oh_smem[];
    __shared__ __align__(16) float a_sl[DW];
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank(), h = blockIdx.y, t = blockIdx.z;
    const int rp = (rows + C - 1) / C;
    __nv_bfloat16 *wsl = reinterpret_cast<__nv_bfloat16 *>(oh_smem);
    float *recv = reinterpret_cast<float *>(oh_smem + (size_t)rows * DW * 2);
    /* The block's slice of o, one tile of the tiled copy (k_attention_o_tile): rows x DW bf16,
     * contiguous. It depends on nothing, so thread 0 hands it to the copy engine at once; the
     * attention's loads do not queue behind it (session 31 calls 1 and 3: per-thread copies of
     * the same slice from o's rows, 64 bytes each, before or after those loads, made the
     * kernel 13-16 us against 4.4 + 4.5 for the two kernels apart). */
    __shared__ __align__(8) uint64_t landed;
    const unsigned bytes = (unsigned)rows * DW * 2;
    if (threadIdx.x == 0) {
        mbar_init(&landed, 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        mbar_expect(&landed, bytes);
        /* in pieces of `chunk` bytes, all in flight at once: one transfer of the whole slice
         * ran at about 11 GB/s (session 31 call 5, ncu) */
        const unsigned char *src =
            reinterpret_cast<const unsigned char *>(wo + (size_t)(h * C + rank) * rows * DW);
        for (unsigned off = 0; off < bytes; off += chunk)
            bulk_copy(reinterpret_cast<unsigned char *>(wsl) + off, src + off,
                      bytes - off < chunk ? bytes - off : chunk, &landed);
    }
    float v;
    const int d = att_cluster_head<PER, W, NB, C>(v, q, kc, vc, dpos, pos0, len, window, n_heads,
                                                  n_kv_heads, hd);
    if (d >= 0) {
        out[((size_t)t * n_heads + h) * hd + d] = v;
        a_sl[threadIdx.x] = v;
    }
    __syncthreads(); /* a_sl; the barrier was initialised before att_cluster_head's barriers */
    mbar_wait(&landed, 0);
    oh_product<DW>([&](int i) { return wsl + (size_t)i * DW; }, a_sl, rows, rp, recv, rank,
                   cluster);
    cluster.sync();
    oh_finish<C>(o_part + ((size_t)t * n_heads + h) * rows, recv, rows, rp, rank);
#else
    __trap(); /* never launched before sm_90 (k_attention_o_supported says no there) */
#endif
}

/* Chunks of rows: the product alone, from att (k_attention's out) - block (rank, h) multiplies
 * its slice of o, read from memory once per OH_TOK rows, by each row's dims of head h.
 * Dynamic shared memory: OH_TOK x C x rp floats. */
template <int DW, int C>
__global__ void __launch_bounds__(OH_THREADS)
    o_heads_kernel(float *o_part, const float *att, int n_tok, int n_heads, int hd,
                   const __nv_bfloat16 *wo, int rows) {
    k_launch_next();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char oh_smem[];
    __shared__ __align__(16) float a_sl[OH_TOK][DW];
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = (int)cluster.block_rank(), h = blockIdx.y;
    const int rp = (rows + C - 1) / C;
    float *recv = reinterpret_cast<float *>(oh_smem);
    const __nv_bfloat16 *w0 = wo + (size_t)(h * C + rank) * rows * DW; /* the block's tile */
    constexpr int G = oh_shape<DW>::G, E = oh_shape<DW>::E;
    const int g = (int)threadIdx.x % G, per_pass = (int)blockDim.x / G;
    /* a block may write another's shared memory only once that block has started: arrive
     * now, wait before the first product (as att_cluster_head does) */
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    k_wait_only();
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    for (int t0 = 0; t0 < n_tok; t0 += OH_TOK) {
        const int nt = min(OH_TOK, n_tok - t0);
        for (int e = threadIdx.x; e < nt * DW; e += blockDim.x)
            a_sl[e / DW][e % DW] =
                att[((size_t)(t0 + e / DW) * n_heads + h) * hd + rank * DW + e % DW];
        __syncthreads();
        for (int i0 = 0; i0 < rows; i0 += per_pass) {
            const int i = i0 + (int)threadIdx.x / G;
            float w[E];
            if (i < rows)
                oh_weights<DW>(w0 + (size_t)i * DW, g, w);
            else
#pragma unroll
                for (int k = 0; k < E; k++)
                    w[k] = 0.0f;
            for (int tt = 0; tt < nt; tt++) {
                const float s = oh_dot<DW>(w, a_sl[tt], g);
                if (i < rows && g == 0)
                    cluster.map_shared_rank(recv, i / rp)[(tt * C + rank) * rp + i % rp] = s;
            }
        }
        cluster.sync();
        for (int tt = 0; tt < nt; tt++)
            oh_finish<C>(o_part + ((size_t)(t0 + tt) * n_heads + h) * rows,
                         recv + (size_t)tt * C * rp, rows, rp, rank);
        cluster.sync(); /* every block has read its rows before the next pass stores again */
    }
#else
    __trap();
#endif
}

/* Chunks of rows: the attention alone, in clusters of C - attn_cluster_kernel (attention.cu) for
 * any C, so that a chunk's rows get the bits of attn_o_kernel's. */
template <int PER, int W, int NB, int C>
__global__ void __launch_bounds__(W * 32)
    attn_c_kernel(float *out, const float *q, const float *kc, const float *vc, const int *dpos,
                  int pos0, int len, int window, int n_heads, int n_kv_heads, int hd) {
    k_launch_next();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    float v;
    const int d = att_cluster_head<PER, W, NB, C>(v, q, kc, vc, dpos, pos0, len, window, n_heads,
                                                  n_kv_heads, hd);
    if (d >= 0) out[((size_t)blockIdx.z * n_heads + blockIdx.y) * hd + d] = v;
#else
    __trap();
#endif
}

/* ---- launch ------------------------------------------------------------------------------ */

/* dw, the dims of a head a block of a cluster of c holds: head_dim / c for the head widths whose
 * attention kernel is attn_cluster_kernel<head_dim / 32, 16, 4> (attention.cu), at least 4;
 * 0 otherwise. */
static int oh_dw(int head_dim, int c) {
    const int ok = head_dim == 32 || head_dim == 64 || head_dim == 128 || head_dim == 256;
    return ok && (c == 8 || c == 16) && head_dim / c >= 4 ? head_dim / c : 0;
}

static size_t oh_rp(int rows, int c) {
    return (size_t)(rows + c - 1) / c;
}

static size_t attn_o_smem(int rows, int dw, int c) {
    return (size_t)rows * dw * 2 + c * oh_rp(rows, c) * sizeof(float);
}

static size_t o_heads_smem(int rows, int c) {
    return (size_t)OH_TOK * c * oh_rp(rows, c) * sizeof(float);
}

/* Clusters of 16 are beyond the portable size: the device must place one of attn_o_kernel's
 * (asked of the driver once a process). */
static int oh_has16 = -1;

/* Once per kernel and process (attributes of the function, not of a launch): the shared memory
 * it may ask for, and clusters of more than 8. */
static const void *oh_allowed[32];
static int oh_n_allowed;

template <typename... KArgs> static void oh_allow(void (*kernel)(KArgs...), int c) {
    const void *key = (const void *)kernel;
    for (int i = 0; i < oh_n_allowed; i++)
        if (oh_allowed[i] == key) return;
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, OH_SMEM);
    if (c > 8) cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    if (oh_n_allowed < 32) oh_allowed[oh_n_allowed++] = key;
}

static int oh_fits16(void) {
    if (oh_has16 < 0) {
        auto *fn = attn_o_kernel<8, 16, 4, 16, 16>;
        oh_allow(fn, 16);
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(16, 8);
        cfg.blockDim = dim3(16 * 32);
        cfg.dynamicSmemBytes = attn_o_smem(2560, 16, 16);
        cudaLaunchAttribute a = k_cluster_attr(16);
        cfg.attrs = &a;
        cfg.numAttrs = 1;
        int n = 0;
        oh_has16 = cudaOccupancyMaxActiveClusters(&n, fn, &cfg) == cudaSuccess && n > 0;
        cudaGetLastError(); /* a refused query only means no clusters of 16 */
    }
    return oh_has16;
}

extern "C" int k_attention_o_supported(int n_heads, int head_dim, int rows, int cluster) {
    const int dw = oh_dw(head_dim, cluster);
    return dw > 0 && n_heads >= 1 && n_heads <= K_NORM_MAX_PARTS && rows >= 1 &&
           (size_t)rows * dw * 2 % 16 == 0 && attn_o_smem(rows, dw, cluster) <= OH_SMEM &&
           o_heads_smem(rows, cluster) <= OH_SMEM && k_attention_has_clusters() &&
           (cluster == 8 || oh_fits16());
}

template <int DW, int C>
static void attention_o_launch(cudaStream_t s, float *out, float *o_part, const float *q,
                               const float *kc, const float *vc, int n_tok, const int *dpos,
                               int pos0, int len, int window, int n_heads, int n_kv_heads,
                               int head_dim, const __nv_bfloat16 *wo, int rows) {
    constexpr int PER = DW * C / 32, W = 16;
    if (n_tok == 1) {
        /* experiment switch (session 31): GEMMA_CUDA_ATTN_O_CHUNK=KiB, the pieces the slice is
         * copied in (default 16) */
        const char *e = getenv("GEMMA_CUDA_ATTN_O_CHUNK");
        const unsigned chunk = (e && atoi(e) > 0 ? (unsigned)atoi(e) : 16u) * 1024u;
        auto *fn = attn_o_kernel<PER, W, 4, DW, C>;
        oh_allow(fn, C);
        k_launch_ex(fn, dim3(C, n_heads, 1), dim3(W * 32), C, attn_o_smem(rows, DW, C), s, out,
                    o_part, q, kc, vc, dpos, pos0, len, window, n_heads, n_kv_heads, head_dim, wo,
                    rows, chunk);
        K_CHECK_LAUNCH();
        return;
    }
    auto *fa = attn_c_kernel<PER, W, 4, C>;
    oh_allow(fa, C);
    k_launch_ex(fa, dim3(C, n_heads, n_tok), dim3(W * 32), C, 0, s, out, q, kc, vc, dpos, pos0, len,
                window, n_heads, n_kv_heads, head_dim);
    K_CHECK_LAUNCH();
    auto *fn = o_heads_kernel<DW, C>;
    oh_allow(fn, C);
    k_launch_ex(fn, dim3(C, n_heads), dim3(OH_THREADS), C, o_heads_smem(rows, C), s, o_part,
                (const float *)out, n_tok, n_heads, head_dim, wo, rows);
    K_CHECK_LAUNCH();
}

extern "C" int k_attention_o_tile(int head_dim, int cluster) {
    return oh_dw(head_dim, cluster);
}

extern "C" void k_attention_o(cudaStream_t s, float *out, float *o_part, const float *q,
                              const float *kc, const float *vc, int n_tok, const int *dpos,
                              int pos0, int len, int window, int n_heads, int n_kv_heads,
                              int head_dim, const void *wo, int rows, int cluster) {
    if (n_tok <= 0) return;
    if (n_kv_heads <= 0 || n_heads % n_kv_heads ||
        !k_attention_o_supported(n_heads, head_dim, rows, cluster)) {
        fprintf(stderr,
                "%s:%d: attention_o: head_dim %d, %d heads over %d kv heads, %d rows, clusters "
                "of %d\n",
                __FILE__, __LINE__, head_dim, n_heads, n_kv_heads, rows, cluster);
        exit(1);
    }
    const __nv_bfloat16 *w = (const __nv_bfloat16 *)wo;
#define OH_CASE(DW, C)                                                                             \
    if (oh_dw(head_dim, cluster) == DW && cluster == C) {                                          \
        attention_o_launch<DW, C>(s, out, o_part, q, kc, vc, n_tok, dpos, pos0, len, window,       \
                                  n_heads, n_kv_heads, head_dim, w, rows);                         \
        return;                                                                                    \
    }
    OH_CASE(4, 8)
    OH_CASE(8, 8)
    OH_CASE(16, 8)
    OH_CASE(32, 8)
    OH_CASE(4, 16)
    OH_CASE(8, 16)
    OH_CASE(16, 16)
#undef OH_CASE
}
