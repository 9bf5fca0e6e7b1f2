/* gpu_check.cuh: what the kernel benchmarks bench/matvec_q_check.cu, bench/mlp_check.cu and
 * bench/attention_rows_check.c share: a CUDA call that must succeed, seeded random values, and
 * the device's copy bandwidth (the yardstick their GB/s are given against). Header-only, C or
 * CUDA C++: each benchmark is one program. */
#ifndef GPU_CHECK_CUH
#define GPU_CHECK_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

static inline uint64_t mix(uint64_t z) { /* splitmix64's finaliser */
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline float uniform(uint64_t seed, uint64_t i) { /* [-1, 1) */
    return (float)((double)(mix(seed ^ mix(i)) >> 11) * 0x1p-52 - 1.0);
}

/* Device-to-device cudaMemcpy of 1 GiB: bytes read + written a second, in GB/s. */
static inline double copy_bandwidth(void) {
    const size_t bytes = (size_t)1 << 30;
    void *a, *b;
    CK(cudaMalloc(&a, bytes));
    CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 1, bytes));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 2; i++)
        CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
    const int reps = 10;
    CK(cudaEventRecord(e0, 0));
    for (int i = 0; i < reps; i++)
        CK(cudaMemcpyAsync(i & 1 ? a : b, i & 1 ? b : a, bytes, cudaMemcpyDeviceToDevice, 0));
    CK(cudaEventRecord(e1, 0));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaFree(a));
    CK(cudaFree(b));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return 2.0 * bytes * reps / (ms * 1e-3) / 1e9;
}

#endif
