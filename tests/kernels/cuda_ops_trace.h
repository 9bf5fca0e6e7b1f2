/* cuda_ops_trace.h: a timeline of the decode steps that `cuda_ops decode-profile` measures, for
 * DECODE_PROFILE_TRACE=FILE - every kernel's start and end as the GPU saw them (CUPTI's
 * concurrent-kernel activity records, which include the kernel nodes of replayed CUDA graphs and
 * do not serialise the kernels). With programmatic dependent launch a kernel starts while the
 * one before it runs, so a kernel's duration says little; what it adds to the step is its end
 * minus the previous kernel's end. bench/trace_step.py reads the file and says that per kernel.
 * Included once, by cuda_ops.c (one translation unit); without CUPTI at build time
 * (HAVE_CUPTI unset) the switch is refused with a message.
 *
 * FILE: one line a kernel - start,end,name,grid x,block x,cluster x (CUPTI timestamps, ns) - and
 * a line "# measured T0 T1 STEPS", the window of the measured steps. With several runs in one
 * process (DECODE_PROFILE_CUSTOM) each rewrites FILE: the last run's is what stays. */
#ifdef HAVE_CUPTI
#include <cupti.h>
#include <errno.h>

static FILE *trace_out;
static const char *trace_path; /* for the messages */

#define CUPTI_OK(call)                                                                             \
    do {                                                                                           \
        CUptiResult r_ = (call);                                                                   \
        if (r_ != CUPTI_SUCCESS) {                                                                 \
            const char *m_ = "?";                                                                  \
            cuptiGetResultString(r_, &m_);                                                         \
            die("%s:%d: CUPTI: %s: %s", __FILE__, __LINE__, #call, m_);                            \
        }                                                                                          \
    } while (0)

static void CUPTIAPI trace_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *size = (size_t)16 << 20;
    *buffer = aligned_alloc(8, *size);
    if (!*buffer) die("trace: no memory for a CUPTI buffer");
    *max_records = 0; /* as many as fit */
}

static void CUPTIAPI trace_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                            size_t size, size_t valid) {
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && trace_out) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            fprintf(trace_out, "%llu,%llu,%s,%d,%d,%u\n", (unsigned long long)k->start,
                    (unsigned long long)k->end, k->name, k->gridX, k->blockX, k->clusterX);
        }
    free(buffer);
}

/* Start recording (before the decoder exists, so that its graphs are instantiated with it). */
static void trace_begin(const char *path) {
    static int registered; /* once a process: each run (DECODE_PROFILE_CUSTOM) rewrites FILE */
    trace_path = path;
    trace_out = fopen(path, "w");
    if (!trace_out) die("trace: cannot write %s: %s", path, strerror(errno));
    if (!registered)
        CUPTI_OK(cuptiActivityRegisterCallbacks(trace_buffer_requested, trace_buffer_completed));
    registered = 1;
    CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
}

static uint64_t trace_now(void) {
    uint64_t t = 0;
    CUPTI_OK(cuptiGetTimestamp(&t));
    return t;
}

/* Stop, write what is left and the measured steps' window, close the file. */
static void trace_end(uint64_t t0, uint64_t t1, int steps) {
    CUDA_OK(cudaDeviceSynchronize());
    fprintf(trace_out, "# measured %llu %llu %d\n", (unsigned long long)t0, (unsigned long long)t1,
            steps);
    CUPTI_OK(cuptiActivityFlushAll(1));
    CUPTI_OK(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    /* a record the callback could not write (a full disk) leaves the stream's error flag set */
    if (ferror(trace_out) | fclose(trace_out)) die("trace: writing %s failed", trace_path);
    trace_out = NULL;
}
#else
static void trace_begin(const char *path) {
    die("DECODE_PROFILE_TRACE=%s: this cuda_ops was built without CUPTI", path);
}
static uint64_t trace_now(void) {
    return 0;
}
static void trace_end(uint64_t t0, uint64_t t1, int steps) {
    (void)t0, (void)t1, (void)steps;
}
#endif
