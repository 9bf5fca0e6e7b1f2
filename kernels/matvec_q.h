/* matvec_q.h: matrix-vector products with weight-only quantized matrices (int4 or int8 weights,
 * bf16 scales per group of columns, fp32 inputs and outputs): the decode step (n = 1) and the
 * speculative verify pass (n = 2 .. 9 inputs from one read of the weights). C-callable. int8 runs
 * on the CUDA cores (matvec_q.cu), int4 on the tensor cores (matvec_q4.cu); their designs are
 * there.
 *
 * The host layout (quant.h, what the engine holds and uploads): row-major; int4 q[r][c] in
 * [-8, 7] as the unsigned nibble q + 8, byte j of a row holding column 2j in its low nibble and
 * 2j + 1 in its high one; int8 q[r][c] as int8; scales bf16 [rows][cols / group]. k_qmat_pack
 * turns it into the device layout, which k_matvec_q and k_dequant_q read:
 *   int8 (KQ_INT8): the host layout as it is: the values ([rows][cols] bytes), then the scales.
 *   int4 (KQ_INT4), tiled for the mma's operands: rows in tiles of 16 (the last one padded with
 *     zero weights and scales), columns in blocks of 128. Block b of tile T is 1024 bytes at
 *     (T * cols / 128 + b) * 1024: two halves of 512 (h = 0: rows 16T + g, h = 1: rows
 *     16T + 8 + g), in each 16 bytes a lane (lane = 4g + t, the mma's lane (g, t)). Word j of
 *     the 16 bytes holds 8 nibbles of row 16T + 8h + g, for the k-steps (16 columns each) 2j and
 *     2j + 1 of the block: nibble i is column 128b + 16(2j + (i >> 1 & 1)) + 2t + (i >> 2) +
 *     8 (i & 1). So each k-step's 16 columns lie in one group, and a word gives the lane its A
 *     operands of two k-steps with a shift and a mask per pair of values. Then the scales,
 *     [tile][g][cols / group] pairs of bf16: (row 16T + g, row 16T + 8 + g) in one 32-bit word.
 * cols must be a multiple of 128 and group 32, 64 or 128; device blocks 16-byte aligned, x too.
 *
 * Reproducibility: a row's result is the same bits whatever n is and whichever rows share a warp
 * or a launch with it (the launcher may pick another form for each n): a verify pass reproduces
 * the decode steps it stands for bit for bit. */
#ifndef MATVEC_Q_H
#define MATVEC_Q_H

#include <cuda_runtime_api.h>
#include <stddef.h>
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
    const void *q;          /* the values in the device layout above; 16-byte aligned */
    const uint16_t *scales; /* the scales in the device layout above */
} k_qmat;

/* Bytes of a matrix in the device layout (values, then scales), and the k_qmat of such a block
 * at dev (the scales follow the values). */
size_t k_qmat_bytes(int dtype, int rows, int cols, int group);
k_qmat k_qmat_at(const void *dev, int dtype, int rows, int cols, int group);

/* Writes the device layout of a matrix into dst (k_qmat_bytes of device memory) from its host
 * layout already on the device (q: rows x cols * dtype / 8 bytes, scales: rows x cols / group
 * bf16; neither may overlap dst). Enqueues on s and returns 0; -1 (nothing enqueued) for a shape
 * k_matvec_q_shape_ok refuses or an unaligned pointer. */
int k_qmat_pack(cudaStream_t s, void *dst, const void *q, const uint16_t *scales, int dtype,
                int rows, int cols, int group);

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

/* out[r][c] = w[r][c] as fp32 (q * scale, exact): the weights of a prefill chunk's product, which
 * cuBLAS then multiplies in fp32 (backend_cuda_core.c). out: rows * cols floats, 16-byte aligned.
 * Returns -1 and enqueues nothing for a matrix outside the layout above. */
int k_dequant_q(cudaStream_t s, const k_qmat *w, float *out);

/* The form of the next int8 launches, for benchmarks: rows_per_warp 1, 2 or 4, warps_per_block 1,
 * 2, 4 or 8, sets_per_block (row sets of warps_per_block x rows_per_warp rows a block takes one
 * after another) 1 .. 16, stage 1 (x staged in shared memory) or 2 (x read through L1); 0 for any:
 * the launcher's choice (matvec_q.cu q_form_for). Results do not depend on it. Returns -1 (and
 * changes nothing) for other values. */
int k_matvec_q_set_form(int rows_per_warp, int warps_per_block, int sets_per_block, int stage);

/* The form of the next int4 launches, for benchmarks: tiles_per_block 1 or 2 (16 rows each),
 * warps_per_block 1 .. 8 (the split of a row's columns; capped at its 128-column blocks); 0 for
 * the launcher's choice (matvec_q4.cu). The split is part of a row's summation order, so a forced
 * one changes the results' last bits (each form still gives a verify pass its decode bits).
 * Returns -1 (and changes nothing) for other values. */
int k_matvec_q4_set_form(int tiles_per_block, int warps_per_block);

#ifdef __cplusplus
}
#endif

#endif
