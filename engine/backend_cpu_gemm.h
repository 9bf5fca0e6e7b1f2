/* backend_cpu_gemm.h: the CPU backend's kernels for chunks of many positions (prefill, teacher
 * forcing): a blocked matrix product, causal attention over a block of queries and the GELU
 * gate, each for AVX-512 (backend_cpu_gemm.c). backend_cpu.c calls them only for more than
 * CPU_CHUNK_MIN rows, so decode steps and speculative verify passes keep the row-wise kernels
 * and stay bit-identical to each other. */
#ifndef BACKEND_CPU_GEMM_H
#define BACKEND_CPU_GEMM_H

#include "model.h"

/* Chunks of more rows than this take the kernels below. */
#define CPU_CHUNK_MIN 16

/* 1 when this CPU runs the kernels below (AVX-512F). */
int cpu_chunk_supported(void);

/* out[t][r] = sum_c w[r][c] * x[t][c] for t < n, r < w->rows, over n_threads threads. Each
 * output is one fp32 FMA chain over c in order, so a row's result does not depend on n. */
void cpu_gemm_avx512(float *out, const tensor *w, const float *x, int n, int n_threads);

/* sum x[i]^2 in fp64 (the products are exact; the sum runs in 16 lanes, then across). */
double cpu_sumsq_avx512(const float *x, int n);

/* The backend's attention op (backend.h) for a chunk of n_tok > CPU_CHUNK_MIN queries. */
void cpu_attention_avx512(float *out, const float *q, const float *kc, const float *vc, int n_tok,
                          int pos0, int len, int window, int n_heads, int n_kv_heads, int head_dim,
                          int n_threads);

/* out[r][j] = gelu_tanh(gate[r][j]) * up[r * up_stride + j] (backend.h's gelu_mul) with a
 * vectorised tanh. */
void cpu_gelu_mul_avx512(float *out, const float *gate, const float *up, int rows, int dim,
                         int up_stride, int n_threads);

#endif
