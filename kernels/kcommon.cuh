/* kcommon.cuh: what every kernel file shares - weight element loads in each dtype, warp and
 * block reductions, and the launch check. Device-side only; included by the .cu files. */
#ifndef KCOMMON_CUH
#define KCOMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels.h"

/* A launch error is a programming error (bad grid, missing device): name the file and line. */
#define K_CHECK_LAUNCH()                                                                           \
    do {                                                                                           \
        cudaError_t e_ = cudaGetLastError();                                                       \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: kernel launch failed: %s\n", __FILE__, __LINE__,               \
                    cudaGetErrorString(e_));                                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* One weight element as fp32, for each storage type. */
__device__ __forceinline__ float to_f32(float v) {
    return v;
}
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) {
    return __bfloat162float(v);
}
__device__ __forceinline__ float to_f32(__half v) {
    return __half2float(v);
}

/* 16 bytes of weights (vec16<T>::n elements) as fp32. */
template <typename T> struct vec16 { static constexpr int n = 16 / sizeof(T); };
template <typename T> __device__ __forceinline__ void unpack16(const uint4 &u, float *f) {
    const T *e = reinterpret_cast<const T *>(&u);
#pragma unroll
    for (int i = 0; i < vec16<T>::n; i++)
        f[i] = to_f32(e[i]);
}

/* bf16 is the top half of an fp32: one shift or one mask per value, where the cvt of to_f32
 * first moves each half into a 16-bit register (matvec.cu's lean kernels: 2-7 % fewer SASS
 * instructions). The same values, bit for bit. */
template <> __device__ __forceinline__ void unpack16<__nv_bfloat16>(const uint4 &u, float *f) {
    const unsigned w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        f[2 * i] = __uint_as_float(w[i] << 16);
        f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
}

/* The same from memory: one 128-bit load through the read-only path. p must be 16-byte
 * aligned, and point at weights: memory no kernel writes (k_ld_act says why). */
template <typename T> __device__ __forceinline__ void load16(const T *p, float *f) {
    unpack16<T>(__ldg(reinterpret_cast<const uint4 *>(p)), f);
}

/* Loads of activations: what an earlier kernel of the stream wrote. ld.global.ca (cached in L1
 * and coherent once k_wait_only has returned), never the read-only path (__ldg, or a
 * const __restrict__ pointer the compiler turns into ld.global.nc): that path is defined only
 * for memory nothing writes while the kernel is resident, and under programmatic dependent
 * launch a kernel is resident while its predecessor still writes its input - and while the
 * kernel before that still reads the old contents into the multiprocessor's L1. On an H100
 * the shipped small model's captured decode steps read stale inputs that way (logits off by up
 * to 14). Weights keep the read-only path. */
__device__ __forceinline__ float4 k_ld_act(const float4 *p) {
    return __ldca(p);
}
__device__ __forceinline__ float k_ld_act(const float *p) {
    return __ldca(p);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
 * shared: 32 floats. */
__device__ __forceinline__ float block_sum(float v, float *shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_sum(v);
    __syncthreads(); /* shared may still be read by a previous call */
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < warps ? shared[lane] : 0.0f;
    return warp_sum(v);
}

/* Largest value over the block, likewise (block_sum's shape with max). */
__device__ __forceinline__ float block_max(float v, float *shared) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = warp_max(v);
    __syncthreads(); /* shared may still be read by a previous call */
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < warps ? shared[lane] : -INFINITY;
    return warp_max(v);
}

/* The position of row 0 of a step: pos0, plus the device word when there is one. */
__device__ __forceinline__ int step_pos(const int *dpos, int pos0) {
    return dpos ? pos0 + *dpos : pos0;
}

/* The first position a row at position p attends to: max(0, p - window + 1), 0 without a
 * window (window <= 0). */
__host__ __device__ __forceinline__ int window_lo(int p, int window) {
    return window > 0 && p - window + 1 > 0 ? p - window + 1 : 0;
}

/* Programmatic dependent launch (Hopper and later). Every kernel is launched with
 * k_launch, which lets it start while its predecessor in the stream is still running, and
 * every block of every kernel calls k_wait_prior() before it touches memory that an earlier
 * kernel writes: that waits until the predecessor has completed and its writes are visible
 * (and so, transitively, every kernel before it). A block must call it on every path, also
 * one with no work: a kernel whose blocks all exit without waiting would count as complete
 * before its predecessor.
 *
 * k_wait_prior first lets the NEXT kernel launch (griddepcontrol.launch_dependents): its
 * blocks then take the multiprocessor slots this kernel's blocks leave free and do what needs
 * nothing of ours - the matrix-vector kernel loads its first weights (matvec.cu) - before
 * they wait in turn. The next kernel launches only once every block of this one has started,
 * so its waiting blocks never hold slots this kernel still needs. What is gained is the
 * launch latency, block scheduling and the ramp-up of the weight stream, overlapped with the
 * previous kernel's tail - per kernel a few microseconds, which matters when a decode step is
 * hundreds of kernels. Off with k_set_pdl(0) (and on GPUs before sm_90, where both are empty
 * and the attribute is not set). */
extern int k_pdl;
extern unsigned k_skip; /* kernels.h: K_SKIP_* (profiling only) */

/* Let the next kernel in the stream launch now (it still waits for this one to complete). */
__device__ __forceinline__ void k_launch_next() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
#endif
}

/* Wait until the previous kernel has completed and its writes are visible. */
__device__ __forceinline__ void k_wait_only() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaGridDependencySynchronize();
#endif
}

__device__ __forceinline__ void k_wait_prior() {
    k_launch_next();
    k_wait_only();
}

/* gelu_pytorch_tanh, shared by gelu.cu and the fused matrix-vector epilogues of matvec.cu
 * (one definition, so fused and separate ops compute the same function). */
__device__ __forceinline__ float gelu_tanh(float x) {
    const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

/* Thread block clusters of c blocks along x (sm_90 and later), as a launch attribute. */
static inline cudaLaunchAttribute k_cluster_attr(unsigned c) {
    cudaLaunchAttribute a;
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = c;
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
    return a;
}

/* Launch kernel on s, with programmatic dependent launch when k_pdl is set, in clusters of
 * `cluster` blocks along x when it is not 0, with `smem` bytes of dynamic shared memory. */
template <typename... KArgs, typename... Args>
static void k_launch_ex(void (*kernel)(KArgs...), dim3 grid, dim3 block, unsigned cluster,
                        size_t smem, cudaStream_t s, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = k_pdl;
    if (cluster) attr[1] = k_cluster_attr(cluster);
    cfg.attrs = attr;
    cfg.numAttrs = cluster ? 2 : 1;
    cudaLaunchKernelEx(&cfg, kernel, ((KArgs)args)...);
}

template <typename... KArgs, typename... Args>
static void k_launch_clusters(void (*kernel)(KArgs...), dim3 grid, dim3 block, unsigned cluster,
                              cudaStream_t s, Args... args) {
    k_launch_ex(kernel, grid, block, cluster, 0, s, args...);
}

template <typename... KArgs, typename... Args>
static void k_launch(void (*kernel)(KArgs...), dim3 grid, dim3 block, cudaStream_t s,
                     Args... args) {
    k_launch_clusters(kernel, grid, block, 0, s, args...);
}

static inline unsigned k_blocks(size_t n, unsigned threads) {
    return (unsigned)((n + threads - 1) / threads);
}

#endif
