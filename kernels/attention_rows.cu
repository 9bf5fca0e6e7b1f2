/* attention_rows.cu: causal attention for a chunk of many rows at once - a prefill or
 * teacher-forcing chunk, more than BACKEND_VERIFY_ROWS rows - over the KV rings that
 * attention.cu's kv_write fills.
 *
 * Why a kernel of its own. attention.cu's forms are built for one row (a decode step) and
 * reproduce it bit for bit over a verify pass of a few rows: a (row, head) is a cluster of 8
 * blocks, or up to 64 slices, whose warps each score a handful of the row's positions, loading
 * each key and value row from L2 for that (row, head) alone. Over a 256-row chunk that is 256 x
 * 8 heads of such units, each reloading the same few hundred keys and values. Here a block takes
 * AR_ROWS rows of one head and walks their positions in tiles of AR_TILE: a tile's keys and values
 * are staged in shared memory once and serve all the block's rows. A prefill row need not
 * reproduce a decode step (only verify passes do: speculation compares decode steps with verify
 * rows), so its sums may run in another order; it stays fp32 throughout, as close to the CPU
 * backend as the other forms (the op test holds it to the same bounds).
 *
 * The work. Block (tile of rows, head h) over KV head h / (n_heads / n_kv_heads); its 8 warps
 * own 2 rows each (rows w and w + 8 of the tile), with their running max m, sum l and
 * accumulator (lane l holding dims 4l .. 4l + 3, 4l + 128 .. of the head: float4 units). The
 * block's rows attend to positions lo(first row) .. p(last row); for each tile of 32 of them:
 *   - the keys go to shared memory (rows hd + 4 floats apart, so that the 16-byte reads of a
 *     quarter warp, one key row a lane, hit eight different bank groups); each thread loads
 *     its share of a tile into registers in one round trip while the block computes on the
 *     previous one (the values during the scores, the next keys during the weighted sum):
 *     loaded a unit at a time between the computations, a 256-token E4B prefill spent 5.1 ms
 *     in this kernel (an H100);
 *   - scores: lane i takes position i of the tile and dots its key with each of the warp's two
 *     rows' q (staged once in shared memory, read as broadcasts): 8 NU partial sums, float4
 *     unit u of the head into sum u % (2 NU), each an fma chain of at most 16 units, then a
 *     tree. (One chain over all the dims drifted from the CPU by up to 1e-4 on the op test's
 *     scores, which reach |100|: the decode kernels' lane split and butterfly do not.)
 *     Positions outside a row's causal window score -infinity;
 *   - the values replace the keys in shared memory (one buffer: the largest head, 512 wide,
 *     keeps the block within the 99 KB an sm_86 / sm_89 block may have);
 *   - each row's online softmax: the tile's max over the lanes (m' = max(m, tile max)), the
 *     accumulator and l rescaled by exp(m - m'), l += the lanes' sum of exp(s_i - m'), and
 *     acc += exp(s_i - m') v_i for i = 0 .. 31 in order (the weight broadcast from lane i).
 * The row's output is acc / l. A row with no position (none of its tile's rows exist) writes
 * nothing.
 *
 * Splits of the positions. A tile of rows attends to up to its last row's position + 1
 * positions (the causal triangle), so over one block a tile the last tiles' blocks set the
 * launch's time while the first ones' multiprocessors idle: a 256-row chunk is 16 tiles a head,
 * the last walking 8 tiles of positions, the first 1. So a tile of rows takes its positions in
 * splits of sp (a multiple of AR_TILE, at least AR_SPLIT_TILES tiles, more where a tile would
 * take over AR_MAX_SPLITS): split s is a block of its own over positions jlo + s sp .., with its
 * own online softmax. A tile of one split writes its rows' outputs; the others write each row's
 * (acc, m, l) to the partials, and attn_rows_merge makes the rows' outputs from them:
 *   M = max_s m_s,  out = sum_s exp(m_s - M) acc_s / sum_s exp(m_s - M) l_s   (s in order).
 * A split in which a row has no position leaves m = -infinity, l = 0: weight 0.
 *
 * Blocks are issued last row tile first: those attend to the most positions, so the short ones
 * fill in behind them. */
#include "kcommon.cuh"
#include "kernels.h"

#define AR_ROWS        16 /* rows a block: 2 a warp */
#define AR_WARPS       8
#define AR_TILE        32 /* positions a tile: one a lane */
#define AR_SPLIT_TILES 2  /* tiles of positions a split takes at least */
#define AR_MAX_SPLITS  8  /* splits a tile of rows takes at most */

/* Blocks a multiprocessor holds at once, as the register allocator is told (NU: the form's head
 * width / 128): 2 where two blocks' shared memory fits (sm_80 up to 256-wide heads, sm_90 all:
 * 164 / 228 KB a multiprocessor), which caps a thread at 128 registers. Left free, the 256-wide
 * form takes 149 and holds one block a multiprocessor: a 256-token E4B prompt's attention
 * (bench/attention_rows_check, an H100, the same run) 3973 us against 3563. The 512-wide form
 * spills at 128 (1.5 KB a thread): 173 us against 164 at position 0, 334 against 368 at
 * position 256, so it takes 2 as well. Four rows a warp instead of two (201 registers) 3751 us.
 * sm_86 / sm_89 (100 KB) hold one block of the wide forms anyway. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define AR_MIN_BLOCKS(NU) 2
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800 && __CUDA_ARCH__ != 860 &&                    \
    __CUDA_ARCH__ != 870 && __CUDA_ARCH__ != 890
#define AR_MIN_BLOCKS(NU) ((NU) <= 2 ? 2 : 1)
#else
#define AR_MIN_BLOCKS(NU) 1
#endif

/* The splits of a tile of rows rows long whose first row is at position pf: its positions
 * window_lo(pf) .. pf + rows - 1 (the causal triangle's part) in spans of sp. */
__host__ __device__ __forceinline__ int ar_splits(int pf, int rows, int window, int sp) {
    return (pf + rows - 1 - window_lo(pf, window)) / sp + 1;
}

/* Shared memory a block needs for heads of width hd: the rows' q, and one tile of keys (padded
 * rows) or values. */
static size_t ar_smem(int hd) {
    return ((size_t)AR_ROWS * hd + (size_t)AR_TILE * (hd + 4)) * sizeof(float);
}

/* A tile's keys or values on their way to shared memory: thread x holds float4 units
 * x, x + 256, ... of the tile's AR_TILE rows of hd / 4 units (at most 4 NU of them), loaded all
 * at once (one memory round trip) while the block computes on the previous buffer. */
template <int NU> struct ar_tile {
    float4 v[4 * NU];

    /* Rows [j0, j0 + AR_TILE) of ring c (KV head kvh); positions past jhi as zeros (never
     * weighted, and a zero keeps 0 * v finite). */
    __device__ __forceinline__ void load(const float *c, int j0, int jhi, int len, size_t kv_dim,
                                         int kvh, int hd) {
        const int units = hd / 4;
#pragma unroll
        for (int k = 0; k < 4 * NU; k++) {
            const int e = threadIdx.x + AR_WARPS * 32 * k, i = e / units, j = j0 + i;
            v[k] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (e < AR_TILE * units && j <= jhi)
                v[k] = k_ld_act(reinterpret_cast<const float4 *>(c + (size_t)(j % len) * kv_dim +
                                                                 (size_t)kvh * hd) +
                                e % units);
        }
    }

    /* Into s, tile row i at s + i stride. */
    __device__ __forceinline__ void store(float *s, int stride, int hd) const {
        const int units = hd / 4;
#pragma unroll
        for (int k = 0; k < 4 * NU; k++) {
            const int e = threadIdx.x + AR_WARPS * 32 * k;
            if (e < AR_TILE * units)
                *reinterpret_cast<float4 *>(s + (size_t)(e / units) * stride + 4 * (e % units)) =
                    v[k];
        }
    }
};

__device__ __forceinline__ float4 fma4(float4 a, float4 b, float4 c) {
    return make_float4(fmaf(a.x, b.x, c.x), fmaf(a.y, b.y, c.y), fmaf(a.z, b.z, c.z),
                       fmaf(a.w, b.w, c.w));
}

/* The sum of N float4 partial sums as a tree (halves, then the four lanes pairwise). */
template <int N> __device__ __forceinline__ float ar_sum(float4 *c) {
#pragma unroll
    for (int h = N / 2; h > 0; h /= 2)
#pragma unroll
        for (int i = 0; i < h; i++)
            c[i] = make_float4(c[i].x + c[i + h].x, c[i].y + c[i + h].y, c[i].z + c[i + h].z,
                               c[i].w + c[i + h].w);
    return (c[0].x + c[0].y) + (c[0].z + c[0].w);
}

/* NU: float4 units of the head a lane holds in its accumulators (hd <= 128 NU * 4). */
template <int NU>
__global__ void __launch_bounds__(AR_WARPS * 32, AR_MIN_BLOCKS(NU))
    attn_rows_kernel(float *out, float *part, const float *q, const float *kc, const float *vc,
                     int n_tok, const int *dpos, int pos0, int len, int window, int n_heads,
                     int n_kv_heads, int hd, int ms, int sp) {
    extern __shared__ float4 ar_smem_raw[];
    float *sq = reinterpret_cast<float *>(ar_smem_raw); /* [AR_ROWS][hd] */
    float *skv = sq + (size_t)AR_ROWS * hd;             /* [AR_TILE][hd + 4] keys, or values */
    const int kstride = hd + 4, units = hd / 4;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tiles = (n_tok + AR_ROWS - 1) / AR_ROWS, split = blockIdx.x % ms;
    const int t0 = (tiles - 1 - (int)blockIdx.x / ms) * AR_ROWS, h = blockIdx.y;
    const int kvh = h / (n_heads / n_kv_heads);
    const size_t kv_dim = (size_t)n_kv_heads * hd;
    k_wait_prior();
    const int p0 = step_pos(dpos, pos0);
    const int rows = n_tok - t0 < AR_ROWS ? n_tok - t0 : AR_ROWS;
    /* the tile's positions jlo .. jhi; this block's split of them, js .. je */
    const int jlo = window_lo(p0 + t0, window), jhi = p0 + t0 + rows - 1;
    const int splits = ar_splits(p0 + t0, rows, window, sp);
    if (split >= splits) return;
    const int js = jlo + split * sp, je = js + sp - 1 < jhi ? js + sp - 1 : jhi;

    for (int e = threadIdx.x; e < AR_ROWS * units; e += AR_WARPS * 32) {
        const int r = e / units, u = e % units;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f); /* rows past the chunk: never weighted */
        if (r < rows)
            v = k_ld_act(
                reinterpret_cast<const float4 *>(q + ((size_t)(t0 + r) * n_heads + h) * hd) + u);
        reinterpret_cast<float4 *>(sq)[e] = v;
    }

    /* this warp's two rows: positions, causal windows, softmax state */
    int p[2], lo[2];
    bool live[2];
    float m[2], l[2];
    float4 acc[2][NU];
#pragma unroll
    for (int k = 0; k < 2; k++) {
        const int r = warp + AR_WARPS * k;
        live[k] = r < rows;
        p[k] = p0 + t0 + r;
        lo[k] = window_lo(p[k], window);
        m[k] = -INFINITY;
        l[k] = 0.0f;
#pragma unroll
        for (int c = 0; c < NU; c++)
            acc[k][c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }

    ar_tile<NU> stage;
    stage.load(kc, js, je, len, kv_dim, kvh, hd);
    for (int j0 = js; j0 <= je; j0 += AR_TILE) {
        __syncthreads(); /* the last tile's values (and, first time, q) are read / written */
        stage.store(skv, kstride, hd);
        __syncthreads();
        stage.load(vc, j0, je, len, kv_dim, kvh, hd); /* in flight during the scores */
        /* scores: lane i, position j0 + i, both rows, each dot in NA float4 partial sums */
        const int j = j0 + lane;
        constexpr int NA = 2 * NU;
        float4 c0[NA], c1[NA];
#pragma unroll
        for (int i = 0; i < NA; i++)
            c0[i] = c1[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float4 *kr = reinterpret_cast<const float4 *>(skv + (size_t)lane * kstride);
        const float4 *q0 = reinterpret_cast<const float4 *>(sq + (size_t)warp * hd);
        const float4 *q1 = reinterpret_cast<const float4 *>(sq + (size_t)(warp + AR_WARPS) * hd);
        for (int u0 = 0; u0 < units; u0 += NA)
#pragma unroll
            for (int i = 0; i < NA; i++)
                if (u0 + i < units) {
                    const float4 kv = kr[u0 + i], a = q0[u0 + i], b = q1[u0 + i];
                    c0[i] = fma4(a, kv, c0[i]);
                    c1[i] = fma4(b, kv, c1[i]);
                }
        const float s[2] = {ar_sum<NA>(c0), ar_sum<NA>(c1)};
        float w[2], corr[2];
#pragma unroll
        for (int k = 0; k < 2; k++) {
            const bool in = live[k] && j >= lo[k] && j <= p[k] && j <= je;
            const float sc = in ? s[k] : -INFINITY;
            const float mn = fmaxf(m[k], warp_max(sc));
            /* mn is -infinity only while no position of the row has come: nothing to add */
            w[k] = in ? expf(sc - mn) : 0.0f;
            corr[k] = mn == -INFINITY ? 1.0f : expf(m[k] - mn);
            l[k] = l[k] * corr[k] + warp_sum(w[k]);
            m[k] = mn;
        }
        __syncthreads(); /* every warp's keys are read */
        stage.store(skv, hd, hd);
        __syncthreads();
        if (j0 + AR_TILE <= je) { /* the next keys, in flight during the weighted sum */
            stage.load(kc, j0 + AR_TILE, je, len, kv_dim, kvh, hd);
        }
        /* acc = acc * corr + sum_i w_i v_i, i in order */
#pragma unroll
        for (int k = 0; k < 2; k++)
#pragma unroll
            for (int c = 0; c < NU; c++) {
                acc[k][c].x *= corr[k], acc[k][c].y *= corr[k];
                acc[k][c].z *= corr[k], acc[k][c].w *= corr[k];
            }
        const float4 *vs = reinterpret_cast<const float4 *>(skv);
        for (int i = 0; i < AR_TILE; i++) {
            const float w0 = __shfl_sync(0xffffffffu, w[0], i),
                        w1 = __shfl_sync(0xffffffffu, w[1], i);
#pragma unroll
            for (int c = 0; c < NU; c++) {
                const int u = lane + 32 * c;
                if (u < units) {
                    const float4 v = vs[(size_t)i * units + u];
                    acc[0][c].x = fmaf(w0, v.x, acc[0][c].x),
                    acc[1][c].x = fmaf(w1, v.x, acc[1][c].x);
                    acc[0][c].y = fmaf(w0, v.y, acc[0][c].y),
                    acc[1][c].y = fmaf(w1, v.y, acc[1][c].y);
                    acc[0][c].z = fmaf(w0, v.z, acc[0][c].z),
                    acc[1][c].z = fmaf(w1, v.z, acc[1][c].z);
                    acc[0][c].w = fmaf(w0, v.w, acc[0][c].w),
                    acc[1][c].w = fmaf(w1, v.w, acc[1][c].w);
                }
            }
        }
    }
#pragma unroll
    for (int k = 0; k < 2; k++) {
        if (!live[k]) continue;
        const size_t rh = (size_t)(t0 + warp + AR_WARPS * k) * n_heads + h;
        if (splits > 1) { /* this split's (acc, m, l), unnormalized, for attn_rows_merge */
            float *o = part + (rh * ms + split) * (hd + 4);
#pragma unroll
            for (int c = 0; c < NU; c++) {
                const int u = lane + 32 * c;
                if (u < units) reinterpret_cast<float4 *>(o)[u] = acc[k][c];
            }
            if (lane == 0) o[hd] = m[k], o[hd + 1] = l[k];
            continue;
        }
        const float inv = 1.0f / l[k];
        float4 *o = reinterpret_cast<float4 *>(out + rh * hd);
#pragma unroll
        for (int c = 0; c < NU; c++) {
            const int u = lane + 32 * c;
            if (u < units)
                o[u] = make_float4(acc[k][c].x * inv, acc[k][c].y * inv, acc[k][c].z * inv,
                                   acc[k][c].w * inv);
        }
    }
}

/* The outputs of the rows whose tile took more than one split, from the splits' partials
 * (the formula in the header). Block (row, head), a thread a float4 unit of the head. */
__global__ void __launch_bounds__(128)
    attn_rows_merge(float *out, const float *part, int n_tok, const int *dpos, int pos0, int window,
                    int n_heads, int hd, int ms, int sp) {
    k_wait_prior();
    const int r = blockIdx.x, h = blockIdx.y, u = threadIdx.x;
    const int p0 = step_pos(dpos, pos0), t0 = r / AR_ROWS * AR_ROWS;
    const int rows = n_tok - t0 < AR_ROWS ? n_tok - t0 : AR_ROWS;
    const int splits = ar_splits(p0 + t0, rows, window, sp);
    if (splits == 1 || u >= hd / 4) return;
    const size_t rh = (size_t)r * n_heads + h;
    const float *pr = part + rh * ms * (hd + 4);
    float mx = -INFINITY;
    for (int s = 0; s < splits; s++)
        mx = fmaxf(mx, k_ld_act(pr + (size_t)s * (hd + 4) + hd));
    float l = 0.0f;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s = 0; s < splits; s++) {
        const float *o = pr + (size_t)s * (hd + 4), ms_ = k_ld_act(o + hd);
        if (ms_ == -INFINITY) continue; /* no position of the row in this split */
        const float c = expf(ms_ - mx);
        l = fmaf(c, k_ld_act(o + hd + 1), l);
        a = fma4(make_float4(c, c, c, c), k_ld_act(reinterpret_cast<const float4 *>(o) + u), a);
    }
    const float inv = 1.0f / l;
    reinterpret_cast<float4 *>(out + rh * hd)[u] =
        make_float4(a.x * inv, a.y * inv, a.z * inv, a.w * inv);
}

typedef void (*attn_rows_fn)(float *, float *, const float *, const float *, const float *, int,
                             const int *, int, int, int, int, int, int, int, int);

/* A launch's splits: sp, the positions a split takes, and the return value, the most splits a
 * tile of rows takes (ms; grid.x is the tiles times ms). From the tiles' spans where the
 * positions are known on the host (dpos NULL), else from the longest span the ring allows. */
static int ar_plan(int n_tok, const int *dpos, int pos0, int len, int window, int *sp) {
    int span = 0;
    if (dpos) {
        const int ctx = window > 0 && window < len ? window : len;
        span = ctx + (n_tok < AR_ROWS ? n_tok : AR_ROWS) - 1;
    } else {
        for (int t0 = 0; t0 < n_tok; t0 += AR_ROWS) {
            const int pl = pos0 + (t0 + AR_ROWS < n_tok ? t0 + AR_ROWS : n_tok) - 1;
            const int sn = pl - window_lo(pos0 + t0, window) + 1;
            span = sn > span ? sn : span;
        }
    }
    const int tiles = (span + AR_TILE - 1) / AR_TILE;
    int per = (tiles + AR_MAX_SPLITS - 1) / AR_MAX_SPLITS;
    per = per < AR_SPLIT_TILES ? AR_SPLIT_TILES : per;
    *sp = per * AR_TILE;
    return (span + *sp - 1) / *sp;
}

static attn_rows_fn attn_rows_for(int hd) {
    return hd <= 128 ? attn_rows_kernel<1> : hd <= 256 ? attn_rows_kernel<2> : attn_rows_kernel<4>;
}

/* Whether the kernel takes heads of width hd on this device: a multiple of 4 (float4 units),
 * at most 512, and its shared memory granted (opt-in past 48 KB; asked once a width class). */
extern "C" int k_attention_rows_supported(int head_dim) {
    static int granted[3] = {-1, -1, -1}; /* 128, 256, 512 */
    if (head_dim <= 0 || head_dim % 4 || head_dim > 512) return 0;
    const int cls = head_dim <= 128 ? 0 : head_dim <= 256 ? 1 : 2;
    if (granted[cls] < 0) {
        const size_t most = ar_smem(cls == 0 ? 128 : cls == 1 ? 256 : 512);
        granted[cls] = cudaFuncSetAttribute(attn_rows_for(head_dim),
                                            cudaFuncAttributeMaxDynamicSharedMemorySize,
                                            (int)most) == cudaSuccess;
        cudaGetLastError(); /* a refusal only means this width stays with attention.cu */
    }
    return granted[cls];
}

extern "C" size_t k_attention_rows_partial(int n_tok, int n_heads, int head_dim) {
    /* sized for the most splits any launch of n_tok rows takes, whatever its positions, so that
     * a later chunk of as many rows further into the sequence (a second turn) does not grow it:
     * a scratch that grows drops the captured graphs */
    return n_tok > 0 ? (size_t)n_tok * n_heads * AR_MAX_SPLITS * (head_dim + 4) * sizeof(float) : 0;
}

extern "C" double k_attention_rows_bytes(int n_tok, int pos0, int len, int window, int n_heads,
                                         int head_dim) {
    int sp;
    ar_plan(n_tok, NULL, pos0, len, window, &sp);
    double kv_rows = 0, parts = 0; /* key + value rows the blocks load (positions past a
                                      block's last row are zeros, not loads); partials */
    for (int t0 = 0; t0 < n_tok; t0 += AR_ROWS) {
        const int pf = pos0 + t0, rows = n_tok - t0 < AR_ROWS ? n_tok - t0 : AR_ROWS;
        const int splits = ar_splits(pf, rows, window, sp);
        kv_rows += (double)(pf + rows - window_lo(pf, window));
        if (splits > 1) parts += (double)rows * splits; /* written once, read once */
    }
    return (kv_rows * 2.0 * n_heads + 2.0 * n_tok * n_heads) * head_dim * sizeof(float) +
           parts * 2.0 * n_heads * (head_dim + 4) * sizeof(float);
}

extern "C" void k_attention_rows(cudaStream_t s, float *out, float *partial, const float *q,
                                 const float *kc, const float *vc, int n_tok, const int *dpos,
                                 int pos0, int len, int window, int n_heads, int n_kv_heads,
                                 int head_dim) {
    if (n_tok <= 0) return;
    if (!k_attention_rows_supported(head_dim) || n_kv_heads <= 0 || n_heads % n_kv_heads) {
        fprintf(stderr, "%s:%d: attention over rows: head_dim %d, %d heads over %d kv heads\n",
                __FILE__, __LINE__, head_dim, n_heads, n_kv_heads);
        exit(1);
    }
    int sp;
    const int ms = ar_plan(n_tok, dpos, pos0, len, window, &sp);
    if (ms > 1 && !partial) {
        fprintf(stderr, "%s:%d: attention over rows: %d splits a tile and no partials\n", __FILE__,
                __LINE__, ms);
        exit(1);
    }
    const dim3 grid((n_tok + AR_ROWS - 1) / AR_ROWS * ms, n_heads);
    k_launch_ex(attn_rows_for(head_dim), grid, dim3(AR_WARPS * 32), 0, ar_smem(head_dim), s, out,
                partial, q, kc, vc, n_tok, dpos, pos0, len, window, n_heads, n_kv_heads, head_dim,
                ms, sp);
    K_CHECK_LAUNCH();
    if (ms > 1) {
        k_launch(attn_rows_merge, dim3(n_tok, n_heads), dim3(128), s, out, (const float *)partial,
                 n_tok, dpos, pos0, window, n_heads, head_dim, ms, sp);
        K_CHECK_LAUNCH();
    }
}
