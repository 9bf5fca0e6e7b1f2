/* backend_cuda.c: the CUDA backend - the backend table of backend.h filled with the kernels of
 * kernels/ (*.cu) and cuBLAS, plus CUDA-graph replay of whole decode steps and per-kernel
 * profiling.
 *
 * Memory. Activations are fp32 device buffers (cudaMalloc). Weights are copied to the device
 * once, in their file dtype, the first time an op meets them (and the copy is waited for:
 * backend_cuda_weights.c); an MLP's down, which mlp.cu reads transposed, is held that way
 * (cuda_weight_t; also as it is only where products go to cuBLAS). The copies live in a table keyed
 * by the tensor's host data pointer (the model is shared and read-only for decoders, so the backend
 * does not write tensor.dev) and are freed with the backend. The host data of a tensor must
 * therefore stay unchanged while the backend lives - true of mmapped models.
 *
 * Matrix products. n == 1 (the decode step) runs our warp-per-row kernel (matvec.cu), which
 * streams the weights at close to the copy bandwidth; cuBLAS's GEMV path needs the input
 * converted to bf16 first and is measured against it by bench/bench_gpu.sh. Products of up to
 * 17 inputs (CUDA_GEMM_AUTO_ROWS: every speculative verify pass) run our kernels too, so that a
 * verify row reproduces its decode step bit for bit. Bigger ones - prefill chunks - go to
 * cublasGemmEx where their weights are bf16 (GEMMA_CUDA_GEMM=auto, the default since session
 * 44: E4B's prefill 6210 tokens/s against 1360 on our kernels). There x is multiplied exactly:
 * it is split into three bf16 parts (x = hi + mid + lo, mma.cuh split3), one cuBLAS product
 * takes the 3n inputs - the weights are read once, and a prefill chunk's product is bound by
 * reading them - and k_sum3 adds each output's three products, so the result is fp32 x's to
 * rounding, as our kernels' are (until session 44 x was rounded to bf16, which moved the
 * mid-sized model's prefill logits 0.3 from the CPU's). GEMMA_CUDA_GEMM=own keeps every product
 * on our kernels; =cublas sends every bf16 / f16 product to cuBLAS, for comparison (f16 x is
 * rounded to f16: a split would not be exact over fp32's exponent range).
 *
 * Graphs. forward.c brackets a chunk with step_begin / step_end. A step of a given key and
 * number of tokens (one for decode, k + 1 for a speculative verify, at most GRAPH_MAX_ROWS)
 * runs eagerly the first time (which also sizes every scratch buffer), is captured into a CUDA
 * graph the second time, and is replayed from then on. The graph does not depend on the
 * position or the tokens: before each replay the backend copies {pos, tokens} into a device
 * block, and while capturing it hands the kernels that device block instead of the host
 * values (kernels.h: dpos, ids). Re-capturing every step would cost more host time than the
 * step itself (about a thousand nodes); this way a step is one cudaGraphLaunch. When a scratch
 * buffer grows (a longer chunk than any before) or a weight is copied again, every graph is
 * dropped and captured again (they may hold the old address). There is no host synchronisation
 * inside a step: only download and argmax wait (and, in the first forward pass of a run, which
 * is never captured, each weight's first copy: backend_cuda_weights.c).
 *
 * Fusion. The ops forward.c issues in long runs - matmul, rmsnorm, rope, kv_write, gelu_mul,
 * add - are queued rather than launched, and the queue runs them as fewer, larger kernels
 * (backend_cuda_fuse.c: q, k and v as one launch, gate + up as one with the GeLU folded in,
 * norm + residual add + the next norm as one,
 * the q / k / v norms, RoPEs and KV writes as one) when any other op, download, argmax or
 * step_end comes: every function here that is not queued starts with st_flushed. A decode
 * layer that runs 29 kernels unfused runs 12 with every group and the GeLU pair (the
 * default), 13 without the pair, 17 without groups. With programmatic
 * dependent launch (sm_90+, kcommon.cuh) each kernel also starts while its predecessor runs,
 * and a matrix-vector kernel streams its first weights before waiting for it.
 * GEMMA_CUDA_FUSE=0 / GEMMA_CUDA_FUSE_MM=0 / GEMMA_CUDA_PDL=0 turn these off;
 * GEMMA_CUDA_MV_UNROLL=4|8, GEMMA_CUDA_MV_PREFETCH=0|2|4, GEMMA_CUDA_MV_DECODE=lean|lean8|
 * general, GEMMA_CUDA_MV_GRID=blocks|persist|N and GEMMA_CUDA_MV_BLOCK_WARPS=auto|8|4|2 tune
 * the matrix-vector kernel (kernels.h: k_mv_tuning; none of them changes a result bit), and
 * GEMMA_CUDA_MV_SPLIT=N picks the old
 * split-K rule (about N blocks per multiprocessor; a row's sum order changes with it);
 * GEMMA_CUDA_MV_MMA=1|2 puts the bf16 products on the tensor cores (matvec_mma.cu);
 * GEMMA_CUDA_ATTN=split|cluster picks the attention's form (attention.cu). All
 * switches are read by backend_cuda_env.c (tested without a GPU) and listed in backend_cuda.h.
 *
 * Profiling. GEMMA_CUDA_PROFILE=1 times every op with a pair of cudaEvents (graphs are off
 * then, and every op waits for its own end, so the total is slower than an unprofiled run but
 * each family's share is right) and prints, per kernel family, calls, time, bytes moved and
 * achieved GB/s when the backend is destroyed. Bytes are counted always (cheaply) so that
 * backend_cuda_stats can report bytes per decode step without profiling. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "backend_cuda.h"
#include "backend_cuda_env.h"
#include "backend_cuda_fuse.h"
#include "backend_cuda_internal.h"
#include "kernels.h"
#include "speculate.h"
#include "util.h"

#define CUBLAS(call)                                                                               \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) die("cuBLAS: %s: status %d", #call, (int)s_);             \
    } while (0)

/* Kernel families, for the profile. */
enum {
    F_MATVEC,
    F_GEMM,
    F_RMSNORM,
    F_ROPE,
    F_NORM_ROPE_KV, /* the q / k / v norms, RoPEs and KV writes as one kernel */
    F_KV_WRITE,
    F_ATTENTION,
    F_GELU_MUL,
    F_EMBED,
    F_ELEMENTWISE,
    F_SOFTCAP,
    F_ARGMAX,
    F_COPY,
    F_TRANSFER,
    F_DRAFT_HEAD, /* backend_cuda_draft.c */
    F_COUNT
};
static const char *const family_name[F_COUNT] = {
    "matvec (own)", "gemm (cuBLAS)",   "rmsnorm",   "rope",      "norm/rope/kv", "kv_write",
    "attention",    "gelu_mul",        "embed",     "add/scale", "softcap",      "argmax",
    "copy (d2d)",   "upload/download", "draft_head"};

#define MAX_GRAPHS     32 /* (key, rows) pairs of captured steps */
#define GRAPH_MAX_ROWS 16 /* steps of at most this many tokens are captured */

typedef struct {
    int key;               /* the step key (forward.c: what decides the op sequence) */
    int n;                 /* and its tokens */
    long last_use;         /* graph_clock when it was last asked for */
    int seen;              /* eager runs so far */
    cudaGraphExec_t exec;  /* NULL until captured */
    double bytes[F_COUNT]; /* bytes one replay moves, per family (counted while capturing) */
    long calls[F_COUNT];   /* ops one replay runs, per family */
} step_graph;

typedef struct {
    cudaStream_t stream;
    cublasHandle_t cublas;
    int device;
    char device_name[256];
    int gemm_mode; /* 0 own, 1 cublas for every bf16/f16 product, 2 cublas when n > 17 */
    int use_graphs;
    int profile;

    cuda_weights weights; /* each weight's device copy (backend_cuda_weights.c) */

    int *d_ids;              /* [cap_ids] token ids of eager embeds */
    int cap_ids;             /* capacity of d_ids */
    int *d_params;           /* [1 + GRAPH_MAX_ROWS] {pos, tokens} read by captured steps */
    int *h_params;           /* pinned host copy, written before each replay */
    cudaEvent_t params_done; /* the last params upload has been read */
    float *d_partial;        /* attention slices, cap_partial bytes */
    size_t cap_partial;
    float *d_mlp; /* mlp.cu's partial sums, cap_mlp bytes */
    size_t cap_mlp;
    int mlp; /* 0, K_MLP_CORES or K_MLP_MMA for the MLPs they take (GEMMA_CUDA_MLP; sm_90 only) */
    void *d_convert; /* cuBLAS inputs in the weight dtype, cap_convert bytes */
    size_t cap_convert;
    float *d_gemm3; /* a bf16 cuBLAS product's outputs of hi, mid and lo, cap_gemm3 bytes */
    size_t cap_gemm3;
    void *d_argmax; /* argmax scratch: 2 * K_ARGMAX_BLOCKS words + the result */
    int *h_argmax;  /* pinned result */
    float *d_head;  /* matmul_argmax: [n][rows] scores, then its argmax scratch; cap_head bytes */
    size_t cap_head;

    /* the step in progress */
    int mode;              /* 0 eager, 1 capturing */
    int cap_pos;           /* position of the step being captured */
    int cap_n;             /* its tokens */
    const int *cap_tokens; /* its host token array (embeds must pass this one) */
    step_graph *cap;       /* the graph being captured */
    step_graph graphs[MAX_GRAPHS];
    int n_graphs;
    long graph_clock; /* counts graph_for calls (least recently used slot) */

    /* Fusion of neighbouring ops (backend_cuda_fuse.c; GEMMA_CUDA_FUSE=0 turns it off): the
     * queue of ops not launched yet. */
    int fuse, fuse_mm;
    cuda_fuser *fuser;
    int pdl;     /* programmatic dependent launch (kernels.h; GEMMA_CUDA_PDL=0 turns it off) */
    int attn;    /* the attention's form: K_ATTN_SPLIT or K_ATTN_CLUSTER (GEMMA_CUDA_ATTN) */
    int horizon; /* positions the current sequence attends to at most (0: unknown) */
    long attn_split_ops; /* attention ops issued in the split form (not counting replays) */
    long mlp_ops;        /* MLPs issued as one whole-MLP kernel (backend_cuda_fuse.c try_mlp) */
    k_mv_tuning mv; /* the matrix-vector kernel's tuning, set before each op (GEMMA_CUDA_MV_*) */

    /* counters */
    double bytes[F_COUNT];
    long calls[F_COUNT];
    double ms[F_COUNT];
    long decode_steps, replays, captures;
    cudaEvent_t ev0, ev1;
} cuda_state;

static cuda_state *st_of(backend *b) {
    cuda_state *st = (cuda_state *)b->impl;
    return st;
}

/* The state of an op that is not queued: run the queued ops first. */
static cuda_state *st_flushed(backend *b) {
    cuda_fuse_flush(b);
    return (cuda_state *)b->impl;
}

/* ---- accounting ---------------------------------------------------------------------- */

/* Called before an op: starts its timer when profiling. */
static void op_begin(cuda_state *st) {
    /* The launchers' settings are global; two backends in one process keep their own. */
    k_set_pdl(st->pdl);
    k_matvec_set_tuning(&st->mv);
    if (st->profile) CU(cudaEventRecord(st->ev0, st->stream));
}

/* Called after an op of family f that moved `bytes`: counts it, and times it when profiling. */
static void op_end(cuda_state *st, int f, double bytes) {
    st->bytes[f] += bytes;
    st->calls[f]++;
    if (st->mode == 1 && st->cap) {
        st->cap->bytes[f] += bytes;
        st->cap->calls[f]++;
    }
    if (st->profile) {
        CU(cudaEventRecord(st->ev1, st->stream));
        CU(cudaEventSynchronize(st->ev1));
        float ms = 0;
        CU(cudaEventElapsedTime(&ms, st->ev0, st->ev1));
        st->ms[f] += ms;
    }
}

/* Position arguments for a kernel: the host value when eager; while capturing, the device
 * word plus the offset from the captured step's position. */
static const int *pos_dev(cuda_state *st, int pos0, int *pos_arg) {
    if (st->mode == 1) {
        *pos_arg = pos0 - st->cap_pos;
        return st->d_params;
    }
    *pos_arg = pos0;
    return NULL;
}

/* ---- weights (backend_cuda_weights.c) ------------------------------------------------ */

static void graphs_drop(cuda_state *st);

static void graphs_drop_cb(void *st) {
    graphs_drop((cuda_state *)st);
}

static const void *weight_dev_as(cuda_state *st, const tensor *w, int transposed) {
    return cuda_weights_get(&st->weights, st->stream, w, transposed, st->mode == 1, graphs_drop_cb,
                            st);
}

static const void *weight_dev(cuda_state *st, const tensor *w) {
    return weight_dev_as(st, w, 0);
}

/* ---- scratch ------------------------------------------------------------------------- */

/* Grow a device scratch buffer to at least `bytes` (never inside a capture: the eager run of
 * the same step has sized it already). Every captured step goes (graphs_drop): one may hold
 * the old buffer. */
static void *scratch(cuda_state *st, void **buf, size_t *cap, size_t bytes) {
    if (bytes <= *cap) return *buf;
    if (st->mode == 1) die("CUDA scratch grew inside a captured graph (%zu bytes)", bytes);
    CU(cudaStreamSynchronize(st->stream)); /* the old buffer may still be in use */
    graphs_drop(st);
    if (*buf) CU(cudaFree(*buf));
    CU(cudaMalloc(buf, bytes));
    *cap = bytes;
    return *buf;
}

/* ---- buffers ------------------------------------------------------------------------- */

static float *cu_alloc(backend *b, size_t n) {
    cuda_state *st = st_flushed(b);
    float *p = NULL;
    cudaError_t e = cudaMalloc((void **)&p, (n ? n : 1) * sizeof(float));
    if (e != cudaSuccess)
        die("CUDA: cannot allocate %zu floats on the device: %s", n, cudaGetErrorString(e));
    CU(cudaMemsetAsync(p, 0, (n ? n : 1) * sizeof(float), st->stream));
    CU(cudaStreamSynchronize(st->stream));
    return p;
}

static void cu_release(backend *b, float *p) {
    st_flushed(b); /* a queued op may still use p */
    if (p) CU(cudaFree(p));
}

static void cu_upload(backend *b, float *dst, const float *src, size_t n) {
    cuda_state *st = st_flushed(b);
    if (!n) return;
    op_begin(st);
    /* From pageable memory the call returns once src is staged, so src may change after it. */
    CU(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyHostToDevice, st->stream));
    op_end(st, F_TRANSFER, (double)n * sizeof(float));
}

static void cu_download(backend *b, float *dst, const float *src, size_t n) {
    cuda_state *st = st_flushed(b);
    if (!n) return;
    op_begin(st);
    CU(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost, st->stream));
    CU(cudaStreamSynchronize(st->stream));
    op_end(st, F_TRANSFER, (double)n * sizeof(float));
}

static void cu_copy(backend *b, float *dst, const float *src, size_t n) {
    cuda_state *st = st_flushed(b);
    if (!n || dst == src) return;
    op_begin(st);
    CU(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, st->stream));
    op_end(st, F_COPY, 2.0 * n * sizeof(float));
}

/* ---- ops ----------------------------------------------------------------------------- */

/* GEMMA_CUDA_GEMM=auto sends a product to cuBLAS only above this many inputs: more than a
 * speculative verify pass ever has (SPEC_MAX_K drafts and the last accepted token), so that
 * every verify pass runs on our kernels and reproduces the decode steps it stands for bit for
 * bit (cuBLAS sums in an order of its own, which may differ with n); only prefill chunks go to
 * cuBLAS. (Until session 23 the bound was 8 inputs, and a verify of 8 drafts or more was not
 * lossless under auto.) GEMMA_CUDA_GEMM=cublas, every product, is for comparison only: its
 * decode steps and verify passes may round differently, so speculation is not lossless there. */
#define CUDA_GEMM_AUTO_ROWS (SPEC_MAX_K + 1)
_Static_assert(CUDA_GEMM_AUTO_ROWS == 17, "the switch's descriptions and the banner say 17");

/* GEMMA_CUDA_GEMM's rule: products of n inputs go to cuBLAS (bf16 / f16 weights only). */
static int gemm_to_cublas(const cuda_state *st, int n) {
    return st->gemm_mode == 1 || (st->gemm_mode == 2 && n > CUDA_GEMM_AUTO_ROWS);
}

/* auto (the default) sends bf16 weights only: their products take fp32 x exactly (three bf16
 * parts); an f16 product would take x rounded to f16, which moved the f16 fixture's prefill
 * logits 0.3 from the CPU's (session 44), so under auto f16 stays on our kernels. =cublas, for
 * comparison, sends both. */
static int use_cublas(const cuda_state *st, const tensor *w, int n) {
    return (w->dtype == DT_BF16 || (w->dtype == DT_F16 && st->gemm_mode == 1)) &&
           gemm_to_cublas(st, n);
}

int cuda_matmul_own(backend *b, const tensor *w, int n) {
    return !use_cublas(st_of(b), w, n);
}

void cuda_matmul_now(backend *b, float *out, const tensor *w, const float *x, int n) {
    cuda_state *st = st_flushed(b);
    const void *wd = weight_dev(st, w);
    const double bytes =
        (double)w->rows * w->cols * dtype_size(w->dtype) + 4.0 * n * w->cols + 4.0 * n * w->rows;
    if (use_cublas(st, w, n)) {
        const int bf16 = w->dtype == DT_BF16, parts = bf16 ? 3 : 1, nn = parts * n;
        const size_t nx = (size_t)n * w->cols;
        void *xh = scratch(st, &st->d_convert, &st->cap_convert, nx * 2 * parts);
        float *y = bf16 ? scratch(st, (void **)&st->d_gemm3, &st->cap_gemm3,
                                  sizeof(float) * parts * n * w->rows)
                        : out;
        op_begin(st);
        if (bf16)
            k_split3_bf16(st->stream, xh, x, nx);
        else
            k_convert(st->stream, xh, w->dtype, x, nx);
        const cudaDataType_t t = bf16 ? CUDA_R_16BF : CUDA_R_16F;
        const float one = 1.0f, zero = 0.0f;
        /* Row-major y[nn][rows] = xh[nn][cols] . w[rows][cols]^T is, column-major,
         * y^T (rows x nn) = w^T^T ... : C = op(A) B with A = w viewed as cols x rows. */
        CUBLAS(cublasGemmEx(st->cublas, CUBLAS_OP_T, CUBLAS_OP_N, w->rows, nn, w->cols, &one, wd, t,
                            w->cols, xh, t, w->cols, &zero, y, CUDA_R_32F, w->rows,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        if (bf16) k_sum3(st->stream, out, y, (size_t)n * w->rows);
        /* plus the parts written and read (2 bytes each), and y written and read (4 bytes each) */
        op_end(st, F_GEMM, bytes + 4.0 * nn * w->cols + (bf16 ? 8.0 * nn * w->rows : 0));
        return;
    }
    op_begin(st);
    k_matvec(st->stream, out, wd, w->dtype, x, w->rows, w->cols, n);
    op_end(st, F_MATVEC, bytes);
}

static void cu_attention(backend *b, float *out, const float *q, const float *kc, const float *vc,
                         int n_tok, int pos0, int len, int window, int n_heads, int n_kv_heads,
                         int head_dim) {
    cuda_state *st = st_flushed(b);
    /* The slices are sized for the longest context this ring can serve, so that the same
     * launch fits every later position (graphs); the form too. */
    const int max_ctx = window > 0 && window < len ? window : len;
    const int splits = k_attention_splits(st->attn, max_ctx, st->horizon, n_tok, n_heads, head_dim);
    st->attn_split_ops += splits > 0;
    const size_t need = (size_t)n_tok * n_heads * splits * (head_dim + 2) * sizeof(float);
    float *partial = scratch(st, (void **)&st->d_partial, &st->cap_partial, need);
    int p;
    const int *dp = pos_dev(st, pos0, &p);
    op_begin(st);
    k_attention(st->stream, out, q, kc, vc, n_tok, dp, p, len, window, n_heads, n_kv_heads,
                head_dim, splits, partial);
    /* Bytes: the keys and values each row reads (the host knows the position even when the
     * kernel takes it from the device), plus q and out. */
    double kv = 0;
    for (int t = 0; t < n_tok; t++) {
        long pp = (long)pos0 + t, lo = window > 0 && pp - window + 1 > 0 ? pp - window + 1 : 0;
        kv += (double)(pp - lo + 1);
    }
    op_end(st, F_ATTENTION,
           kv * 2.0 * head_dim * 4.0 * n_heads / (n_heads / n_kv_heads) +
               8.0 * n_tok * n_heads * head_dim);
}

static void cu_scale(backend *b, float *x, float s, size_t n) {
    cuda_state *st = st_flushed(b);
    op_begin(st);
    k_scale(st->stream, x, s, n);
    op_end(st, F_ELEMENTWISE, 8.0 * n);
}

static void cu_embed(backend *b, float *out, const tensor *table, const int *ids, int n, float s) {
    cuda_state *st = st_flushed(b);
    const void *td = weight_dev(st, table);
    const int *dids;
    if (st->mode == 1) {
        /* Captured: the ids are the step's tokens, which each replay stores at d_params + 1. */
        if (ids != st->cap_tokens || n != st->cap_n)
            die("embed inside a captured step must take its tokens");
        dids = st->d_params + 1;
        op_begin(st);
    } else {
        if (n > st->cap_ids) {
            CU(cudaStreamSynchronize(st->stream));
            if (st->d_ids) CU(cudaFree(st->d_ids));
            st->cap_ids = n < 64 ? 64 : n;
            CU(cudaMalloc((void **)&st->d_ids, (size_t)st->cap_ids * sizeof(int)));
        }
        op_begin(st);
        CU(cudaMemcpyAsync(st->d_ids, ids, (size_t)n * sizeof(int), cudaMemcpyHostToDevice,
                           st->stream));
        dids = st->d_ids;
    }
    k_embed(st->stream, out, td, table->dtype, table->cols, dids, n, s);
    op_end(st, F_EMBED, (double)n * table->cols * (dtype_size(table->dtype) + 4.0));
}

static void cu_softcap(backend *b, float *x, size_t n, float cap) {
    cuda_state *st = st_flushed(b);
    op_begin(st);
    k_softcap(st->stream, x, n, cap);
    op_end(st, F_SOFTCAP, 8.0 * n);
}

static int cu_argmax(backend *b, const float *x, int n) {
    cuda_state *st = st_flushed(b);
    int *res = (int *)st->d_argmax + 2 * K_ARGMAX_BLOCKS;
    op_begin(st);
    k_argmax(st->stream, x, n, st->d_argmax, res);
    CU(cudaMemcpyAsync(st->h_argmax, res, sizeof(int), cudaMemcpyDeviceToHost, st->stream));
    CU(cudaStreamSynchronize(st->stream));
    op_end(st, F_ARGMAX, 4.0 * n);
    return *st->h_argmax;
}

/* The fused greedy head (backend.h) for the n rows of a speculative verify: the product and
 * the softcap as the separate ops would run them (so every pick equals argmax's over what
 * matmul + softcap write), then every row's argmax in one launch pair, one download and one
 * host synchronisation instead of one per row. The scores go to a scratch, not the caller's
 * buffer: the head's rows are many (262144 on E4B) but n is at most a verify's k + 1. */
static void cu_matmul_argmax(backend *b, int *out, const tensor *w, const float *x, int n,
                             float cap) {
    cuda_state *st = st_flushed(b);
    const size_t cells = (size_t)n * w->rows, words = (size_t)2 * K_ARGMAX_BLOCKS * n + n;
    float *s = scratch(st, (void **)&st->d_head, &st->cap_head,
                       cells * sizeof(float) + words * sizeof(int));
    int *am = (int *)(s + cells), *res = am + 2 * K_ARGMAX_BLOCKS * n;
    b->matmul(b, s, w, x, n);
    if (cap > 0) b->softcap(b, s, cells, cap);
    st = st_flushed(b);
    op_begin(st);
    k_argmax_rows(st->stream, s, w->rows, n, am, res);
    CU(cudaMemcpyAsync(out, res, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost, st->stream));
    CU(cudaStreamSynchronize(st->stream));
    op_end(st, F_ARGMAX, 4.0 * cells);
}

/* ---- graphs -------------------------------------------------------------------------- */

/* The graph of the steps with this key and this many tokens. When every slot is taken, the
 * slot least recently used among those never captured (a prompt's tail chunk, a drafter that
 * is gone) is given to the new key; captured graphs keep their slots, so keys cannot evict
 * each other in turn. NULL when all are captured (such steps run eagerly). */
static step_graph *graph_for(cuda_state *st, int key, int n) {
    st->graph_clock++;
    for (int i = 0; i < st->n_graphs; i++)
        if (st->graphs[i].key == key && st->graphs[i].n == n) {
            st->graphs[i].last_use = st->graph_clock;
            return &st->graphs[i];
        }
    step_graph *g = NULL;
    if (st->n_graphs < MAX_GRAPHS)
        g = &st->graphs[st->n_graphs++];
    else
        for (int i = 0; i < MAX_GRAPHS; i++)
            if (!st->graphs[i].exec && (!g || st->graphs[i].last_use < g->last_use))
                g = &st->graphs[i];
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    g->last_use = st->graph_clock;
    g->key = key;
    g->n = n;
    return g;
}

/* Forget every captured step (a buffer they use has moved): the next steps of each key run
 * eagerly once and are captured again. The caller has synchronised the stream. */
static void graphs_drop(cuda_state *st) {
    for (int i = 0; i < st->n_graphs; i++)
        if (st->graphs[i].exec) CU(cudaGraphExecDestroy(st->graphs[i].exec));
    st->n_graphs = 0;
}

/* Steps of n tokens are captured when n is at most GRAPH_MAX_ROWS and, for n > 1, every product
 * of the step runs our own kernels: a verify's products are not sent to cuBLAS inside a capture
 * (decode steps with GEMMA_CUDA_GEMM=cublas are captured, as before). */
static int graph_rows_ok(const cuda_state *st, int n) {
    return n <= GRAPH_MAX_ROWS && (n == 1 || !gemm_to_cublas(st, n));
}

/* Store {pos, tokens} where captured kernels read them. Pinned memory and an async copy: the
 * event makes sure the previous copy has read h_params before it is overwritten. */
static void params_store(cuda_state *st, const int *tokens, int n, int pos) {
    CU(cudaEventSynchronize(st->params_done));
    st->h_params[0] = pos;
    memcpy(st->h_params + 1, tokens, (size_t)n * sizeof(int));
    CU(cudaMemcpyAsync(st->d_params, st->h_params, (size_t)(n + 1) * sizeof(int),
                       cudaMemcpyHostToDevice, st->stream));
    CU(cudaEventRecord(st->params_done, st->stream));
}

static int cu_step_begin(backend *b, const int *tokens, int n, int pos, int key) {
    cuda_state *st = st_flushed(b);
    st->mode = 0;
    if (n == 1) st->decode_steps++;
    if (!st->use_graphs || st->profile || !graph_rows_ok(st, n)) return 0;
    /* A step captured under one horizon class may cut its attention otherwise than another
     * (k_attention_splits): each class has its own graphs. */
    step_graph *g =
        graph_for(st, key * K_ATTN_HORIZON_CLASSES + k_attention_horizon_class(st->horizon), n);
    if (!g) return 0;
    params_store(st, tokens, n, pos);
    if (g->exec) {
        CU(cudaGraphLaunch(g->exec, st->stream));
        for (int f = 0; f < F_COUNT; f++) {
            st->bytes[f] += g->bytes[f];
            st->calls[f] += g->calls[f];
        }
        st->replays++;
        return 1;
    }
    if (g->seen++ == 0) return 0; /* first time: eager, sizes the scratch buffers */
    memset(g->bytes, 0, sizeof g->bytes);
    memset(g->calls, 0, sizeof g->calls);
    CU(cudaStreamBeginCapture(st->stream, cudaStreamCaptureModeThreadLocal));
    st->mode = 1;
    st->cap = g;
    st->cap_pos = pos;
    st->cap_n = n;
    st->cap_tokens = tokens;
    return 0;
}

static void cu_set_horizon(backend *b, int positions) {
    st_flushed(b)->horizon = positions > 0 ? positions : 0;
}

static void cu_step_end(backend *b) {
    cuda_state *st = st_flushed(b);
    if (st->mode != 1) return;
    cudaGraph_t graph = NULL;
    CU(cudaStreamEndCapture(st->stream, &graph));
    CU(cudaGraphInstantiate(&st->cap->exec, graph, 0));
    CU(cudaGraphDestroy(graph));
    st->mode = 0;
    st->captures++;
    /* Capturing ran nothing: run the step now. */
    CU(cudaGraphLaunch(st->cap->exec, st->stream));
    st->cap = NULL;
    st->cap_tokens = NULL;
}

/* ---- profile ------------------------------------------------------------------------- */

void backend_cuda_stats(backend *b, backend_cuda_counters *c) {
    cuda_state *st = st_flushed(b);
    memset(c, 0, sizeof *c);
    for (int f = 0; f < F_COUNT; f++)
        c->bytes += st->bytes[f];
    c->decode_steps = st->decode_steps;
    c->replays = st->replays;
    c->captures = st->captures;
    c->weight_bytes = st->weights.bytes;
    snprintf(c->device, sizeof c->device, "%s", st->device_name);
    c->attn_form = st->attn;
    c->attn_split_ops = st->attn_split_ops;
    c->mlp_form = st->mlp;
    c->mlp_ops = st->mlp_ops;
}

void backend_cuda_reset_counters(backend *b) {
    cuda_state *st = st_flushed(b);
    CU(cudaStreamSynchronize(st->stream));
    memset(st->bytes, 0, sizeof st->bytes);
    memset(st->calls, 0, sizeof st->calls);
    memset(st->ms, 0, sizeof st->ms);
    st->decode_steps = st->replays = st->captures = st->attn_split_ops = st->mlp_ops = 0;
}

void backend_cuda_profile_print(backend *b, FILE *f) {
    cuda_state *st = st_flushed(b);
    double total_ms = 0, total_bytes = 0;
    for (int i = 0; i < F_COUNT; i++) {
        total_ms += st->ms[i];
        total_bytes += st->bytes[i];
    }
    fprintf(f, "cuda profile (%s): %ld decode steps, %ld graph replays%s\n", st->device_name,
            st->decode_steps, st->replays,
            st->profile ? "" : " (not timed: set GEMMA_CUDA_PROFILE=1 for times)");
    fprintf(f, "  %-16s %10s %12s %8s %14s %10s\n", "family", "calls", "time ms", "share", "bytes",
            "GB/s");
    for (int i = 0; i < F_COUNT; i++) {
        if (!st->calls[i]) continue;
        fprintf(f, "  %-16s %10ld %12.3f %7.1f%% %14.0f %10.1f\n", family_name[i], st->calls[i],
                st->ms[i], total_ms > 0 ? 100.0 * st->ms[i] / total_ms : 0.0, st->bytes[i],
                st->ms[i] > 0 ? st->bytes[i] / (st->ms[i] * 1e6) : 0.0);
    }
    fprintf(f, "  %-16s %10s %12.3f %7.1f%% %14.0f %10.1f\n", "total", "", total_ms, 100.0,
            total_bytes, total_ms > 0 ? total_bytes / (total_ms * 1e6) : 0.0);
}

/* ---- for the other files of the backend (backend_cuda_internal.h) ---------------------- */

const int cuda_family_embed = F_EMBED, cuda_family_draft_head = F_DRAFT_HEAD;
const int cuda_family_matvec = F_MATVEC, cuda_family_rmsnorm = F_RMSNORM, cuda_family_rope = F_ROPE,
          cuda_family_kv_write = F_KV_WRITE, cuda_family_gelu_mul = F_GELU_MUL,
          cuda_family_add = F_ELEMENTWISE, cuda_family_norm_rope_kv = F_NORM_ROPE_KV;

cuda_fuser *cuda_fuser_of(backend *b) {
    return st_of(b)->fuser;
}

const int *cuda_pos(backend *b, int pos0, int *pos_arg) {
    return pos_dev(st_of(b), pos0, pos_arg);
}

const void *cuda_weight(backend *b, const tensor *w) {
    return weight_dev(st_flushed(b), w);
}

const void *cuda_weight_t(backend *b, const tensor *w) {
    return weight_dev_as(st_flushed(b), w, 1);
}

int cuda_mlp_on(backend *b) {
    return st_of(b)->mlp;
}

void cuda_mlp_count(backend *b) {
    st_of(b)->mlp_ops++;
}

float *cuda_mlp_scratch(backend *b, size_t floats) {
    cuda_state *st = st_flushed(b);
    return scratch(st, (void **)&st->d_mlp, &st->cap_mlp, floats * sizeof(float));
}

cudaStream_t cuda_op_begin(backend *b) {
    cuda_state *st = st_flushed(b);
    op_begin(st);
    return st->stream;
}

void cuda_op_end(backend *b, int family, double bytes) {
    op_end(st_of(b), family, bytes);
}

/* ---- life cycle ---------------------------------------------------------------------- */

static void cu_destroy(backend *b) {
    cuda_state *st = st_flushed(b);
    cudaStreamSynchronize(st->stream);
    if (st->profile) backend_cuda_profile_print(b, stderr);
    for (int i = 0; i < st->n_graphs; i++)
        if (st->graphs[i].exec) cudaGraphExecDestroy(st->graphs[i].exec);
    cuda_weights_free(&st->weights);
    cudaFree(st->d_ids);
    cudaFree(st->d_params);
    cudaFreeHost(st->h_params);
    cudaFree(st->d_partial);
    cudaFree(st->d_convert);
    cudaFree(st->d_gemm3);
    cudaFree(st->d_mlp);
    cudaFree(st->d_argmax);
    cudaFreeHost(st->h_argmax);
    cudaFree(st->d_head);
    cudaEventDestroy(st->params_done);
    cudaEventDestroy(st->ev0);
    cudaEventDestroy(st->ev1);
    cublasDestroy(st->cublas);
    cudaStreamDestroy(st->stream);
    cuda_fuser_free(st->fuser);
    free(st);
    free(b);
}

backend *backend_cuda_new(char *err, size_t errlen) {
    int n_dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n_dev);
    if (e != cudaSuccess || n_dev == 0) {
        snprintf(err, errlen, "no CUDA device is usable (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "the driver reports 0 devices");
        return NULL;
    }
    cuda_switches sw;
    if (cuda_switches_from_env(&sw, err, errlen)) return NULL;
    const int gemm_mode = sw.gemm_mode;
    cuda_state *st = xcalloc(1, sizeof *st);
    st->gemm_mode = sw.gemm_mode;
    st->use_graphs = sw.use_graphs;
    st->profile = sw.profile;
    st->fuse = sw.fuse;
    st->fuse_mm = sw.fuse_mm;
    st->pdl = sw.pdl;
    st->mv = sw.mv;
    st->mlp = sw.mlp;
    char grid_name[40] = "blocks";
    if (st->mv.grid < 0)
        snprintf(grid_name, sizeof grid_name, "persist");
    else if (st->mv.grid > 0)
        snprintf(grid_name, sizeof grid_name, "at most %d blocks", st->mv.grid);
    CU(cudaGetDevice(&st->device));
    struct cudaDeviceProp prop;
    CU(cudaGetDeviceProperties(&prop, st->device));
    st->pdl = st->pdl && prop.major >= 9;
    k_set_pdl(st->pdl);
    /* auto: the cluster form wherever the device runs it (attention.cu), else the split form */
    st->attn = sw.attn != CUDA_ATTN_AUTO    ? sw.attn
               : k_attention_has_clusters() ? K_ATTN_CLUSTER
                                            : K_ATTN_SPLIT;
    if (st->attn == K_ATTN_CLUSTER && !k_attention_has_clusters()) {
        snprintf(err, errlen,
                 "environment variable GEMMA_CUDA_ATTN: \"cluster\" needs thread block clusters "
                 "(sm_90 or later, not a share of the GPU that places none), and %s is sm_%d%d",
                 prop.name, prop.major, prop.minor);
        free(st);
        return NULL;
    }
    snprintf(st->device_name, sizeof st->device_name, "%.200s (sm_%d%d)", prop.name, prop.major,
             prop.minor);
    fprintf(
        stderr,
        "cuda: %s, %.1f GB, graphs %s, fusion %s, PDL %s, matvec unroll %s prefetch %d decode %s "
        "grid %s block warps %s, rows a warp at n = 2..8 %s (launches >= %d KiB), matmul %s, bf16 "
        "on the %s, whole-MLP kernel %s, attention %s\n",
        st->device_name, prop.totalGlobalMem / 1e9, st->use_graphs && !st->profile ? "on" : "off",
        !st->fuse                            ? "off"
        : st->fuse_mm == CUDA_FUSE_MM_ON     ? "on (all matmul groups)"
        : st->fuse_mm == CUDA_FUSE_MM_AUTO   ? "on (matmul groups, gate+up pair <= 1 MiB)"
        : st->fuse_mm == CUDA_FUSE_MM_NOPAIR ? "on (matmul groups, no gate+up pair)"
                                             : "on (no matmul groups)",
        st->pdl ? "on" : "off",
        st->mv.unroll == 4   ? "4"
        : st->mv.unroll == 8 ? "8"
                             : "auto",
        st->mv.prefetch,
        st->mv.decode == K_MV_LEAN8  ? "lean8"
        : st->mv.decode == K_MV_LEAN ? "lean"
                                     : "general",
        grid_name,
        st->mv.block_warps == 8   ? "8"
        : st->mv.block_warps == 4 ? "4"
        : st->mv.block_warps == 2 ? "2"
                                  : "auto",
        st->mv.rows == 4   ? "4"
        : st->mv.rows == 2 ? "2"
        : st->mv.rows == 1 ? "1"
                           : "auto (2, 4 from 5 inputs)",
        st->mv.rows_min_kb,
        gemm_mode == 0   ? "own kernel"
        : gemm_mode == 1 ? "cuBLAS"
                         : "own (n <= 17), cuBLAS for bf16 (x exact)",
        st->mv.mma == 1   ? "tensor cores (x exact)"
        : st->mv.mma == 2 ? "tensor cores (x to 16 bits)"
                          : "CUDA cores",
        st->mlp == K_MLP_MMA     ? "on the tensor cores (where it fits)"
        : st->mlp == K_MLP_CORES ? "on the CUDA cores (where it fits)"
                                 : "off",
        st->attn == K_ATTN_CLUSTER ? "in thread block clusters (short rings)" : "split + merge");
    CU(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    CUBLAS(cublasCreate(&st->cublas));
    CUBLAS(cublasSetStream(st->cublas, st->stream));
    CU(cudaMalloc((void **)&st->d_params, (1 + GRAPH_MAX_ROWS) * sizeof(int)));
    CU(cudaMallocHost((void **)&st->h_params, (1 + GRAPH_MAX_ROWS) * sizeof(int)));
    CU(cudaMalloc(&st->d_argmax, (2 * K_ARGMAX_BLOCKS + 1) * sizeof(int)));
    CU(cudaMallocHost((void **)&st->h_argmax, sizeof(int)));
    CU(cudaEventCreateWithFlags(&st->params_done, cudaEventDisableTiming));
    CU(cudaEventCreate(&st->ev0));
    CU(cudaEventCreate(&st->ev1));
    st->fuser = cuda_fuser_new(st->fuse, st->fuse_mm);

    backend *b = xcalloc(1, sizeof *b);
    b->name = "cuda";
    b->impl = st;
    b->alloc = cu_alloc;
    b->release = cu_release;
    b->upload = cu_upload;
    b->download = cu_download;
    b->copy = cu_copy;
    b->attention = cu_attention;
    b->scale = cu_scale;
    b->embed = cu_embed;
    b->softcap = cu_softcap;
    b->argmax = cu_argmax;
    b->matmul_argmax = cu_matmul_argmax;
    b->step_begin = cu_step_begin;
    b->set_horizon = cu_set_horizon;
    b->step_end = cu_step_end;
    b->draft_head = cuda_draft_head;
    b->embed_dev = cuda_embed_dev;
    b->destroy = cu_destroy;
    cuda_fuse_install(b); /* matmul, rmsnorm, rope, kv_write, gelu_mul, add: queued */
    return b;
}
