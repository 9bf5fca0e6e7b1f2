/* read_rate.cu: how fast this GPU's memory can be read, by the two ways our kernels read weights,
 * against the copy bandwidth that bench/bench_gpu.sh's floor is measured by.
 *
 * Why. The decode step's floor is its bytes over the device-to-device copy bandwidth (read and
 * written bytes over the time: 4270 GB/s on the H200). The whole-MLP kernel (kernels/mlp.cu)
 * streams at 4.22 TB/s, 99 % of that; but the lm_head product (kernels/matvec.cu, plain 16-byte
 * loads) reads its 1.34 GB in 295 us, 4.55 TB/s (a traced step). If a read-only stream
 * can beat the copy by 6 %, the MLP's copy-engine ring may be leaving 2-3 us a layer. This
 * separates the engine from the arithmetic: the same bytes (42 layers of E4B's MLP, 6.6 GB,
 * far beyond L2) read
 *   - by plain 16-byte loads, U in flight a thread, blocks of 256 or 320 threads, each block a
 *     contiguous slice (the lm_head's way; the 320-thread form is what an MLP block without its
 *     ring would do: one 5 KB row a pass, 16 bytes a thread);
 *   - by mlp.cu's producer: one block a multiprocessor, a warp copying 5 KB rows (or 10 KB) into
 *     a 100 KB ring of shared memory with cp.async.bulk, at most D rows asked for and not landed,
 *     320 consumer threads reading their 16 bytes of each row and freeing its stage.
 * Each form's GB/s is the bytes read over the time (mean of REPS passes after one warm-up).
 *
 * sm_90 and later (cp.async.bulk). nvcc -O3 -arch=sm_90 -std=c++17 -o read_rate
 * dev/cuda/read_rate.cu && ./read_rate */
#include "../../kernels/bulk.cuh"
#include "step_common.cuh"

#define RR_LAYER (3.0 * 2560 * 10240 * 2) /* bytes of one E4B MLP: 157.3 MB */
#define RR_REPS  5

/* Plain loads: block b reads 16-byte words [b n / G, (b + 1) n / G), U loads in flight a thread. */
template <int UN> __global__ void read_lsu(const uint4 *__restrict__ w, size_t n16, float *sink) {
    const size_t G = gridDim.x, b = blockIdx.x;
    const size_t lo = n16 * b / G, hi = n16 * (b + 1) / G;
    float acc = 0.0f;
    for (size_t i = lo + threadIdx.x; i < hi; i += (size_t)blockDim.x * UN) {
        uint4 u[UN];
#pragma unroll
        for (int k = 0; k < UN; k++) {
            const size_t j = i + (size_t)k * blockDim.x;
            u[k] = j < hi ? __ldcs(w + j) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (int k = 0; k < UN; k++)
            acc += fold(u[k]);
    }
    if (acc == 123.0f) sink[b] = acc; /* never true; keeps the loads */
}

__device__ __forceinline__ unsigned long long rr_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* mlp.cu's ring without the arithmetic: rows of R bytes, S stages, at most D rows in flight.
 * stamps (or NULL): each block's start and end (%globaltimer), two words a block. */
__global__ void read_ring(const unsigned char *__restrict__ w, size_t rows, int R, int S, int D,
                          float *sink, unsigned long long *stamps) {
    if (stamps && threadIdx.x == 0) stamps[2 * blockIdx.x] = rr_now();
    extern __shared__ __align__(128) unsigned char ring[];
    uint64_t *full = reinterpret_cast<uint64_t *>(ring + (size_t)S * R), *empty = full + S;
    const int CTn = (int)blockDim.x - 32, CWn = CTn / 32, warp = threadIdx.x >> 5,
              lane = threadIdx.x & 31;
    const size_t G = gridDim.x, r0 = rows * blockIdx.x / G, r1 = rows * (blockIdx.x + 1) / G;
    ring_init(full, empty, S, CWn);
    __syncthreads();
    if (warp == CWn) {
        if (lane == 0) {
            ring_producer p;
            for (size_t r = r0; r < r1; r++)
                p.put(ring, full, empty, S, D, w + r * R, R);
        }
        return;
    }
    unsigned st = 0, ph = 0;
    float acc = 0.0f;
    for (size_t r = r0; r < r1; r++) {
        mbar_wait(&full[st], ph);
        for (int c = threadIdx.x; c < R / 16; c += CTn)
            acc += fold(reinterpret_cast<const uint4 *>(ring + (size_t)st * R)[c]);
        __syncwarp();
        if (lane == 0) mbar_arrive(&empty[st]);
        if (++st == (unsigned)S) st = 0, ph ^= 1;
    }
    if (acc == 123.0f) sink[blockIdx.x] = acc;
    if (stamps) {
        __syncthreads(); /* the producer warp has returned: the consumers' count */
        if (threadIdx.x == 0) stamps[2 * blockIdx.x + 1] = rr_now();
    }
}

static int cmp_ull(const void *a, const void *b) {
    const unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

/* One form's line: launch() (one pass over the bytes) timed by time_reps on s. */
template <typename F>
static void rr_report(cudaStream_t s, const char *label, double bytes, double copy, F launch) {
    const double gbs = bytes / (time_reps(s, RR_REPS, launch) * 1e-3) / 1e9;
    CK(cudaGetLastError());
    printf("  %-52s %6.0f GB/s  %5.1f %% of copy  (an MLP layer %.2f us)\n", label, gbs,
           100.0 * gbs / copy, RR_LAYER / (gbs * 1e9) * 1e6);
}

int main(void) {
    int dev = 0, sms = 0, major = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 9) {
        printf("read_rate: needs sm_90 or later (cp.async.bulk)\n");
        return 0;
    }
    const size_t bytes = (size_t)(42 * RR_LAYER) / 10240 * 10240; /* whole 10 KB rows */
    unsigned char *w = NULL;
    float *sink = NULL;
    CK(cudaMalloc((void **)&w, bytes));
    CK(cudaMalloc((void **)&sink, 1 << 20));
    CK(cudaMemset(w, 0x3c, bytes));
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const double copy = copy_gbs_measure(s);
    printf("read_rate: %d SMs, %.2f GB read a pass (42 E4B MLPs), copy bandwidth %.0f GB/s\n", sms,
           bytes / 1e9, copy);

    const size_t n16 = bytes / 16;
    char label[96];
    for (int bps = 1; bps <= 8; bps *= 2) {
        snprintf(label, sizeof label, "plain loads, 256 threads, %d blocks/SM, U = 8", bps);
        rr_report(s, label, bytes, copy,
                  [&] { read_lsu<8><<<sms * bps, 256, 0, s>>>((const uint4 *)w, n16, sink); });
        snprintf(label, sizeof label, "plain loads, 256 threads, %d blocks/SM, U = 16", bps);
        rr_report(s, label, bytes, copy,
                  [&] { read_lsu<16><<<sms * bps, 256, 0, s>>>((const uint4 *)w, n16, sink); });
    }
    rr_report(s, "plain loads, 320 threads, 1 block/SM, U = 8 (an MLP block)", bytes, copy,
              [&] { read_lsu<8><<<sms, 320, 0, s>>>((const uint4 *)w, n16, sink); });
    rr_report(s, "plain loads, 320 threads, 1 block/SM, U = 16", bytes, copy,
              [&] { read_lsu<16><<<sms, 320, 0, s>>>((const uint4 *)w, n16, sink); });
    rr_report(s, "plain loads, 320 threads, 1 block/SM, U = 32", bytes, copy,
              [&] { read_lsu<32><<<sms, 320, 0, s>>>((const uint4 *)w, n16, sink); });
    rr_report(s, "plain loads, 256 threads, 65536 blocks, U = 4 (lm_head-like)", bytes, copy,
              [&] { read_lsu<4><<<65536, 256, 0, s>>>((const uint4 *)w, n16, sink); });

    const int ring = 100 * 1024;
    for (int R = 5120; R <= 10240; R *= 2) {
        const int S = ring / R;
        const size_t smem = (size_t)S * (R + 16);
        CK(cudaFuncSetAttribute(read_ring, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        const int depths[] = {6, 12, 16, S};
        for (int d = 0; d < 4; d++) {
            const int D = R == 5120 ? depths[d] : d == 3 ? S : depths[d] / 2;
            snprintf(label, sizeof label, "copy-engine ring, rows of %d KB, %d in flight%s",
                     R / 1024, D, D >= S ? " (no limit)" : "");
            rr_report(s, label, bytes, copy,
                      [&] { read_ring<<<sms, 352, smem, s>>>(w, bytes / R, R, S, D, sink, NULL); });
        }
    }
    /* One MLP layer's bytes (157 MB) a launch, each block's end stamped: how far the slowest
     * block is behind the others with a static share each (mlp.cu's split) - the tail a
     * kernel pays at its end. 20 launches over different layers; us after the first start. */
    {
        const int R = 5120, S = 20, D = 12;
        const size_t smem = (size_t)S * (R + 16), lrows = (size_t)(RR_LAYER / R);
        CK(cudaFuncSetAttribute(read_ring, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        unsigned long long *dst = NULL, *hs = (unsigned long long *)malloc(2 * sms * 8),
                           *ends = (unsigned long long *)malloc(sms * 8);
        CK(cudaMalloc((void **)&dst, 2 * sms * 8));
        double q[5] = {0, 0, 0, 0, 0}, last_start = 0;
        const int L = 20;
        for (int l = -1; l < L; l++) {
            const unsigned char *wl = w + (size_t)((l < 0 ? 0 : l) % 40) * lrows * R;
            read_ring<<<sms, 352, smem, s>>>(wl, lrows, R, S, D, sink, dst);
            CK(cudaDeviceSynchronize());
            if (l < 0) continue;
            CK(cudaMemcpy(hs, dst, 2 * sms * 8, cudaMemcpyDeviceToHost));
            unsigned long long t0 = ~0ull, s1 = 0;
            for (int b = 0; b < sms; b++) {
                if (hs[2 * b] < t0) t0 = hs[2 * b];
                if (hs[2 * b] > s1) s1 = hs[2 * b];
            }
            for (int b = 0; b < sms; b++)
                ends[b] = hs[2 * b + 1] - t0;
            qsort(ends, sms, 8, cmp_ull);
            const int at[5] = {0, sms / 10, sms / 2, sms - 1 - sms / 10, sms - 1};
            for (int k = 0; k < 5; k++)
                q[k] += ends[at[k]] / 1e3 / L;
            last_start += (s1 - t0) / 1e3 / L;
        }
        printf("one MLP layer a launch (157 MB, rows of 5 KB, 12 in flight), block ends, us after "
               "the first block's start (mean of %d):\n  first %.2f  10 %% %.2f  median %.2f  "
               "90 %% %.2f  last %.2f  (last block start %.2f; at %.0f GB/s the bytes take %.2f)\n",
               L, q[0], q[1], q[2], q[3], q[4], last_start, copy, RR_LAYER / (copy * 1e9) * 1e6);
        CK(cudaFree(dst));
        free(hs);
        free(ends);
    }
    CK(cudaStreamDestroy(s));
    CK(cudaFree(w));
    CK(cudaFree(sink));
    return 0;
}
