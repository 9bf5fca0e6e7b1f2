/* ring_race.cu: what compute-sanitizer's racecheck and synccheck say of the ways a warp can take
 * the rows of a shared-memory ring that the copy engine fills (bulk.cuh). The whole-MLP kernels
 * (kernels/mlp.cu, and mlp_mma.cu, whose gate / up reads take tiles of 8 rows) must pass the
 * test command's racecheck and synccheck, and the tools can flag a way of taking a row that the
 * ring's mbarriers do order; the op test alone cannot show which, as its shapes may never
 * wrap the ring. Here each way runs alone, on a ring that wraps.
 *
 * One block: a producer warp streams N rows of 512 bytes (a warp's 32 x 16 bytes) through
 * S = 16 stages; one consumer warp takes them in one of these forms and adds up the words it
 * read, which the host checks against the rows (a form that reads a stage too early or too late
 * gets another sum):
 *   0  row     one row at a time: every lane waits for the row, reads its 16 bytes, __syncwarp,
 *              lane 0 frees the row (mlp.cu's ring_take with one arrival a warp)
 *   1  quad    tiles of 8 rows, row by row: every lane waits for row r, the 4 lanes of quad r
 *              read their 32 words (every fourth), __syncwarp, lane 0 frees row r (a
 *              tensor-core gate / up tile read row by row)
 *   2  own     tiles of 8 rows: each lane waits for its quad's row and reads its 32 words,
 *              __syncwarp, lane 0 frees the tile's 8 rows (the tile read at once)
 *   3  tensor  form 2 with the rows copied through a tensor map (cp.async.bulk.tensor), whose
 *              writes racecheck is said not to attribute to a thread (flash-attention's note
 *              AI/RACECHECK_TMA_HAZARD.md)
 *   4  bar     form 0 with a second warp (mlp.cu's reducer) meeting the consumer after every
 *              8 rows at named barrier 1 through `bar.sync` (aligned) from its own call site
 *   5  barrier form 4 through `barrier.sync` (unaligned)
 *   6  sync    form 2 with the warp reconverged (__syncwarp) between the waits and the reads
 *   7  mma     form 6 with each k step's reads followed, before the free, by what the
 *              tensor-core MLP does between them: an ldmatrix of another shared tile and an
 *              mma.sync (its gate / up loop)
 *   8  lanes   form 0 with every lane freeing the row itself (an arrival count of 32, no
 *              __syncwarp)
 *   9  ownl    form 2 with every lane freeing the row it read itself (a row's 4 lanes: count 4;
 *              a lane freeing rows it did not wait for could complete a stage's next phase early)
 *
 * What the tools report: racecheck flags every form that frees a stage through lane 0 after a
 * __syncwarp - form 0 too - naming the reads of lanes 1-31 and never lane 0's, against the
 * producer's next copy into the stage: it does not take the __syncwarp as ordering the other
 * lanes' reads before lane 0's arrival. Form 3 is clean (the tensor map's writes are attributed
 * to no thread). synccheck reports form 4 (32 errors) and no other. Forms 8 and 9 are clean, and
 * so are mlp.cu and mlp_mma.cu, which free a stage from every lane that read it (docs/gpu.md,
 * "The whole MLP") and meet the reducer through `barrier.sync` (bulk.cuh's bar_consumers).
 *
 *   ring_race FORM [ROWS]   (ROWS a multiple of 8, default 256; sm_90 and later)
 *
 * Run each form under `compute-sanitizer --tool racecheck` and `--tool synccheck`: the verdicts
 * say which ways of taking a row the tools accept. It prints "ring_race: form F sum ok" or exits
 * 1 with the two sums. */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "../../kernels/bulk.cuh"
#include "step_common.cuh"

#define RR_ROW 512 /* bytes a row: a warp's 32 lanes x 16 bytes */
#define RR_S   16  /* stages */

enum { F_ROW, F_QUAD, F_OWN, F_TENSOR, F_BAR, F_BARRIER, F_SYNC, F_MMA, F_LANES, F_OWNL, F_COUNT };

/* The copy of row g into stage st: raw (cp.async.bulk) or through the tensor map (rows x 256
 * bf16, a box of one row). */
__device__ __forceinline__ void rr_copy(unsigned char *dst, const unsigned char *rows, unsigned g,
                                        const CUtensorMap *map, uint64_t *bar) {
#if BULK_OK
    if (map)
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::"
                     "bytes [%0], [%1, {%2, %3}], [%4];" ::"r"(smem_u32(dst)),
                     "l"(map), "r"(0), "r"(g), "r"(smem_u32(bar))
                     : "memory");
    else
        bulk_copy(dst, rows + (size_t)g * RR_ROW, RR_ROW, bar);
#endif
}

/* Named barrier 1 over n threads, aligned (bar.sync, which needs every thread at the same call
 * site) or not (barrier.sync, the form of bulk.cuh's bar_consumers). */
__device__ __forceinline__ void rr_bar(int aligned, int n) {
    if (aligned)
        asm volatile("bar.sync 1, %0;" ::"r"(n) : "memory");
    else
        asm volatile("barrier.sync 1, %0;" ::"r"(n) : "memory");
}

/* F_MMA's work between reads: ldmatrix.x4 of a 16 x 16 bf16 tile at this lane's row address,
 * then d += A B (m16n8k16) with A that tile and B two of its registers. */
__device__ __forceinline__ void rr_mma(float d[4], const unsigned char *row) {
#if BULK_OK
    unsigned a[4];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a[0]), "=r"(a[1]), "=r"(a[2]), "=r"(a[3])
                 : "r"(smem_u32(row)));
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(a[0]), "r"(a[1]));
#endif
}

__global__ void ring_race(const unsigned char *__restrict__ rows, int n,
                          const __grid_constant__ CUtensorMap map, int form,
                          unsigned *__restrict__ sum) {
    extern __shared__ __align__(128) unsigned char ring[];
    uint64_t *full = reinterpret_cast<uint64_t *>(ring + RR_S * RR_ROW), *empty = full + RR_S;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const bool meet = form == F_BAR || form == F_BARRIER; /* a second warp meets the consumer */
    ring_init(full, empty, RR_S, form == F_LANES ? 32 : form == F_OWNL ? 4 : 1);
    __syncthreads();
    if (warp == 1) { /* the producer */
        if (lane == 0)
            for (int r = 0; r < n; r++) {
                const unsigned st = r % RR_S;
                if (r >= RR_S) mbar_wait(&empty[st], ((r / RR_S) - 1) & 1);
                mbar_expect(&full[st], RR_ROW);
                rr_copy(ring + st * RR_ROW, rows, r, form == F_TENSOR ? &map : NULL, &full[st]);
            }
        return;
    }
    if (warp == 2) { /* the reducer's place: meets the consumer after every 8 rows */
        for (int r = 0; r < n; r += 8)
            rr_bar(form == F_BAR, 64);
        return;
    }
    const unsigned *words = reinterpret_cast<const unsigned *>(ring);
    unsigned acc = 0;
    unsigned char *tile = ring + RR_S * RR_ROW + 16 * RR_S; /* F_MMA's other tile: 16 x 16 bf16 */
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (form == F_MMA) {
        reinterpret_cast<unsigned *>(tile)[lane] = 0x3f803f80u * (lane & 1); /* ones and zeros */
        reinterpret_cast<unsigned *>(tile)[lane + 32] = 0u;
        __syncwarp();
    }
    for (int r0 = 0; r0 < n; r0 += 8) { /* tiles of 8 rows */
        const unsigned st0 = r0 % RR_S, ph = (r0 / RR_S) & 1;
        if (form == F_ROW || form == F_LANES || meet) {
            for (int r = 0; r < 8; r++) {
                mbar_wait(&full[st0 + r], ph);
                const uint4 u = reinterpret_cast<const uint4 *>(ring + (st0 + r) * RR_ROW)[lane];
                acc += u.x + u.y + u.z + u.w;
                if (form == F_LANES) {
                    mbar_arrive(&empty[st0 + r]);
                    continue;
                }
                __syncwarp();
                if (lane == 0) mbar_arrive(&empty[st0 + r]);
            }
            if (meet) {
                __syncwarp();
                rr_bar(form == F_BAR, 64);
            }
        } else if (form == F_QUAD) {
            for (int r = 0; r < 8; r++) {
                mbar_wait(&full[st0 + r], ph);
                if (g == r)
                    for (int s = 0; s < 32; s++)
                        acc += words[(st0 + r) * (RR_ROW / 4) + 4 * s + t];
                __syncwarp();
                if (lane == 0) mbar_arrive(&empty[st0 + r]);
            }
        } else { /* F_OWN, F_TENSOR, F_SYNC, F_MMA, F_OWNL */
            mbar_wait(&full[st0 + g], ph);
            if (form == F_SYNC || form == F_MMA) __syncwarp();
            for (int s = 0; s < 32; s++) {
                acc += words[(st0 + g) * (RR_ROW / 4) + 4 * s + t];
                if (form == F_MMA) rr_mma(d, tile + 16 * (lane & 15));
            }
            if (form == F_OWNL) {
                mbar_arrive(&empty[st0 + g]);
                continue;
            }
            __syncwarp();
            for (int r = 0; r < 8 && lane == 0; r++)
                mbar_arrive(&empty[st0 + r]);
        }
    }
    if (d[0] == 123.0f) acc = 0; /* never true: keeps F_MMA's products */
    atomicAdd(sum, acc);
}

int main(int argc, char **argv) {
    const int form = argc > 1 ? atoi(argv[1]) : -1, n = argc > 2 ? atoi(argv[2]) : 256;
    if (form < 0 || form >= F_COUNT || n <= 0 || n % 8) {
        fprintf(stderr, "usage: ring_race FORM(0-%d) [ROWS, a multiple of 8]\n", F_COUNT - 1);
        return 2;
    }
    int dev = 0, major = 0;
    CK(cudaGetDevice(&dev));
    CK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    if (major < 9) {
        printf("ring_race: needs sm_90 or later (cp.async.bulk)\n");
        return 0;
    }
    const size_t bytes = (size_t)n * RR_ROW;
    unsigned *host = (unsigned *)malloc(bytes), want = 0;
    srand(12345);
    for (size_t i = 0; i < bytes / 4; i++)
        want += host[i] = (unsigned)rand() * 2654435761u;
    unsigned char *rows = NULL;
    unsigned *sum = NULL;
    CK(cudaMalloc((void **)&rows, bytes));
    CK(cudaMalloc((void **)&sum, sizeof *sum));
    CK(cudaMemcpy(rows, host, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(sum, 0, sizeof *sum));
    CUtensorMap map;
    memset(&map, 0, sizeof map);
    if (form == F_TENSOR) { /* rows x 256 bf16; a box of one row */
        PFN_cuTensorMapEncodeTiled_v12000 encode = NULL;
        cudaDriverEntryPointQueryResult q;
        CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&encode, 12000,
                                            cudaEnableDefault, &q));
        const cuuint64_t dims[2] = {RR_ROW / 2, (cuuint64_t)n}, strides[1] = {RR_ROW};
        const cuuint32_t box[2] = {RR_ROW / 2, 1}, estr[2] = {1, 1};
        if (q != cudaDriverEntryPointSuccess || !encode ||
            encode(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, rows, dims, strides, box, estr,
                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                   CU_TENSOR_MAP_L2_PROMOTION_NONE,
                   CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
            fprintf(stderr, "ring_race: cuTensorMapEncodeTiled failed\n");
            return 1;
        }
    }
    const int threads = form == F_BAR || form == F_BARRIER ? 96 : 64;
    const size_t smem = RR_S * RR_ROW + 16 * RR_S + 256; /* the ring, its barriers, F_MMA's tile */
    ring_race<<<1, threads, smem>>>(rows, n, map, form, sum);
    CK(cudaGetLastError());
    unsigned got = 0;
    CK(cudaMemcpy(&got, sum, sizeof got, cudaMemcpyDeviceToHost));
    free(host);
    if (got != want) {
        fprintf(stderr, "ring_race: form %d sum %08x, the rows' %08x\n", form, got, want);
        return 1;
    }
    printf("ring_race: form %d sum ok\n", form);
    return 0;
}
