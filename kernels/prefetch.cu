/* prefetch.cu: ask the L2 cache to fetch ranges of device memory before a kernel reads them.
 *
 * Why. A decode step is a chain of kernels, and only the matrix products stream weights at
 * memory speed: during the small kernels between them (norms, RoPE, attention) and the ramp and
 * tail of each product, DRAM idles. The backend (backend_cuda_prefetch.c) hangs a side branch
 * on the step's CUDA graph that, as each product starts, asks L2 for the weights of the products
 * that follow it, so they arrive while the chain is busy with something else and the product
 * that reads them later finds them in L2. Nothing here changes a result: a prefetch is a hint.
 *
 * How. On sm_90 one thread issues one bulk prefetch (cp.async.bulk.prefetch.L2, the copy
 * engine does the rest) per 64 KB: a few hundred instructions for a few tens of MB, so the
 * kernel ends in microseconds and holds no multiprocessor while the data moves. Before sm_90
 * (and with K_L2_LINES) every thread asks for 128-byte lines (prefetch.global.L2), which needs
 * more threads but works everywhere from sm_80. K_L2_*_LAST marks the lines evict_last so the
 * streaming loads of the product in between (ld.global.cs, evict-first) leave them alone. */
#include "kcommon.cuh"

#define L2_CHUNK (64u << 10) /* bytes per bulk prefetch */
#define L2_LINE  128u

struct l2_list {
    const char *p[K_L2_RANGES];
    unsigned long long bytes[K_L2_RANGES];
    int n;
};

/* Ask for lines [off, bytes) of one range, a line per thread and step. */
template <bool LAST>
__device__ __forceinline__ void l2_lines(const char *p, unsigned long long bytes,
                                         unsigned long long t, unsigned long long nt) {
    for (unsigned long long off = t * L2_LINE; off < bytes; off += nt * L2_LINE) {
        if (LAST)
            asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p + off));
        else
            asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
    }
}

/* Ask for chunks of one range, a 64 KB bulk prefetch per thread and step (sm_90). */
template <bool LAST>
__device__ __forceinline__ void l2_bulk(const char *p, unsigned long long bytes,
                                        unsigned long long t, unsigned long long nt) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    unsigned long long policy = 0;
    if (LAST) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
    for (unsigned long long off = t * L2_CHUNK; off < bytes; off += nt * L2_CHUNK) {
        const unsigned long long left = bytes - off;
        const unsigned len = (unsigned)(left < L2_CHUNK ? left : L2_CHUNK) & ~15u;
        if (!len) continue;
        if (LAST)
            asm volatile(
                "cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(p + off),
                "r"(len), "l"(policy)
                : "memory");
        else
            asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p + off), "r"(len)
                         : "memory");
    }
#else
    l2_lines<LAST>(p, bytes, t, nt);
#endif
}

template <int MODE> __global__ void l2_prefetch_kernel(const __grid_constant__ l2_list L) {
    const unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long nt = (unsigned long long)gridDim.x * blockDim.x;
    constexpr bool last = MODE == K_L2_BULK_LAST || MODE == K_L2_LINES_LAST;
    for (int r = 0; r < L.n; r++) {
        if (MODE == K_L2_BULK || MODE == K_L2_BULK_LAST)
            l2_bulk<last>(L.p[r], L.bytes[r], t, nt);
        else
            l2_lines<last>(L.p[r], L.bytes[r], t, nt);
    }
}

extern "C" void k_l2_prefetch(cudaStream_t s, const k_l2_range *ranges, int n, int mode) {
    if (n < 1 || n > K_L2_RANGES || mode < K_L2_BULK || mode > K_L2_NONE) {
        fprintf(stderr, "%s:%d: k_l2_prefetch: %d ranges (1 .. %d), mode %d\n", __FILE__, __LINE__,
                n, K_L2_RANGES, mode);
        exit(1);
    }
    l2_list L = {};
    unsigned long long total = 0;
    for (int i = 0; i < n; i++) {
        L.p[i] = (const char *)ranges[i].p;
        L.bytes[i] = ranges[i].bytes;
        total += ranges[i].bytes;
    }
    L.n = n;
    int dev = 0, major = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    const int bulk = major >= 9 && (mode == K_L2_BULK || mode == K_L2_BULK_LAST);
    /* bulk: a thread per 64 KB chunk, 32 threads a block so that the chunks spread over the
     * multiprocessors (each has its own copy engine); lines: a thread per 8 lines, 256 threads a
     * block; at most 64 blocks */
    const unsigned long long units =
        bulk ? (total + L2_CHUNK - 1) / L2_CHUNK : (total + 8ull * L2_LINE - 1) / (8ull * L2_LINE);
    const unsigned threads = bulk ? 32 : 256;
    unsigned blocks = (unsigned)((units + threads - 1) / threads);
    if (blocks > 64) blocks = 64;
    if (blocks < 1) blocks = 1;
    /* A plain launch: the prefetch branch waits on nothing of its own stream's order. */
    switch (mode) {
    case K_L2_BULK:
        l2_prefetch_kernel<K_L2_BULK><<<blocks, threads, 0, s>>>(L);
        break;
    case K_L2_BULK_LAST:
        l2_prefetch_kernel<K_L2_BULK_LAST><<<blocks, threads, 0, s>>>(L);
        break;
    case K_L2_LINES:
        l2_prefetch_kernel<K_L2_LINES><<<blocks, threads, 0, s>>>(L);
        break;
    case K_L2_LINES_LAST:
        l2_prefetch_kernel<K_L2_LINES_LAST><<<blocks, threads, 0, s>>>(L);
        break;
    default:
        L.n = 0;
        l2_prefetch_kernel<K_L2_NONE><<<1, 32, 0, s>>>(L);
        break;
    }
    K_CHECK_LAUNCH();
}
