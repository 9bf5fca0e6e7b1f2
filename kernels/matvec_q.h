/* matvec_q.h: matrix-vector products with weight-only quantized matrices (int4 or int8 weights,
 * bf16 scales per group of columns, fp32 inputs and outputs): the decode step (n = 1) and the
 * speculative verify pass (n = 2 .. 9 inputs from one read of the weights). C-callable; the
 * kernels and their design are in matvec_q.cu (the CUDA cores) and matvec_q_mma.cu (int4 on the
 * tensor cores, k_matvec_q_set_mma).
 *
 * The layout on the GPU (the backend repacks to it at upload):
 *   int4 (KQ_INT4): q[r][c] in [-8, 7] stored as the unsigned nibble q + 8; row-major, row r
 *     takes cols / 2 bytes; byte j of a row holds column 2j in its low nibble and column 2j + 1
 *     in its high nibble.
 *   int8 (KQ_INT8): q[r][c] in [-128, 127] as int8; row-major, row r takes cols bytes.
 *   scales: bf16 (raw bits), [rows][cols / group]; w[r][c] = q[r][c] * scale[r][c / group].
 * cols must be a multiple of 128 (so every row is 16-byte aligned) and group 32, 64 or 128; the
 * weights must be 16-byte aligned, x too (a row of x is then aligned as well).
 *
 * Reproducibility: a row's result is the same bits whatever n is and whichever rows share a warp
 * or a launch with it (the launcher may pick another form for each n): a verify pass reproduces
 * the decode steps it stands for bit for bit. */
#ifndef MATVEC_Q_H
#define MATVEC_Q_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { KQ_INT4 = 4, KQ_INT8 = 8 }; /* k_qmat.dtype: bits a weight */

typedef struct {
    int dtype;              /* KQ_INT4 or KQ_INT8 */
    int rows;               /* output features: y has rows values an input */
    int cols;               /* input features: a multiple of 128 */
    int group;              /* columns sharing a scale: 32, 64 or 128 */
    const void *q;          /* [rows][cols * dtype / 8] bytes, the layout above; 16-byte aligned */
    const uint16_t *scales; /* [rows][cols / group] bf16 bits */
} k_qmat;

/* y[t][r] = sum_c w[r][c] * x[t][c] for t < n, r < rows: x fp32 [n][cols] (16-byte aligned), y
 * fp32 [n][rows] (plain stores). Inputs are taken up to K_MATVEC_Q_MAX_N a launch (one read of the
 * weights each); a larger n is done in several launches. Enqueues on s and returns 0; returns -1
 * and enqueues nothing for a matrix outside what the layout above allows (dtype, group, cols not a
 * multiple of 128, unaligned pointers, rows < 1) or n < 1. */
#define K_MATVEC_Q_MAX_N 9
int k_matvec_q(cudaStream_t s, const k_qmat *w, const float *x, float *y, int n);

/* 1 when a matrix of this dtype (KQ_INT4 / KQ_INT8), cols and group is one the layout above
 * allows (cols a multiple of 128, group 32, 64 or 128), else 0. */
int k_matvec_q_shape_ok(int dtype, int cols, int group);

/* Up to K_MATVEC_Q_SEGS matrices that read the same x (q, k and v; gate and up) in one launch,
 * blocks dealt to them in order: segment i's y is [n][its rows]. They must share dtype, cols and
 * group. Each row's bits are those of its matrix launched alone. Returns 0, or -1 (nothing
 * enqueued) as k_matvec_q does, or when the segments differ in dtype, cols or group. */
#define K_MATVEC_Q_SEGS 4
typedef struct {
    k_qmat w;
    float *y;
} k_qseg;
int k_matvec_q_multi(cudaStream_t s, const k_qseg *segs, int n_segs, const float *x, int n);

/* The weights as two bf16 matrices, out[0 .. rows * cols) = hi and the next rows * cols = lo,
 * with hi + lo = q * scale exactly: a prefill chunk's product is then two bf16 products on the
 * tensor cores (backend_cuda_core.c). out: 2 * rows * cols uint16, 16-byte aligned. Returns -1
 * and enqueues nothing for a matrix outside the layout above. */
int k_dequant_q_bf16x2(cudaStream_t s, const k_qmat *w, uint16_t *out);

/* An int4 matrix as one fp16 matrix, out[r][c] = q * s * 2^e, exact when e is the matrix's
 * quant_f16_exponent (quant.h): a prefill chunk's product is then one product of fp16 weights,
 * half the products and half the bytes written of the two bf16 parts above. out: rows * cols
 * uint16 (fp16 bits), 16-byte aligned. Returns -1 and enqueues nothing for an int8 matrix or one
 * outside the layout above. */
int k_dequant_q4_f16(cudaStream_t s, const k_qmat *w, int e, uint16_t *out);

/* The form of the next launches, for benchmarks: rows_per_warp 1, 2 or 4, warps_per_block 1, 2,
 * 4 or 8, sets_per_block (row sets of warps_per_block x rows_per_warp rows a block takes one after
 * another) 1 .. 16, stage 1 (x staged in shared memory) or 2 (x read through L1); 0 for any: the
 * launcher's choice (matvec_q.cu q_form_for). Results do not depend on it. Returns -1 (and changes
 * nothing) for other values. */
int k_matvec_q_set_form(int rows_per_warp, int warps_per_block, int sets_per_block, int stage);

/* int4 products on the tensor cores (matvec_q_mma.cu) when on is not 0, else on the CUDA cores
 * (matvec_q.cu, the default); int8 always on the CUDA cores. The two give different bits, so a
 * run keeps one for all its launches (the backend: GEMMA_CUDA_MV_MMA). The tensor cores take
 * matrices whose scales are 16-byte aligned, the others go to the CUDA cores. */
void k_matvec_q_set_mma(int on);

#ifdef __cplusplus
}
#endif

#endif
