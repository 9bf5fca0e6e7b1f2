/* bulk.cuh: the copy engine (cp.async.bulk) and shared-memory mbarriers as inline PTX, shared by
 * kernels/mlp.cu and kernels/mlp_mma.cu and the experiments dev/cuda/step_mega.cu, mlp_slice.cu,
 * step_slice.cu, read_rate.cu and ring_race.cu:
 * a producer thread streams weights into a ring of shared-memory stages, consumers wait on a
 * stage's transaction count and free it again. Before sm_90 the helpers are empty (BULK_OK 0): the
 * kernels that use them are not launched there (mlp.cu) or the benchmarks refuse to run. */
#ifndef BULK_CUH
#define BULK_CUH

#include <stdint.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define BULK_OK 1
#else
#define BULK_OK 0
#endif
__device__ __forceinline__ unsigned smem_u32(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void mbar_init(uint64_t *b, unsigned count) {
#if BULK_OK
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(b)), "r"(count));
#endif
}
__device__ __forceinline__ void mbar_arrive(uint64_t *b) {
#if BULK_OK
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(b)) : "memory");
#endif
}
__device__ __forceinline__ void mbar_expect(uint64_t *b, unsigned bytes) {
#if BULK_OK
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(b)),
                 "r"(bytes)
                 : "memory");
#endif
}
__device__ __forceinline__ void mbar_wait(uint64_t *b, unsigned parity) {
#if BULK_OK
    asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 " @!p bra W;\n}" ::"r"(smem_u32(b)),
                 "r"(parity)
                 : "memory");
#endif
}
__device__ __forceinline__ void bulk_copy(void *dst, const void *src, unsigned bytes,
                                          uint64_t *bar) {
#if BULK_OK
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], "
                 "%2, [%3];" ::"r"(smem_u32(dst)),
                 "l"(src), "r"(bytes), "r"(smem_u32(bar))
                 : "memory");
#endif
}

/* Ask L2 for bytes at src (a multiple of 16) without waiting: the copy engine's prefetch. */
__device__ __forceinline__ void bulk_prefetch_l2(const void *src, unsigned bytes) {
#if BULK_OK
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
#endif
}

/* A ring of S stages: full[i] completes when stage i's bytes have landed (one arrival, the
 * producer's expect_tx), empty[i] after `arrivals` frees: one a consumer warp where lane 0 frees
 * for its warp (the benchmarks), one a reading thread in the kernels (mlp.cu: 32 a warp;
 * mlp_mma.cu: the 4 lanes that read a row) - racecheck accepts only the latter (ring_take_at
 * below). Thread 0 of the block initialises; the caller then synchronises the block. */
__device__ __forceinline__ void ring_init(uint64_t *full, uint64_t *empty, int S,
                                          unsigned arrivals) {
    if (threadIdx.x == 0) {
        for (int i = 0; i < S; i++) {
            mbar_init(&full[i], 1);
            mbar_init(&empty[i], arrivals);
        }
#if BULK_OK
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
    }
}

/* Producer side of such a ring, the g-th row put in of S stages (a compile-time count, so
 * g % S is a multiply and a shift; kernels/mlp.cu steps the stage instead, for a runtime S):
 * wait until its stage has been freed (from the second round on), then copy row_bytes at src
 * into it. */
template <int S>
__device__ __forceinline__ void ring_put_at(unsigned char *ring, uint64_t *full, uint64_t *empty,
                                            unsigned g, const void *src, unsigned row_bytes) {
    const unsigned st = g % S;
    if (g >= S) mbar_wait(&empty[st], ((g / S) - 1) & 1);
    mbar_expect(&full[st], row_bytes);
    bulk_copy(ring + (size_t)st * row_bytes, src, row_bytes, &full[st]);
}

/* Producer side of a ring of S one-row stages, S known only at run time (kernels/mlp.cu, and
 * dev/cuda/read_rate.cu, which measures the same producer without the arithmetic): put() copies the
 * next row once at most `depth` rows are asked for and not landed (Little's law: more only
 * queues - mlp.cu's mlp_depth) and its stage has been freed. It steps the stage instead of
 * taking g % S (a runtime modulo per row doubles a consumer's instructions). One
 * thread calls it. (g counts only under a limit; written so, this is the code measured.) Stages
 * are `stride` bytes apart, row_bytes unless given (mlp_mma.cu pads them for ldmatrix). */
struct ring_producer {
    unsigned st = 0, round = 0;       /* the stage, and how often the ring has been filled */
    unsigned lst = 0, lph = 0, g = 0; /* row g - depth's stage and parity; rows put */
    __device__ __forceinline__ void put(unsigned char *ring, uint64_t *full, uint64_t *empty, int S,
                                        int depth, const void *src, unsigned row_bytes,
                                        unsigned stride = 0) {
        /* row g - depth's stage is refilled only at g - depth + S > g */
        if (depth < S && g++ >= (unsigned)depth) {
            mbar_wait(&full[lst], lph);
            if (++lst == (unsigned)S) lst = 0, lph ^= 1;
        }
        if (round) mbar_wait(&empty[st], (round - 1) & 1);
        mbar_expect(&full[st], row_bytes);
        bulk_copy(ring + (size_t)st * (stride ? stride : row_bytes), src, row_bytes, &full[st]);
        if (++st == (unsigned)S) st = 0, round++;
    }
};

/* Wait until the g-th row put in has landed in its stage. */
template <int S> __device__ __forceinline__ void ring_wait_landed(uint64_t *full, unsigned g) {
    mbar_wait(&full[g % S], (g / S) & 1);
}

/* Consumer side, row g: wait until it has landed, read thread t's 16 bytes, free the stage (one
 * arrival a warp, by lane 0 after a __syncwarp). racecheck reports this form once the ring wraps
 * - it does not take the __syncwarp as ordering the other lanes' reads before lane 0's arrival
 * (dev/cuda/ring_race.cu shows it) - so the kernels free by every reading thread instead
 * (mlp.cu's ring_take); the benchmarks that use it are not run under the sanitizers. */
template <int S>
__device__ __forceinline__ uint4 ring_take_at(const unsigned char *ring, uint64_t *full,
                                              uint64_t *empty, unsigned g, int row_bytes, int t,
                                              int lane) {
    const unsigned st = g % S;
    ring_wait_landed<S>(full, g);
    const uint4 u = reinterpret_cast<const uint4 *>(ring + (size_t)st * row_bytes)[t];
    __syncwarp();
    if (lane == 0) mbar_arrive(&empty[st]);
    return u;
}

/* A named barrier (id 1) of n threads of the block: mlp.cu's consumer warps (and over several
 * inputs its reducer warp; the producer warp never comes to it). The unaligned form,
 * barrier.sync: the consumers and the reducer reach it from different instructions, which
 * bar.sync (= barrier.sync.aligned) does not allow (compute-sanitizer's synccheck reports
 * "divergent thread(s)" there). */
__device__ __forceinline__ void bar_consumers(int n) {
    asm volatile("barrier.sync 1, %0;" ::"r"(n) : "memory");
}
__device__ __forceinline__ unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

#endif
