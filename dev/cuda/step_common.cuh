/* step_common.cuh: what step_shape.cu, step_mega.cu and step_slice.cu share (the other programs
 * here take its helpers) - E4B's decode step as a byte sequence without a model (per layer six
 * weight streams and six small ops between them), the small op, a product's arithmetic on one
 * 16-byte chunk, the timing and PDL launch helpers, and the setup: the weights in device memory,
 * the device's copy bandwidth, and the floor. */
#ifndef STEP_COMMON_CUH
#define STEP_COMMON_CUH

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define THREADS 256
#define U       8 /* 16-byte loads in flight per thread */
#define SMALL_N 2560

/* One layer: the streams in MB (0: a small op, one block over SMALL_N floats). */
static const double LAYER[] = {15.7, 0, 0, 0, 5.2, 0, 105.0, 52.0, 0, 1.3, 1.3, 0};
#define NL     42
#define NSTEPS ((int)(sizeof LAYER / sizeof LAYER[0]))

struct phase {
    size_t off, n16; /* first 16-byte word and count; n16 == 0: a small op */
};

__device__ __forceinline__ float fold(uint4 u) {
    return __uint_as_float(u.x & 0x3f800000u) + __uint_as_float(u.y & 0x3f800000u) +
           __uint_as_float(u.z & 0x3f800000u) + __uint_as_float(u.w & 0x3f800000u);
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The small op: out = in / rms(in) over SMALL_N floats, one block of NT threads (a norm's latency
 * chain); small_op(x) normalises x in place. */
template <int NT = THREADS> __device__ void small_op(const float *in, float *out) {
    constexpr int PER = (SMALL_N + NT - 1) / NT;
    __shared__ float red[NT / 32];
    float v[PER], ss = 0.0f;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int j = threadIdx.x + i * NT;
        v[i] = SMALL_N % NT == 0 || j < SMALL_N ? __ldcg(in + j) : 0.0f;
        ss += v[i] * v[i];
    }
    ss = warp_sum(ss);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = ss;
    __syncthreads();
    ss = 0.0f;
    for (int i = 0; i < NT / 32; i++)
        ss += red[i];
    const float inv = rsqrtf(ss / SMALL_N + 1e-6f);
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int j = threadIdx.x + i * NT;
        if (SMALL_N % NT == 0 || j < SMALL_N) out[j] = v[i] * inv + 1e-3f;
    }
    __syncthreads();
}

template <int NT = THREADS> __device__ void small_op(float *x) {
    small_op<NT>(x, x);
}

/* Programmatic dependent launch, as kcommon.cuh (sm_90 and later; on older devices the chain
 * waits). */
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cudaTriggerProgrammaticLaunchCompletion();
    cudaGridDependencySynchronize();
#endif
}

static int pdl_on; /* the device is sm_90 or later */

/* ---- streams shaped like decode products (rows of 5120 bytes: 2560 bf16 columns) ---- */
#define ROWB 5120
#define RCH  (ROWB / 512) /* a warp's 512-byte chunks per row */

/* Eight bf16 as fp32: the top half of a word by mask, the bottom half by shift (as
 * kernels/kcommon.cuh unpack16). */
__device__ __forceinline__ void bf16x8(uint4 u, float *f) {
    const unsigned v[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; i++) {
        f[2 * i] = __uint_as_float(v[i] << 16);
        f[2 * i + 1] = __uint_as_float(v[i] & 0xffff0000u);
    }
}

/* The arithmetic of a matrix-vector product on one chunk (MATH): 8 bf16 weights against the
 * lane's 8 floats of x (two 16-byte loads through L1, as matvec.cu's kernels do); else the
 * trivial fold. */
template <bool MATH, bool XS = false>
__device__ __forceinline__ float chunk_dot(uint4 u, const float *__restrict__ x, int col,
                                           float acc) {
    if (!MATH) return acc + fold(u);
    const float4 *xp = reinterpret_cast<const float4 *>(x + col);
    const float4 a = XS ? xp[0] : __ldg(xp), b = XS ? xp[1] : __ldg(xp + 1); /* XS: shared */
    float w[8];
    bf16x8(u, w);
    return acc + (w[0] * a.x + w[1] * a.y + w[2] * a.z + w[3] * a.w) +
           (w[4] * b.x + w[5] * b.y + w[6] * b.z + w[7] * b.w);
}

/* The same arithmetic with x in bf16 (XB): one 16-byte load of x a chunk instead of two, and
 * x's 8 values unpacked like the weights'. */
__device__ __forceinline__ float chunk_dot_xb(uint4 u, const float *__restrict__ x, int col,
                                              float acc) {
    float w[8], a[8];
    bf16x8(u, w);
    bf16x8(__ldg(reinterpret_cast<const uint4 *>(reinterpret_cast<const uint16_t *>(x) + col)), a);
    return acc + (w[0] * a[0] + w[1] * a[1] + w[2] * a[2] + w[3] * a[3]) +
           (w[4] * a[4] + w[5] * a[5] + w[6] * a[6] + w[7] * a[7]);
}

/* ms per call of launch(): one call to warm up, then reps timed with events on stream s. */
template <typename F> static float time_reps(cudaStream_t s, int reps, F launch) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    launch();
    CK(cudaStreamSynchronize(s));
    CK(cudaEventRecord(e0, s));
    for (int r = 0; r < reps; r++)
        launch();
    CK(cudaEventRecord(e1, s));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return ms / reps;
}

/* The copy bandwidth, as bench/bench_gpu.sh measures the floor: a device-to-device copy of
 * 1 GiB on s, read and written bytes over the time (GB/s). */
static inline double copy_gbs_measure(cudaStream_t s) {
    const size_t cb = (size_t)1 << 30;
    void *c0, *c1;
    CK(cudaMalloc(&c0, cb));
    CK(cudaMalloc(&c1, cb));
    const float ms =
        time_reps(s, 10, [&] { CK(cudaMemcpyAsync(c1, c0, cb, cudaMemcpyDeviceToDevice, s)); });
    CK(cudaFree(c0));
    CK(cudaFree(c1));
    return 2.0 * cb / (ms * 1e-3) / 1e9;
}

/* ms per step of a persistent kernel (cooperative launch, grid blocks of nt threads). */
static inline float time_graph(cudaGraphExec_t ge, cudaStream_t s, int reps) {
    return time_reps(s, reps, [&] { CK(cudaGraphLaunch(ge, s)); });
}

/* k on s with programmatic dependent launch (where the device has it), in clusters of cl blocks
 * along x when cl > 1 (sm_90 and later) */
template <typename... KArgs, typename... Args>
static void launch_pdl_cl(void (*k)(KArgs...), int grid, int threads, size_t smem, cudaStream_t s,
                          int cl, Args... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cudaLaunchAttribute at[2];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = pdl_on;
    at[1].id = cudaLaunchAttributeClusterDimension;
    at[1].val.clusterDim.x = cl, at[1].val.clusterDim.y = 1, at[1].val.clusterDim.z = 1;
    cfg.attrs = at;
    cfg.numAttrs = cl > 1 ? 2 : 1;
    CK(cudaLaunchKernelEx(&cfg, k, ((KArgs)args)...));
}

template <typename... KArgs, typename... Args>
static void launch_pdl_ex(void (*k)(KArgs...), int grid, int threads, size_t smem, cudaStream_t s,
                          Args... args) {
    launch_pdl_cl(k, grid, threads, smem, s, 1, args...);
}

template <typename... KArgs, typename... Args>
static void launch_pdl(void (*k)(KArgs...), int grid, size_t smem, cudaStream_t s, Args... args) {
    launch_pdl_ex(k, grid, THREADS, smem, s, args...);
}

/* The step's bytes in device memory, its phases, and the floor at this device's copy
 * bandwidth; prints the device line. */
struct step_setup {
    int sms, n_ph, n_small, n_stream;
    phase *ph, *dph; /* host, device */
    size_t words;    /* 16-byte words of weights */
    uint4 *w;
    float *x, *sink;
    cudaStream_t s;
    double bytes, copy_gbs, floor_ms;
};

static inline step_setup step_setup_new(void) {
    step_setup S = {};
    int dev = 0, major;
    CK(cudaDeviceGetAttribute(&S.sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    pdl_on = major >= 9;
    S.n_ph = NL * NSTEPS;
    S.ph = (phase *)malloc(S.n_ph * sizeof *S.ph);
    for (int l = 0; l < NL; l++)
        for (int i = 0; i < NSTEPS; i++) {
            const size_t n16 = (size_t)(LAYER[i] * 1e6 / 16);
            S.ph[l * NSTEPS + i] = (phase){S.words, n16};
            S.words += n16;
            S.n_small += !n16;
            S.n_stream += !!n16;
        }
    S.bytes = 16.0 * S.words;
    CK(cudaMalloc(&S.w, S.words * 16));
    CK(cudaMemset(S.w, 0x3c, S.words * 16));
    CK(cudaMalloc(&S.x, SMALL_N * sizeof(float)));
    CK(cudaMemset(S.x, 0, SMALL_N * sizeof(float)));
    CK(cudaMalloc(&S.sink, (size_t)64 << 20));
    CK(cudaMalloc(&S.dph, S.n_ph * sizeof *S.ph));
    CK(cudaMemcpy(S.dph, S.ph, S.n_ph * sizeof *S.ph, cudaMemcpyHostToDevice));
    CK(cudaStreamCreateWithFlags(&S.s, cudaStreamNonBlocking));

    S.copy_gbs = copy_gbs_measure(S.s);
    S.floor_ms = S.bytes / (S.copy_gbs * 1e9) * 1e3;
    printf("device: %d SMs, copy bandwidth %.0f GB/s; one step streams %.3f GB in %d streams with "
           "%d small ops: floor %.3f ms\n",
           S.sms, S.copy_gbs, S.bytes / 1e9, S.n_stream, S.n_small, S.floor_ms);
    return S;
}

#endif
