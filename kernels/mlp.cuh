/* mlp.cuh: what mlp.cu's k_mlp asks of mlp_mma.cu, the whole MLP on the tensor cores
 * (K_MLP_MMA): the same partial sums (partial[t - p0][block][H] for inputs t0 ..
 * t0 + nl - 1 below n, G blocks), summed by mlp.cu's reduction. */
#ifndef MLP_CUH
#define MLP_CUH

#include <cuda_runtime.h>

/* The most inputs a pass can take for this shape and grid on the current device: 1 .. 8, or 0
 * where the kernel does not run (before sm_90, or the shape does not fit). */
int mlp_mma_max_inputs(int H, int I, int G);
/* One pass of nl <= mlp_mma_max_inputs inputs; depth: rows a block keeps asked for (mlp.cu's
 * mlp_depth), at most the ring's stages less the 8 the consumers hold. */
void mlp_mma_launch(cudaStream_t s, const void *gate, const void *up, const void *down_t,
                    const float *x, float *h_out, float *u_out, float *partial, int H, int I, int G,
                    int n, int t0, int p0, int nl, int depth);

#endif
