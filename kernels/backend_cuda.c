/* backend_cuda.c: the CUDA backend - the backend table of backend.h filled with the kernels of
 * kernels/ (*.cu) and cuBLAS, plus CUDA-graph replay of whole decode steps and per-kernel
 * profiling. The top layer of the backend's C files (backend_cuda_internal.h draws them): the
 * ops here run the queue of fusable ops (backend_cuda_fuse.c) first, then go through
 * backend_cuda_core.c like every op.
 *
 * Memory. Activations are fp32 device buffers (cudaMalloc). Weights are copied to the device
 * once, in their file dtype, the first time an op meets them (and the copy is waited for:
 * backend_cuda_weights.c); an MLP's down, which mlp.cu reads transposed, is held that way
 * (cuda_weight_t; also as it is where products go to cuBLAS). The copies live in a table keyed
 * by the tensor's host data pointer (the model is shared and read-only for decoders, so the backend
 * does not write tensor.dev) and are freed with the backend. The host data of a tensor must
 * therefore stay unchanged while the backend lives - true of mmapped models.
 *
 * Matrix products: backend_cuda_core.c. Products of up to CUDA_GEMM_AUTO_ROWS inputs run our
 * kernels, bigger bf16 and quantized ones cuBLAS (GEMMA_CUDA_GEMM=own: every one our kernels).
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
 * norm + residual add + the next norm as one, the q / k / v norms, RoPEs and KV writes as one)
 * when any other op, download, argmax or step_end comes: every function here that is not
 * queued starts with st_flushed. A decode layer that runs 29 kernels unfused runs 12. With
 * programmatic dependent launch (sm_90+, kcommon.cuh) each kernel also starts while its
 * predecessor runs, and a matrix-vector kernel streams its first weights before waiting for it.
 *
 * Profiling. GEMMA_CUDA_PROFILE=1 times every op with a pair of cudaEvents (graphs are off
 * then, and every op waits for its own end, so the total is slower than an unprofiled run but
 * each family's share is right) and prints, per kernel family, calls, time, bytes moved and
 * achieved GB/s when the backend is destroyed. Bytes are counted always (cheaply) so that
 * backend_cuda_stats can report bytes per decode step without profiling. */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <limits.h>
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
#include "util.h"

static const char *const family_name[F_COUNT] = {
    "matvec (own)", "gemm (cuBLAS)",   "rmsnorm",   "rope",      "norm/rope/kv", "kv_write",
    "attention",    "gelu_mul",        "embed",     "add/scale", "softcap",      "argmax",
    "copy (d2d)",   "upload/download", "draft_head"};

/* The state of an op that is not queued: run the queued ops first. */
static cuda_state *st_flushed(backend *b) {
    cuda_fuse_flush(b);
    return cuda_st(b);
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
    cuda_op_begin(st);
    /* From pageable memory the call returns once src is staged, so src may change after it. */
    CU(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyHostToDevice, st->stream));
    cuda_op_end(st, F_TRANSFER, (double)n * sizeof(float));
}

static void cu_download(backend *b, float *dst, const float *src, size_t n) {
    cuda_state *st = st_flushed(b);
    if (!n) return;
    cuda_op_begin(st);
    CU(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToHost, st->stream));
    CU(cudaStreamSynchronize(st->stream));
    cuda_op_end(st, F_TRANSFER, (double)n * sizeof(float));
}

static void cu_copy(backend *b, float *dst, const float *src, size_t n) {
    cuda_state *st = st_flushed(b);
    if (!n || dst == src) return;
    cuda_op_begin(st);
    CU(cudaMemcpyAsync(dst, src, n * sizeof(float), cudaMemcpyDeviceToDevice, st->stream));
    cuda_op_end(st, F_COPY, 2.0 * n * sizeof(float));
}

/* ---- ops ----------------------------------------------------------------------------- */

/* GEMMA_CUDA_GEMM=auto sends a bf16 or quantized product to cuBLAS only above this many inputs:
 * more than a speculative verify pass ever has (SPEC_MAX_K drafts and the last accepted token), so
 * that every verify pass runs on our kernels and reproduces the decode steps it stands for bit for
 * bit (cuBLAS sums in an order of its own, which may differ with n); only prefill chunks go to
 * cuBLAS. */
#define CUDA_GEMM_AUTO_ROWS BACKEND_VERIFY_ROWS
_Static_assert(CUDA_GEMM_AUTO_ROWS == 17, "the switch's descriptions and the banner say 17");

static void cu_attention(backend *b, float *out, const float *q, const float *kc, const float *vc,
                         int n_tok, int pos0, int len, int window, int n_heads, int n_kv_heads,
                         int head_dim) {
    cuda_state *st = st_flushed(b);
    int p;
    const int *dp = cuda_pos(st, pos0, &p);
    /* The slices are sized for the longest context this ring can serve, so that the same
     * launch fits every later position (graphs); the form too. */
    const int max_ctx = window > 0 && window < len ? window : len;
    const int splits = k_attention_splits(st->attn, max_ctx, st->horizon, n_tok, n_heads, head_dim);
    /* A chunk longer than any verify pass (a prefill) need not reproduce decode steps: the
     * kernel that stages each tile of keys and values once for 16 rows (attention_rows.cu). */
    if (n_tok > BACKEND_VERIFY_ROWS && k_attention_rows_supported(head_dim)) {
        /* Its splits have partials of their own. It sizes the split form's for the longest
         * verify pass, as a prefill in that form did: a later step that grows a scratch drops
         * every graph captured. */
        cuda_scratch(st, (void **)&st->d_partial, &st->cap_partial,
                     (size_t)BACKEND_VERIFY_ROWS * n_heads * splits * (head_dim + 2) *
                         sizeof(float));
        float *part = cuda_scratch(st, (void **)&st->d_rows_partial, &st->cap_rows_partial,
                                   k_attention_rows_partial(n_tok, n_heads, head_dim));
        st->attn_rows_ops++;
        cuda_op_begin(st);
        k_attention_rows(st->stream, out, part, q, kc, vc, n_tok, dp, p, len, window, n_heads,
                         n_kv_heads, head_dim);
        cuda_op_end(st, F_ATTENTION,
                    k_attention_rows_bytes(n_tok, pos0, len, window, n_heads, head_dim));
        return;
    }
    st->attn_split_ops += splits > 0;
    const size_t need = (size_t)n_tok * n_heads * splits * (head_dim + 2) * sizeof(float);
    float *partial = cuda_scratch(st, (void **)&st->d_partial, &st->cap_partial, need);
    cuda_op_begin(st);
    k_attention(st->stream, out, q, kc, vc, n_tok, dp, p, len, window, n_heads, n_kv_heads,
                head_dim, splits, partial);
    /* Bytes: the keys and values each row reads (the host knows the position even when the
     * kernel takes it from the device), plus q and out. */
    double kv = 0;
    for (int t = 0; t < n_tok; t++) {
        long pp = (long)pos0 + t, lo = window > 0 && pp - window + 1 > 0 ? pp - window + 1 : 0;
        kv += (double)(pp - lo + 1);
    }
    cuda_op_end(st, F_ATTENTION,
                kv * 2.0 * head_dim * 4.0 * n_heads / (n_heads / n_kv_heads) +
                    8.0 * n_tok * n_heads * head_dim);
}

static void cu_scale(backend *b, float *x, float s, size_t n) {
    cuda_state *st = st_flushed(b);
    cuda_op_begin(st);
    k_scale(st->stream, x, s, n);
    cuda_op_end(st, F_ELEMENTWISE, 8.0 * n);
}

static void cu_embed(backend *b, float *out, const tensor *table, const int *ids, int n, float s) {
    cuda_state *st = st_flushed(b);
    const void *td = cuda_weight(st, table);
    const int *dids;
    if (st->mode == 1) {
        /* Captured: the ids are the step's tokens, which each replay stores at d_params + 1. */
        if (ids != st->cap_tokens || n != st->cap_n)
            die("embed inside a captured step must take its tokens");
        dids = st->d_params + 1;
        cuda_op_begin(st);
    } else {
        if (n > st->cap_ids) {
            CU(cudaStreamSynchronize(st->stream));
            if (st->d_ids) CU(cudaFree(st->d_ids));
            st->cap_ids = n < 64 ? 64 : n;
            CU(cudaMalloc((void **)&st->d_ids, (size_t)st->cap_ids * sizeof(int)));
        }
        cuda_op_begin(st);
        CU(cudaMemcpyAsync(st->d_ids, ids, (size_t)n * sizeof(int), cudaMemcpyHostToDevice,
                           st->stream));
        dids = st->d_ids;
    }
    k_embed(st->stream, out, td, table->dtype, table->cols, dids, n, s);
    cuda_op_end(st, F_EMBED, (double)n * table->cols * (dtype_size(table->dtype) + 4.0));
}

static void cu_softcap(backend *b, float *x, size_t n, float cap) {
    cuda_state *st = st_flushed(b);
    cuda_op_begin(st);
    k_softcap(st->stream, x, n, cap);
    cuda_op_end(st, F_SOFTCAP, 8.0 * n);
}

static int cu_argmax(backend *b, const float *x, int n) {
    cuda_state *st = st_flushed(b);
    int *res = (int *)st->d_argmax + 2 * K_ARGMAX_BLOCKS;
    cuda_op_begin(st);
    k_argmax(st->stream, x, n, st->d_argmax, res);
    CU(cudaMemcpyAsync(st->h_argmax, res, sizeof(int), cudaMemcpyDeviceToHost, st->stream));
    CU(cudaStreamSynchronize(st->stream));
    cuda_op_end(st, F_ARGMAX, 4.0 * n);
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
    float *s = cuda_scratch(st, (void **)&st->d_head, &st->cap_head,
                            cells * sizeof(float) + words * sizeof(int));
    int *am = (int *)(s + cells), *res = am + 2 * K_ARGMAX_BLOCKS * n;
    b->matmul(b, s, w, x, n);
    if (cap > 0) b->softcap(b, s, cells, cap);
    st = st_flushed(b);
    cuda_op_begin(st);
    k_argmax_rows(st->stream, s, w->rows, n, am, res);
    CU(cudaMemcpyAsync(out, res, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost, st->stream));
    CU(cudaStreamSynchronize(st->stream));
    cuda_op_end(st, F_ARGMAX, 4.0 * cells);
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

/* Steps of n tokens are captured when n is at most GRAPH_MAX_ROWS: every product of such a step
 * runs our own kernels, never cuBLAS, whose calls are not captured. */
_Static_assert(GRAPH_MAX_ROWS <= CUDA_GEMM_AUTO_ROWS, "a captured step must not reach cuBLAS");

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
    if (!st->use_graphs || st->profile || n > GRAPH_MAX_ROWS) return 0;
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
    c->attn_rows_ops = st->attn_rows_ops;
    c->mlp_form = st->mlp;
    c->mlp_quant = st->mlp_quant;
    c->mlp_ops = st->mlp_ops;
    c->dequant_ahead = st->dq.book.made_ahead;
    c->dequant_ahead_used = st->dq.book.used_ahead;
    c->dequant_kept = st->dq.kept.copies;
    c->dequant_kept_writes = st->dq.kept_writes;
    c->dequant_kept_bytes = st->dq.kept.bytes;
}

void backend_cuda_reset_counters(backend *b) {
    cuda_state *st = st_flushed(b);
    CU(cudaStreamSynchronize(st->stream));
    memset(st->bytes, 0, sizeof st->bytes);
    memset(st->calls, 0, sizeof st->calls);
    memset(st->ms, 0, sizeof st->ms);
    st->decode_steps = st->replays = st->captures = st->attn_split_ops = st->attn_rows_ops =
        st->mlp_ops = st->dq.book.made_ahead = st->dq.book.used_ahead = st->dq.kept_writes = 0;
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

/* ---- the drafter's ops (backend_cuda_draft.c), after the queue ---------------------------- */

static void cu_draft_head(backend *b, int *id, int *work, float *logits, const float *cscores,
                          int n_centroids, int top_k, const tensor *head, const int *ordering,
                          const float *x) {
    st_flushed(b);
    cuda_draft_head(b, id, work, logits, cscores, n_centroids, top_k, head, ordering, x);
}

static void cu_embed_dev(backend *b, float *out, const tensor *table, const int *ids, int n,
                         float s) {
    st_flushed(b);
    cuda_embed_dev(b, out, table, ids, n, s);
}

/* ---- life cycle ---------------------------------------------------------------------- */

static void cu_destroy(backend *b) {
    cuda_state *st = st_flushed(b);
    cudaStreamSynchronize(st->stream);
    if (st->profile) backend_cuda_profile_print(b, stderr);
    for (int i = 0; i < st->n_graphs; i++)
        if (st->graphs[i].exec) cudaGraphExecDestroy(st->graphs[i].exec);
    cuda_dequant_free(st); /* first: a copy made ahead may still be reading a weight */
    cuda_weights_free(&st->weights);
    cudaFree(st->d_ids);
    cudaFree(st->d_params);
    cudaFreeHost(st->h_params);
    cudaFree(st->d_partial);
    cudaFree(st->d_rows_partial);
    cudaFree(st->d_convert);
    cudaFree(st->d_gemm_y);
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
    cuda_state *st = xcalloc(1, sizeof *st);
    st->gemm_rows = sw.gemm_own ? INT_MAX : CUDA_GEMM_AUTO_ROWS;
    st->use_graphs = sw.use_graphs;
    st->profile = sw.profile;
    st->pdl = sw.pdl;
    st->mv_mma = sw.mv_mma;
    st->q_mma = sw.q_mma;
    st->mlp = sw.mlp;
    st->mlp_quant = sw.mlp_quant;
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
        "cuda: %s, %.1f GB, graphs %s, fusion %s, PDL %s, matmul %s, bf16 on the %s, int4 on the "
        "%s, "
        "whole-MLP kernel %s, attention %s, prefill's int8 / int4 copies %s\n",
        st->device_name, prop.totalGlobalMem / 1e9, st->use_graphs && !st->profile ? "on" : "off",
        sw.fuse ? "on" : "off", st->pdl ? "on" : "off",
        sw.gemm_own ? "own kernel" : "own (n <= 17), cuBLAS beyond (x to 16 bits)",
        st->mv_mma == 1   ? "tensor cores (x exact)"
        : st->mv_mma == 2 ? "tensor cores (x to 16 bits)"
                          : "CUDA cores",
        st->q_mma ? "tensor cores" : "CUDA cores",
        st->mlp == K_MLP_MMA ? "on the tensor cores (bf16, where it fits)"
        : st->mlp_quant      ? "on the CUDA cores (bf16, int8 and int4, where it fits)"
        : st->mlp            ? "on the CUDA cores (bf16, where it fits)"
                             : "off",
        st->attn == K_ATTN_CLUSTER ? "in thread block clusters (short rings)" : "split + merge",
        sw.dequant_keep ? "kept" : "made ahead");
    CU(cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking));
    CUBLAS(cublasCreate(&st->cublas));
    CUBLAS(cublasSetStream(st->cublas, st->stream));
    cuda_dequant_init(st);
    st->dq.keep_on = sw.dequant_keep;
    CU(cudaMalloc((void **)&st->d_params, (1 + GRAPH_MAX_ROWS) * sizeof(int)));
    CU(cudaMallocHost((void **)&st->h_params, (1 + GRAPH_MAX_ROWS) * sizeof(int)));
    CU(cudaMalloc(&st->d_argmax, (2 * K_ARGMAX_BLOCKS + 1) * sizeof(int)));
    CU(cudaMallocHost((void **)&st->h_argmax, sizeof(int)));
    CU(cudaEventCreateWithFlags(&st->params_done, cudaEventDisableTiming));
    CU(cudaEventCreate(&st->ev0));
    CU(cudaEventCreate(&st->ev1));
    st->fuser = cuda_fuser_new(sw.fuse);

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
    b->draft_head = cu_draft_head;
    b->embed_dev = cu_embed_dev;
    b->destroy = cu_destroy;
    cuda_fuse_install(b); /* matmul, rmsnorm, rope, kv_write, gelu_mul, add: queued */
    return b;
}
