/* backend_cuda_internal.h: the CUDA backend's state and what its C files share. The files are
 * layers, each calling only the ones below it:
 *
 *   backend_cuda.c           the backend table (the ops not queued), CUDA graphs of whole
 *                            steps, the counters and the profile, creation and destruction
 *   backend_cuda_fuse.c      the queued ops and their fusion     backend_cuda_draft.c   the
 *                                                                drafter's ops
 *   backend_cuda_core.c      what every op needs: accounting and timing, device copies of
 *                            weights, scratch buffers, position arguments, one matrix product
 *   backend_cuda_dequant.c   quantized matrices dequantized for cuBLAS, one product ahead
 *                            (its buffers' bookkeeping: backend_cuda_dequant_book.c, host only)
 *   backend_cuda_weights.c   the weight table                    backend_cuda_env.c     the
 *                                                                switches (no GPU needed)
 *
 * backend_cuda.c owns the state (cuda_state: created and freed there) and runs the queue
 * (backend_cuda_fuse.h) before every op it does not queue, so that the ops below never see a
 * queued op ahead of them. */
#ifndef BACKEND_CUDA_INTERNAL_H
#define BACKEND_CUDA_INTERNAL_H

#include <stdint.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "backend.h"
#include "backend_cuda_dequant_book.h"
#include "kernels.h"
#include "matvec_q.h"
#include "util.h"

/* A CUDA runtime call that must succeed: otherwise die naming the call and the error. */
#define CU(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) die("CUDA: %s: %s", #call, cudaGetErrorString(e_));                 \
    } while (0)

/* A cuBLAS call that must succeed. */
#define CUBLAS(call)                                                                               \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) die("cuBLAS: %s: status %d", #call, (int)s_);             \
    } while (0)

/* The slot of pointer p (with one bit more of key, salt) in an open-addressing table of cap
 * slots, a power of two: the weight table's and the prefill copies' successors. */
static inline size_t cuda_hash_ptr(const void *p, int salt, size_t cap) {
    uint64_t h = (uint64_t)(uintptr_t)p ^ (uint64_t)(salt != 0) << 63;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return (size_t)(h & (cap - 1));
}

/* ---- backend_cuda_weights.c: the weight table ------------------------------------------ */

typedef struct {
    const void *host; /* key: the tensor's host data; NULL = empty slot */
    int transposed;   /* and the layout: 1 = stored [cols][rows] (cuda_weight_t) */
    void *dev;
    size_t bytes;
    int f16_exp; /* an int4 matrix's quant_f16_exponent, or CUDA_NO_F16 (backend_cuda_core.c) */
} cuda_weight_slot;

typedef struct {
    cuda_weight_slot *slots; /* cap slots (a power of two), n of them used */
    size_t cap, n;
    size_t bytes; /* bytes of weights on the device */
} cuda_weights;

/* The slot of w's device copy (transposed: stored [cols][rows], 16-bit dtypes only), copied on
 * s and waited for the first time it is asked for. capturing: a copy now would be recorded into
 * a CUDA graph - a programming error, fatal. A tensor at the address of one seen before with
 * another size means that one's host memory was reused: its copy is replaced, after drop(ctx)
 * lets the caller forget what may hold the old address. */
const cuda_weight_slot *cuda_weights_get(cuda_weights *cw, cudaStream_t s, const tensor *w,
                                         int transposed, int capturing, void (*drop)(void *),
                                         void *ctx);
void cuda_weights_free(cuda_weights *cw);

/* ---- backend_cuda_dequant.c: 16-bit copies of quantized matrices, made one ahead -------- */

typedef struct {
    cudaStream_t side; /* where copies are made ahead */
    uint16_t *buf[2];  /* the copies, cap[b] bytes each */
    size_t cap[2];
    cudaEvent_t ready[2]; /* recorded on the side stream after a buffer's write */
    cudaEvent_t freed[2]; /* recorded on the main stream after the products reading it */
    dq_book book;         /* what each buffer holds and what to make ahead */
    /* GEMMA_CUDA_DEQUANT=keep: copies kept, the buffers only for the matrices without one */
    int keep_on;
    dq_keep kept;
    long kept_writes; /* copies written since the counters were zeroed */
    int cur_i;        /* the entry of the kept copy the product in progress reads, or -1 */
    int cur_made;     /* and whether it is written for that product */
} cuda_dequant;

/* ---- the state ------------------------------------------------------------------------- */

typedef struct cuda_fuser cuda_fuser; /* backend_cuda_fuse.h */

/* Kernel families, for the counters and the profile table (backend_cuda.c names them). */
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
    F_DRAFT_HEAD,
    F_COUNT
};

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
    int gemm_rows; /* bf16 and quantized products of more inputs go to cuBLAS (GEMMA_CUDA_GEMM) */
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
    float *d_rows_partial; /* a prefill chunk's attention splits (attention_rows.cu) */
    size_t cap_rows_partial;
    float *d_mlp; /* mlp.cu's partial sums, cap_mlp bytes */
    size_t cap_mlp;
    int mlp; /* 0, K_MLP_CORES or K_MLP_MMA for the bf16 MLPs they take (GEMMA_CUDA_MLP; sm_90) */
    int mlp_quant;   /* int8 / int4 MLPs too, on the CUDA cores (GEMMA_CUDA_MLP=all) */
    void *d_convert; /* cuBLAS inputs (x in two bf16 or fp16 parts), cap_convert bytes */
    size_t cap_convert;
    float *d_gemm_y; /* a split cuBLAS product's outputs of hi and lo, cap_gemm_y bytes */
    size_t cap_gemm_y;
    cuda_dequant dq; /* quantized matrices as fp16 or bf16 hi + lo for cuBLAS */
    void *d_argmax;  /* argmax scratch: 2 * K_ARGMAX_BLOCKS words + the result */
    int *h_argmax;   /* pinned result */
    float *d_head;   /* matmul_argmax: [n][rows] scores, then its argmax scratch; cap_head bytes */
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

    cuda_fuser *fuser;   /* the queue of ops not launched yet (backend_cuda_fuse.c) */
    int pdl;             /* programmatic dependent launch (kernels.h k_set_pdl) */
    int attn;            /* the attention's form: K_ATTN_SPLIT or K_ATTN_CLUSTER */
    int horizon;         /* positions the current sequence attends to at most (0: unknown) */
    long attn_split_ops; /* attention ops issued in the split form (not counting replays) */
    long attn_rows_ops;  /* attention ops over a prefill chunk (attention_rows.cu) */
    long mlp_ops;        /* MLPs issued as one whole-MLP kernel (backend_cuda_fuse.c try_mlp) */
    int mv_mma;          /* bf16 products on the tensor cores: kernels.h k_matvec_set_mma */
    int q_mma;           /* int4 products on the tensor cores: matvec_q.h k_matvec_q_set_mma */

    /* counters */
    double bytes[F_COUNT];
    long calls[F_COUNT];
    double ms[F_COUNT];
    long decode_steps, replays, captures;
    cudaEvent_t ev0, ev1;
} cuda_state;

static inline cuda_state *cuda_st(backend *b) {
    return (cuda_state *)b->impl;
}

/* ---- backend_cuda_core.c ---------------------------------------------------------------- */

/* Start an op: sets the launchers' switches to this backend's, starts the op's timer when
 * profiling; returns the stream to launch on. */
cudaStream_t cuda_op_begin(cuda_state *st);
/* End an op of `family` (F_*) that moved `bytes`: counted, and timed when profiling. */
void cuda_op_end(cuda_state *st, int family, double bytes);
/* Position arguments of a kernel (kernels.h): the host value when eager; while a step is being
 * captured, the device word plus the offset from the captured step's position. */
const int *cuda_pos(cuda_state *st, int pos0, int *pos_arg);
/* The device copy of w's data, made (and waited for) on first use, which must not be inside a
 * captured step. */
const void *cuda_weight(cuda_state *st, const tensor *w);
/* The same stored transposed ([cols][rows]; 16-bit dtypes): mlp.cu's down. */
const void *cuda_weight_t(cuda_state *st, const tensor *w);
/* The device copy of a quantized weight (DT_Q8 / DT_Q4) as matvec_q.h reads it: its values,
 * then its scales, in one block (backend_cuda_weights.c). */
k_qmat cuda_qmat(cuda_state *st, const tensor *w);
/* A device scratch buffer (*buf, *cap bytes) grown to at least `bytes`; never inside a capture
 * (the eager run of the same step has sized it already). Growing drops every captured step. */
void *cuda_scratch(cuda_state *st, void **buf, size_t *cap, size_t bytes);
/* Forget every captured step (a buffer they use has moved): the next steps of each key run
 * eagerly once and are captured again. The caller has synchronised the stream. */
void cuda_graphs_drop(cuda_state *st);
/* Would a product of w over n inputs run our matrix-vector kernels (rather than cuBLAS)? */
int cuda_matmul_own(const cuda_state *st, const tensor *w, int n);
/* Which split of x a product of w over n inputs runs on cuBLAS with: 0 two bf16 parts, 1 two
 * fp16 parts scaled by row (an int4 matrix held as fp16), -1 none (our kernels). */
int cuda_matmul_split_kind(cuda_state *st, const tensor *w, int n);
/* One matrix product, launched now (our kernel or cuBLAS), counted and timed. x_split: the
 * product just before took the same x and n and a split of the same kind, and nothing has
 * written x since, so x's parts are in the scratch already. */
void cuda_matmul_now(cuda_state *st, float *out, const tensor *w, const float *x, int n,
                     int x_split);

/* ---- backend_cuda_dequant.c (above) ------------------------------------------------------ */
void cuda_dequant_init(cuda_state *st);
void cuda_dequant_free(cuda_state *st);
/* Forget every copy and successor (a weight's device copy moved); waits for the side stream. */
void cuda_dequant_forget(cuda_state *st);
/* A product over m is next: returns m's kept copy (GEMMA_CUDA_DEQUANT=keep), or the buffer its
 * copy will be in, grown as needed (both streams synchronized then), and chooses what to make
 * ahead. Before cuda_op_begin. */
uint16_t *cuda_dequant_take(cuda_state *st, const cuda_dq_matrix *m);
/* Inside the op, before its products: the copy made (on the main stream) or waited for, and
 * the successor's copy started on the side stream. Returns 1 when the copy was written for this
 * product (here or ahead), 0 when a buffer held it already. */
int cuda_dequant_fill(cuda_state *st);
/* After the products that read the copy (the buffer may be written again once they are done). */
void cuda_dequant_done(cuda_state *st);

/* ---- backend_cuda_draft.c: backend.h's draft_head and embed_dev ------------------------- */

void cuda_draft_head(backend *b, int *id, int *work, float *logits, const float *cscores,
                     int n_centroids, int top_k, const tensor *head, const int *ordering,
                     const float *x);
void cuda_embed_dev(backend *b, float *out, const tensor *table, const int *ids, int n, float s);

#endif
