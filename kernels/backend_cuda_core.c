/* backend_cuda_core.c: what every op of the CUDA backend needs, below the table
 * (backend_cuda.c), the op queue (backend_cuda_fuse.c) and the drafter's ops
 * (backend_cuda_draft.c), which all call it: the accounting and timing of an op, the device
 * copies of weights (kept by backend_cuda_weights.c), scratch buffers, the position arguments
 * of a captured step, and one matrix product on our kernels or cuBLAS.
 *
 * Matrix products. n == 1 (the decode step) runs our warp-per-row kernel (matvec.cu), which
 * streams the weights at close to the copy bandwidth. Products of up to gemm_rows inputs (every
 * speculative verify pass: backend_cuda.c) run our kernels too, so that a verify row reproduces
 * its decode step bit for bit. Bigger ones - prefill chunks - go to cublasGemmEx where their
 * weights are bf16 or quantized (GEMMA_CUDA_GEMM=auto, the default: E4B's prefill 6210 tokens/s
 * against 1360 on our kernels, on an H200, in chunks of 64). There x is split into two bf16
 * parts, hi = bf16(x) and lo = bf16(x - hi), x to 2^-17 of itself (elementwise.cu); one cuBLAS
 * product takes the 2n inputs - the weights are read once - and k_sum2 adds each output's two
 * products. A product of c terms then moves from fp32 x's by at most 2^-17 of sum |w x|, below
 * the (c - 1) 2^-24 by which fp32 sums in another order may differ once c > 129. A third part,
 * an exact split (mma.cuh split3), would cost half as many products again. f16 weights stay on
 * our kernels: a product of f16 x would take x rounded to f16 (a split is not exact over fp32's
 * exponent range), which moves a model's prefill logits far from the CPU's.
 *
 * Quantized weights (WEIGHT_DTYPE / HEAD_DTYPE int8 or int4: quant.h) run matvec_q.cu up to
 * gemm_rows inputs, 9 from one read of the weights, so a verify row is its decode step's bits. A
 * prefill chunk's product dequantizes the matrix and runs a split product on cuBLAS. int4 values
 * q * s have at most 11 significant bits, so shifted by a power of two (quant_f16_exponent) they
 * are fp16 exactly: one fp16 matrix, and x split row by row into two fp16 parts (x to 2^-23).
 * int8 values (15 bits), and int4 matrices whose scales fp16 cannot span, become two bf16
 * matrices, hi + lo = q * s exactly (matvec_q.h), twice the products. fp32 weights multiplied in
 * fp32 would have a sixth of the bf16 form's products but none on the tensor cores: E4B's 2.0 TFLOP
 * a 256-token prompt would take 30 ms at an H100's fp32 peak (67 TFLOPS; arithmetic, not measured).
 *
 * Products that read the same x (q, k and v; gate and up) take one split of it: the op queue
 * (backend_cuda_fuse.c) runs them back to back, and each after the first is told that x's parts
 * are in the scratch already (cuda_matmul_split_kind says which parts a product takes). Same
 * bits; a 256-token E4B bf16 prompt 15750 tokens/s against 15450 on an H100.
 */
#include <stdio.h>

#include "backend_cuda_internal.h"

/* ---- accounting ---------------------------------------------------------------------- */

cudaStream_t cuda_op_begin(cuda_state *st) {
    /* The launchers' settings are global; two backends in one process keep their own. */
    k_set_pdl(st->pdl);
    k_matvec_set_mma(st->mv_mma);
    k_matvec_q_set_mma(st->q_mma);
    if (st->profile) CU(cudaEventRecord(st->ev0, st->stream));
    return st->stream;
}

void cuda_op_end(cuda_state *st, int f, double bytes) {
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

const int *cuda_pos(cuda_state *st, int pos0, int *pos_arg) {
    if (st->mode == 1) {
        *pos_arg = pos0 - st->cap_pos;
        return st->d_params;
    }
    *pos_arg = pos0;
    return NULL;
}

/* ---- weights (backend_cuda_weights.c) and scratch -------------------------------------- */

void cuda_graphs_drop(cuda_state *st) {
    for (int i = 0; i < st->n_graphs; i++)
        if (st->graphs[i].exec) CU(cudaGraphExecDestroy(st->graphs[i].exec));
    st->n_graphs = 0;
}

/* A weight's device copy moved: the graphs and the dequantized copies may hold its address. */
static void weight_moved_cb(void *st) {
    cuda_graphs_drop((cuda_state *)st);
    cuda_dequant_forget((cuda_state *)st);
}

static const cuda_weight_slot *weight_as(cuda_state *st, const tensor *w, int transposed) {
    return cuda_weights_get(&st->weights, st->stream, w, transposed, st->mode == 1, weight_moved_cb,
                            st);
}

const void *cuda_weight(cuda_state *st, const tensor *w) {
    return weight_as(st, w, 0)->dev;
}

const void *cuda_weight_t(cuda_state *st, const tensor *w) {
    return weight_as(st, w, 1)->dev;
}

void *cuda_scratch(cuda_state *st, void **buf, size_t *cap, size_t bytes) {
    if (bytes <= *cap) return *buf;
    if (st->mode == 1) die("CUDA scratch grew inside a captured graph (%zu bytes)", bytes);
    CU(cudaStreamSynchronize(st->stream)); /* the old buffer may still be in use */
    cuda_graphs_drop(st);                  /* a captured step may hold the old buffer */
    if (*buf) CU(cudaFree(*buf));
    CU(cudaMalloc(buf, bytes));
    *cap = bytes;
    return *buf;
}

/* ---- one matrix product ------------------------------------------------------------------ */

int cuda_matmul_own(const cuda_state *st, const tensor *w, int n) {
    return !((w->dtype == DT_BF16 || w->q) && n > st->gemm_rows);
}

int backend_cuda_takes_quant(const quant_matrix *q) {
    return k_matvec_q_shape_ok(q->dtype == QUANT_INT4 ? KQ_INT4 : KQ_INT8, q->cols, q->group);
}

/* The matvec_q.h view of a quantized tensor whose device copy is at dev. */
static k_qmat qmat_at(const tensor *w, const char *dev) {
    return (k_qmat){.dtype = w->q->dtype == QUANT_INT4 ? KQ_INT4 : KQ_INT8,
                    .rows = w->rows,
                    .cols = w->cols,
                    .group = w->q->group,
                    .q = dev,
                    .scales = (const uint16_t *)(dev + (size_t)w->rows * w->q->row_bytes)};
}

k_qmat cuda_qmat(cuda_state *st, const tensor *w) {
    return qmat_at(w, cuda_weight(st, w));
}

/* y[nn][rows] = x[nn][cols] . w[rows][cols]^T (+ y when beta is 1) on cuBLAS, accumulated and
 * stored in fp32. Row-major y is, column-major, y^T (rows x nn) = op(A) B with A = w viewed as
 * cols x rows. */
static void cublas_product(cuda_state *st, float *y, const void *w, cudaDataType wt, const void *x,
                           cudaDataType xt, int rows, int cols, int nn, float beta) {
    const float one = 1.0f;
    CUBLAS(cublasGemmEx(st->cublas, CUBLAS_OP_T, CUBLAS_OP_N, rows, nn, cols, &one, w, wt, cols, x,
                        xt, cols, &beta, y, CUDA_R_32F, rows, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT));
}

/* The scratch of a split product: x's two 16-bit parts (bf16, or fp16 with each row's exponent
 * after them) and the products' outputs. Taken before cuda_op_begin (a scratch that grows
 * synchronizes). */
typedef struct {
    void *xh; /* [2][n][cols] bf16 or fp16: hi, lo */
    int *ex;  /* [n]: the fp16 split's exponent of each row of x */
    float *y; /* [2][n][rows] fp32 */
} split_bufs;

static split_bufs split_scratch(cuda_state *st, int rows, int cols, int n) {
    /* ex after the parts (4 n cols bytes: aligned); the bf16 split does not use it */
    const size_t xb = (size_t)n * cols * 2 * 2;
    char *xh = cuda_scratch(st, &st->d_convert, &st->cap_convert, xb + sizeof(int) * n);
    return (split_bufs){.xh = xh,
                        .ex = (int *)(xh + xb),
                        .y = cuda_scratch(st, (void **)&st->d_gemm_y, &st->cap_gemm_y,
                                          sizeof(float) * 2 * n * (size_t)rows)};
}

/* out[n][rows] = x . (w_0 + .. + w_{parts-1})^T for bf16 weight matrices w_i, with x split
 * into two bf16 parts (k_split2_bf16: x to 2^-17): one cuBLAS product of the 2n inputs a weight
 * part (each weight read once), accumulated over the parts, then k_sum2 adds each output's two.
 * Every product of two bf16 is exact in fp32, so the result is that of hi + lo and the weights
 * to rounding. Returns the bytes it moves besides the weights, x once and out once. */
static double split_product(cuda_state *st, const split_bufs *sb, float *out, const void *const *w,
                            int parts, const float *x, int rows, int cols, int n, int x_split) {
    const int nn = 2 * n;
    const size_t nx = (size_t)n * cols;
    if (!x_split) k_split2_bf16(st->stream, sb->xh, x, nx);
    for (int i = 0; i < parts; i++)
        cublas_product(st, sb->y, w[i], CUDA_R_16BF, sb->xh, CUDA_R_16BF, rows, cols, nn,
                       i ? 1.0f : 0.0f);
    k_sum2(st->stream, out, sb->y, (size_t)n * rows);
    /* x's parts written once (unless x_split: then x itself is not read either) and read by
     * every product (2 bytes each); y written by every product, read by every one after the
     * first and by k_sum2 (4 bytes each) */
    return 2.0 * nn * cols * (!x_split + parts) - (x_split ? 4.0 * nx : 0.0) +
           4.0 * nn * rows * (2 * parts);
}

/* The same for one fp16 weight matrix holding w 2^e: each row of x scaled by its own power of
 * two and split into two fp16 parts (k_split2_f16_rows), one cuBLAS product of the 2n inputs,
 * and k_sum2_rows adds each output's two and scales them back. Products of two fp16 are exact in
 * fp32 too (11 + 11 significant bits) and the powers of two change no rounding, so this is
 * split_product's arithmetic on a single part, but for x: the fp16 parts hold it to 2^-23 of
 * each |x|, or 2^-39 of its row's largest magnitude for elements far below it (elementwise.cu),
 * where the bf16 parts hold it to 2^-17. */
static double split_product_f16(cuda_state *st, const split_bufs *sb, float *out, const void *w,
                                int e, const float *x, int rows, int cols, int n, int x_split) {
    const int nn = 2 * n;
    if (!x_split) k_split2_f16_rows(st->stream, sb->xh, sb->ex, x, n, cols);
    cublas_product(st, sb->y, w, CUDA_R_16F, sb->xh, CUDA_R_16F, rows, cols, nn, 0.0f);
    k_sum2_rows(st->stream, out, sb->y, n, rows, sb->ex, e);
    return 2.0 * nn * cols * (1 + !x_split) - (x_split ? 4.0 * n * cols : 0.0) +
           4.0 * nn * rows * 2;
}

/* A product of int8 / int4 weights: matvec_q.cu up to gemm_rows inputs. Past that, an int4
 * matrix whose values fit fp16 once shifted (quant_f16_exponent: every matrix of a real model)
 * is dequantized into one fp16 matrix, w 2^e exactly, for split_product_f16; any other into bf16
 * hi + lo parts (exact) for split_product, twice the products and twice the bytes written. The
 * copy is made one product ahead where the order of products repeats (backend_cuda_dequant.c).
 * bytes: weights, x and out once. */
static void matmul_quant(cuda_state *st, float *out, const tensor *w, const float *x, int n,
                         int x_split, double bytes) {
    const cuda_weight_slot *ws = weight_as(st, w, 0);
    const k_qmat qm = qmat_at(w, ws->dev);
    if (cuda_matmul_own(st, w, n)) {
        cuda_op_begin(st);
        if (k_matvec_q(st->stream, &qm, x, out, n))
            die("CUDA: a %s product of %d x %d weights (group %d) that matvec_q cannot take",
                quant_dtype_name(w->q->dtype), w->rows, w->cols, w->q->group);
        /* the weights are read once a launch of up to K_MATVEC_Q_MAX_N inputs */
        const int reads = (n + K_MATVEC_Q_MAX_N - 1) / K_MATVEC_Q_MAX_N;
        cuda_op_end(st, F_MATVEC, bytes + (reads - 1) * (double)tensor_bytes(w));
        return;
    }
    const size_t nw = (size_t)w->rows * w->cols;
    const int e = ws->f16_exp;
    const int parts = e == CUDA_NO_F16 ? 2 : 1;
    const uint16_t *wh = cuda_dequant_take(st, &(cuda_dq_matrix){w->data, qm, e});
    const split_bufs sb = split_scratch(st, w->rows, w->cols, n);
    cuda_op_begin(st);
    const int written = cuda_dequant_fill(st);
    double more;
    if (parts == 1) {
        more = split_product_f16(st, &sb, out, wh, e, x, w->rows, w->cols, n, x_split);
    } else {
        const void *hilo[2] = {wh, wh + nw};
        more = split_product(st, &sb, out, hilo, 2, x, w->rows, w->cols, n, x_split);
    }
    cuda_dequant_done(st);
    /* plus the dequantized parts read once, and written once where they were made for this
     * product (a copy made ahead for a wrong guess is counted nowhere) */
    cuda_op_end(st, F_GEMM, bytes + more + (written ? 4.0 : 2.0) * parts * nw);
}

int cuda_matmul_split_kind(cuda_state *st, const tensor *w, int n) {
    if (cuda_matmul_own(st, w, n)) return -1;
    return w->q && weight_as(st, w, 0)->f16_exp != CUDA_NO_F16;
}

void cuda_matmul_now(cuda_state *st, float *out, const tensor *w, const float *x, int n,
                     int x_split) {
    const double bytes = (double)tensor_bytes(w) + 4.0 * n * w->cols + 4.0 * n * w->rows;
    if (w->q) {
        matmul_quant(st, out, w, x, n, x_split, bytes);
        return;
    }
    const void *wd = cuda_weight(st, w);
    if (!cuda_matmul_own(st, w, n)) {
        const split_bufs sb = split_scratch(st, w->rows, w->cols, n);
        cuda_op_begin(st);
        const double more = split_product(st, &sb, out, &wd, 1, x, w->rows, w->cols, n, x_split);
        cuda_op_end(st, F_GEMM, bytes + more);
        return;
    }
    cuda_op_begin(st);
    k_matvec(st->stream, out, wd, w->dtype, x, w->rows, w->cols, n);
    cuda_op_end(st, F_MATVEC, bytes);
}
