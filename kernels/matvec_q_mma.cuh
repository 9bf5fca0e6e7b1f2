/* matvec_q_mma.cuh: the int4 products of matvec_q.h on the tensor cores (matvec_q_mma.cu), for
 * matvec_q.cu's launcher, which checks the arguments and picks the kernel. */
#ifndef MATVEC_Q_MMA_CUH
#define MATVEC_Q_MMA_CUH

#include "matvec_q.h"

/* Whether the segments (int4, same cols and group, checked by the caller) fit this device's
 * shared memory at every n up to K_MATVEC_Q_MAX_N: a function of their shapes and the device
 * only, so that a decode step and its verify passes take the same kernel. */
bool qm_fits(const k_qseg *segs, int n_segs, int sms);

/* One launch over the segments for inputs 0 .. n - 1 of x (n <= K_MATVEC_Q_MAX_N); segment i's
 * outputs at its y + t0 * rows. 0, or -1 (nothing enqueued) when they do not fit (qm_fits). */
int qm_launch(cudaStream_t s, const k_qseg *segs, int n_segs, const float *x, int t0, int n,
              int sms);

#endif
