/* kernels.h: the CUDA kernels of the GPU backend, as C-callable launchers.
 *
 * Each family lives in its own .cu file (named below); backend_cuda.c is the only caller
 * in the engine, and tests/kernels checks every one of them against the CPU backend.
 * The launchers only enqueue work on the given stream: none of them synchronises, and
 * none allocates (scratch comes from the caller), so a whole decode step made of them can
 * be captured into a CUDA graph.
 *
 * Conventions:
 *   - activations are fp32; weights are read in their file dtype (kdtype: the same values
 *     as model.h's weight_dtype) and converted to fp32 in registers, fp32 accumulation;
 *   - positions: ops that depend on where the step sits in the sequence take (dpos, pos0)
 *     and use pos0 + *dpos when dpos is non-NULL, else pos0. A captured decode step passes
 *     the device word that the backend refreshes before each replay, which is what makes
 *     the graph independent of the position;
 *   - every launcher with ids or positions reads them from device memory only. */
#ifndef KERNELS_H
#define KERNELS_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { KDT_F32 = 0, KDT_BF16 = 1, KDT_F16 = 2 }; /* = weight_dtype */

/* Launch every kernel with programmatic dependent launch (sm_90+: each kernel's launch overlaps
 * its predecessor's tail, and the kernel waits for it before touching memory). Off by default;
 * the backend turns it on where the device has it. */
void k_set_pdl(int on);

/* Profiling only (bench/decode_profile, DECODE_PROFILE_SKIP): kernel families whose launches
 * are left out, so that a step's time without them shows what they cost on its critical path.
 * Their outputs are left stale - the results are wrong while any bit is set. Never set by the
 * engine; 0 (the default) launches everything. */
enum {
    K_SKIP_ATTN_SPLIT = 1,  /* attention.cu: the slices */
    K_SKIP_ATTN_MERGE = 2,  /* attention.cu: the merge */
    K_SKIP_NORM_ROPE = 4,   /* rmsnorm.cu: k_norm_rope_store */
    K_SKIP_NORM_ADD = 8,    /* rmsnorm.cu: k_norm_add_norm */
    K_SKIP_RMSNORM = 16,    /* rmsnorm.cu: k_rmsnorm */
    K_SKIP_MATVEC = 32,     /* matvec.cu: every product */
    K_SKIP_ELEMENTWISE = 64 /* elementwise.cu, gelu.cu, rope.cu, kv_write */
};
void k_set_skip(unsigned mask);

/* matvec.cu: out[t][r] = sum_c w[r][c] * x[t][c] for t < n, r < rows. One warp per weight
 * row; 16-byte loads of the row; the row is read once for up to 8 inputs at a time (n == 1
 * is the decode step, small n the verify / prefill pass). */
void k_matvec(cudaStream_t s, float *out, const void *w, int wdtype, const float *x, int rows,
              int cols, int n);

/* matvec.cu, fused form: one launch over up to K_MV_SEGS matrices of the same dtype and cols
 * that read the same x[n][cols] (the backend groups q, k, v and gate, up this way), each with
 * an epilogue:
 *   K_MV_PLAIN      out[t][r] = w[r] . x[t]
 *   K_MV_GELU_PAIR  out_up[t][r] = w_up[r] . x[t]; out[t][r] = gelu_tanh(w[r] . x[t]) * that
 *                   (gate, up and gelu_mul in one pass: what the three ops leave in memory)
 *   K_MV_GELU_MUL   out[t][r] = gelu_tanh(w[r] . x[t]) * mul[t * mul_stride + r]
 * A row's result is the same bits whatever n is; it depends on the shapes of the matrices that
 * share its launch (matvec.cu launch_splits), so a verify pass must group them as decode does. */
#define K_MV_SEGS 4
enum { K_MV_PLAIN = 0, K_MV_GELU_PAIR = 1, K_MV_GELU_MUL = 2 };
typedef struct {
    float *out;       /* [n][rows] */
    const void *w;    /* [rows][cols] */
    int rows;         /* rows of w (and of w_up) */
    int epilogue;     /* K_MV_* */
    const void *w_up; /* K_MV_GELU_PAIR: the up matrix [rows][cols] */
    float *out_up;    /* K_MV_GELU_PAIR: its products [n][rows] */
    const float *mul; /* K_MV_GELU_MUL: the factors, row t at mul + t * mul_stride */
    int mul_stride;
} k_mv_seg;
void k_matvec_multi(cudaStream_t s, const k_mv_seg *segs, int n_segs, int wdtype, const float *x,
                    int cols, int n);
/* mlp.cu: a Gemma MLP for n inputs x[n][H], weights gate and up [I][H] and down stored
 * transposed (down_t [I][H]): out[t] = down(gelu_tanh(gate x[t]) * up x[t]), leaving
 * h = gelu_tanh(g) * u in h_out[n][I] and u in u_out[n][I], as the separate ops would.
 * A block a multiprocessor owns a slice of I (mlp.cu's header says why); partial holds
 * k_mlp_partial_floats(H, n) floats. Only where k_mlp_supported(H, I, bits, group, form) (sm_90
 * and later). form: K_MLP_CORES (mlp.cu, the CUDA cores; bf16, int8 and int4 weights) or
 * K_MLP_MMA (mlp_mma.cu, the tensor cores; bf16 only); the two sum in different orders, so a
 * backend uses one for every MLP of a dtype. */
enum { K_MLP_CORES = 1, K_MLP_MMA = 2 };
/* The weights of one MLP, all of one kind: bits 16 (bf16: k_transpose16 makes down_t), or 8 / 4
 * (matvec_q.h's layout for gate and up, with their scales [I][H / group]; down_t is down's
 * values transposed in that packing, [I][H] values, and its scales transposed,
 * [I / group][H]: quant_transpose in engine/quant.h). */
typedef struct {
    int bits, group; /* 16, 8 or 4; int8 / int4: 32, 64 or 128 */
    const void *gate, *up, *down_t;
    const uint16_t *gate_scales, *up_scales, *down_t_scales; /* bf16 bits; NULL for bf16 */
} k_mlp_weights;
/* Inputs a reduction of partials covers: k_mlp works through longer n in chunks of this many, so
 * k_mlp_partial_floats(H, K_MLP_CHUNK) is the most any launch needs. */
#define K_MLP_CHUNK 16
int k_mlp_supported(int H, int I, int bits, int group, int form);
size_t k_mlp_partial_floats(int H, int n);
void k_mlp(cudaStream_t s, float *out, float *h_out, float *u_out, const float *x,
           const k_mlp_weights *w, float *partial, int H, int I, int n, int form);
/* mlp.cu: in [rows][cols] -> out [cols][rows], 16-bit elements. */
void k_transpose16(cudaStream_t s, void *out, const void *in, int rows, int cols);

/* Where the next k_matvec / k_matvec_multi launches put bf16 products (each backend sets its own
 * before its launches): 0 (the default) matvec.cu's kernels on the CUDA cores; 1 or 2 the tensor
 * cores (matvec_mma.cu), every product with 16-byte aligned rows and cols a multiple of 32,
 * decode and verify alike, x split exactly into three bf16 (1) or into two (2: x to 16 bits,
 * faster, further from the CPU's results). The tensor cores sum in another order than the CUDA
 * cores, so the last bits differ. -1 (nothing changed) for any other value. */
int k_matvec_set_mma(int mma);
/* Tests only: products of 2 .. 8 inputs take matvec_rows.cu's kernel in launches of at least
 * this many bytes of weights (the engine keeps the default, 1 MiB: matvec.cu). */
void k_matvec_test_rows_min(size_t bytes);

/* rmsnorm.cu: for each of n_vec vectors of dim: out = x / sqrt(mean(x^2) + eps) (* w when w is
 * non-NULL, w of dtype wdtype). out may equal x. */
void k_rmsnorm(cudaStream_t s, float *out, const float *x, const void *w, int wdtype, int n_vec,
               int dim, float eps);

/* rmsnorm.cu, fused neighbours (backend_cuda.c fuses the ops the forward pass issues in a row):
 * o = rmsnorm(o) * wo; x += o; and, when xn is non-NULL, xn = rmsnorm(x) * wx (wo, wx of dtype
 * wdtype, either may be NULL = no scale). Rows of dim values, n_vec of them. */
void k_norm_add_norm(cudaStream_t s, float *x, float *o, const void *wo, float *xn, const void *wx,
                     int wdtype, int n_vec, int dim, float eps);

/* rmsnorm.cu: what the attention block does to q, k and v after their projections, for up to
 * K_NRS_PARTS tensors in one launch: each vector of dim values (a head) of part p is
 * normalised in place (times w when non-NULL), rotated when inv_freq is non-NULL (vector v of
 * the part is at position pos + v / heads), and stored into the ring cache (row
 * (pos + v / heads) % len, head v % heads) when cache is non-NULL - what k_rmsnorm, k_rope then
 * k_kv_write do (the sum of squares in another order). dim even, dim / 2 <= 1024; every part's w of
 * dtype wdtype. */
#define K_NRS_PARTS 3
typedef struct {
    float *x;              /* [n_vec][dim], normalised in place */
    const void *w;         /* [dim] scale, or NULL */
    const float *inv_freq; /* [dim / 2] RoPE frequencies, or NULL = no rotation */
    float *cache;          /* [len][heads * dim] ring the result is also stored in, or NULL */
    int n_vec;             /* n_tok * heads */
    int heads;             /* vectors per position */
    int len;               /* rows of the ring */
} k_nrs_part;
void k_norm_rope_store(cudaStream_t s, const k_nrs_part *parts, int n_parts, int wdtype, int dim,
                       float eps, const int *dpos, int pos0);

/* rope.cu: rotate-half RoPE in place on x[n_tok][n_heads][head_dim]; row t is at position
 * pos0 (+ *dpos) + t; inv_freq[head_dim / 2] (zeros leave a pair as it is). */
void k_rope(cudaStream_t s, float *x, int n_tok, int n_heads, int head_dim, const int *dpos,
            int pos0, const float *inv_freq);

/* attention.cu: the KV ring and attention over it. */
/* Store src[n_tok][kv_dim] at rows (p0 + t) % len of cache[len][kv_dim]. */
void k_kv_write(cudaStream_t s, float *cache, const float *src, int n_tok, int kv_dim,
                const int *dpos, int pos0, int len);
/* Causal attention (scale 1) for n_tok query rows at positions p0 + t over the rings kc / vc
 * [len][n_kv_heads][head_dim] (head_dim <= 512), window 0 = full context. Split-KV: each
 * (row, head) is cut into slices scored by separate blocks with an online softmax, then merged.
 * n_splits is k_attention_splits's answer for the ring: n > 0, a slices kernel and a merge
 * kernel, partial holding n_tok * n_heads * n_splits * (head_dim + 2) floats; 0, the cluster
 * form (K_ATTN_CLUSTER below: only where k_attention_has_clusters), one kernel, partial unused.
 * Neither depends on the position, so a captured step stays valid as the context grows. */
void k_attention(cudaStream_t s, float *out, const float *q, const float *kc, const float *vc,
                 int n_tok, const int *dpos, int pos0, int len, int window, int n_heads,
                 int n_kv_heads, int head_dim, int n_splits, float *partial);
/* The attention's forms (attention.cu): K_ATTN_SPLIT, a slices kernel and a merge kernel with
 * the partials in memory; or K_ATTN_CLUSTER (sm_90 and later, where a cluster of 8 of its
 * blocks fits: k_attention_has_clusters), which takes rings short enough for it as one kernel
 * whose thread block clusters merge their slices in distributed shared memory. */
enum { K_ATTN_SPLIT = 0, K_ATTN_CLUSTER = 1 };
/* How k_attention should cut a ring of at most max_ctx positions in the given form (see
 * there): 0 for one cluster kernel (the cluster form, for a short enough context; pass
 * K_ATTN_CLUSTER only where k_attention_has_clusters, as k_attention refuses 0 elsewhere), else
 * the slices of the split form. horizon > 0: the sequence attends to at most that many
 * positions, which may make the context short enough for the cluster form (it stays correct
 * past it, only slower); 0: the ring decides. The same for every n_tok, so a row's result is
 * the same decoded alone or in a chunk (a speculative verify pass). */
int k_attention_splits(int form, int max_ctx, int horizon, int n_tok, int n_heads, int head_dim);
/* Which of k_attention_splits's answers a horizon changes, as a class from 0 (none: no horizon,
 * or one past every reach) to K_ATTN_HORIZON_CLASSES - 1: two horizons of one class give every
 * ring and head width the same cut, so a step captured under one stays right under the other. */
#define K_ATTN_HORIZON_CLASSES 8
int k_attention_horizon_class(int horizon);
/* 1 if the current device runs the cluster form, else 0 (asked of the driver once). */
int k_attention_has_clusters(void);
/* The heads a cluster the cluster form takes for n_tok rows of n_heads heads over n_kv_heads
 * (1, 2 or 4: attention.cu, attn_cluster_for), and how many such clusters the device runs at
 * once; 0 without clusters. */
int k_attention_cluster_heads(int head_dim, int n_tok, int n_heads, int n_kv_heads, int *at_once);

/* attention_rows.cu: the same attention for a chunk of many rows (prefill), a block over 16
 * rows of a head and a split of their positions, staging 32 positions' keys and values at a
 * time in shared memory. Its sums run in an order of their own (not a decode step's bits: for
 * chunks that are no verify pass). Only where k_attention_rows_supported(head_dim): a multiple
 * of 4 up to 512 whose shared memory (99 KB at 512) the device grants. partial: scratch of
 * k_attention_rows_partial bytes (enough for any positions of n_tok rows).
 * k_attention_rows_bytes: what a launch reads and writes. */
int k_attention_rows_supported(int head_dim);
size_t k_attention_rows_partial(int n_tok, int n_heads, int head_dim);
void k_attention_rows(cudaStream_t s, float *out, float *partial, const float *q, const float *kc,
                      const float *vc, int n_tok, const int *dpos, int pos0, int len, int window,
                      int n_heads, int n_kv_heads, int head_dim);
double k_attention_rows_bytes(int n_tok, int pos0, int len, int window, int n_heads, int head_dim);

/* gelu.cu: out[r][j] = gelu_tanh(gate[r][j]) * up[r * up_stride + j]. out may equal gate. */
void k_gelu_mul(cudaStream_t s, float *out, const float *gate, const float *up, int rows, int dim,
                int up_stride);

/* embed.cu: out[t][:] = table[ids[t]][:] * scale for t < n (ids in device memory). */
void k_embed(cudaStream_t s, float *out, const void *table, int wdtype, int cols, const int *ids,
             int n, float scale);

/* elementwise.cu */
void k_add(cudaStream_t s, float *out, const float *x, const float *y, size_t n);
void k_scale(cudaStream_t s, float *x, float v, size_t n);
void k_softcap(cudaStream_t s, float *x, size_t n, float cap); /* x = cap * tanh(x / cap) */
/* fp32 x[n] -> two bf16 arrays in dst (2n elements: hi, then lo), hi = x and lo = x - hi rounded
 * to bf16, so hi + lo is x to 2^-17 of |x| (|x| >= 2^-117; elementwise.cu says why); one bf16
 * cuBLAS product over the 2n inputs then multiplies x to within 2^-17 of each |w x|, and k_sum2
 * adds each output's two products: out[i] = y[i] + y[m + i]. */
void k_split2_bf16(cudaStream_t s, void *dst, const float *src, size_t n);
void k_sum2(cudaStream_t s, float *out, const float *y, size_t m);
/* The same for fp16 weights (an int4 matrix times a power of two: matvec_q.h k_dequant_q4_f16):
 * row t of src[n][cols] times 2^ex[t] into two fp16 parts, dst [2][n][cols] (hi, lo), ex[t]
 * chosen from the row's largest magnitude (elementwise.cu says how; x to 2^-23 of each |x|, or
 * 2^-39 of that largest for elements far below it); k_sum2_rows adds each output's two products
 * and scales them back: out[t][r] = (y[i] + y[m + i]) * 2^-(ex[t] + e), i = t rows + r, m = n
 * rows, e the weights' own power of two. ex: n ints of device memory. */
void k_split2_f16_rows(cudaStream_t s, void *dst, int *ex, const float *src, int n, int cols);
void k_sum2_rows(cudaStream_t s, float *out, const float *y, int n, int rows, const int *ex, int e);

/* argmax.cu: *out = index of the largest of x[0..n) (the first on ties, as torch.argmax).
 * Two passes; scratch holds 2 * K_ARGMAX_BLOCKS words. */
#define K_ARGMAX_BLOCKS 128
void k_argmax(cudaStream_t s, const float *x, int n, void *scratch, int *out);
/* out[r] = k_argmax of row r of x[rows][n], every row in one launch pair; scratch holds
 * 2 * K_ARGMAX_BLOCKS * rows words. Row r's result equals k_argmax's on that row. */
void k_argmax_rows(cudaStream_t s, const float *x, int n, int rows, void *scratch, int *out);

/* draft_head.cu: the MTP drafter's centroid-masked greedy head (assistant.h). From the centroid
 * scores cscores[n_centroids], the top_k clusters (descending, ties to the lower index) go to
 * work[0..top_k); logits[j * per + t] = head[c_j * per + t] . x[cols] for their tokens (head:
 * the lm_head rows in cluster order, [n_centroids * per][cols] of dtype wdtype), and *id gets
 * ordering[c_j * per + t] of the highest logit (ties to the smaller token id). id, work,
 * ordering: device memory; work holds K_DRAFT_WORK(top_k) words, 8-byte aligned. */
#define K_DRAFT_WORK(top_k) ((((top_k) + 1) & ~1) + 3)
void k_draft_head(cudaStream_t s, int *id, int *work, float *logits, const float *cscores,
                  int n_centroids, int top_k, const void *head, int wdtype, int cols, int per,
                  const int *ordering, const float *x);

#ifdef __cplusplus
}
#endif

#endif
