/* matvec_q4.h: the int4 side of matvec_q.h, on the tensor cores (matvec_q4.cu), called by
 * matvec_q.cu's entry points for KQ_INT4 matrices; the layout is matvec_q.h's tiled one. */
#ifndef MATVEC_Q4_H
#define MATVEC_Q4_H

#include "matvec_q.h"

/* One launch of n <= K_MATVEC_Q_MAX_N inputs (x[t0 ..]) over the segments (validated by the
 * caller: int4, one cols and group); segment i's outputs at its y + t0 * rows. Returns 0. */
int q4_matvec(cudaStream_t s, const k_qseg *segs, int n_segs, const float *x, int t0, int n);

/* k_matvec_q4_set_form's work (matvec_q.h). */
int q4_set_form(int tiles_per_block, int warps_per_block);

/* out = the matrix as fp32 row-major (validated by the caller). */
void q4_dequant(cudaStream_t s, const k_qmat *w, float *out);

/* Bytes of the tiled values (the scales follow them), and the scales' bytes. */
size_t q4_values_bytes(int rows, int cols);
size_t q4_scales_bytes(int rows, int cols, int group);

/* The tiled layout from the host layout on the device (validated by the caller). */
void q4_pack(cudaStream_t s, void *dst, const void *q, const uint16_t *scales, int rows, int cols,
             int group);

#endif
