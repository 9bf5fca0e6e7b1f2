/* decode_profile.c: where the CUDA backend's time goes - a decode step timed under each of the
 * backend's switches, with the per-kernel-family profile, and the matrix products and the
 * device's copy bandwidth on their own. Needs a GPU; bench/bench_gpu.sh runs it.
 *
 *   decode_profile DIR PROMPT_TOKENS STEPS
 *       decode steps after a PROMPT_TOKENS-token prefill of random tokens: one JSON line per
 *       run - ms per step with CUDA graphs (with and without programmatic dependent launch,
 *       with and without fusion, without the whole-MLP kernel, with the split attention, the
 *       defaults again) and without graphs, bytes per step - then the per-family time table
 *       of a profiled run (GEMMA_CUDA_PROFILE). Settings:
 *         DECODE_PROFILE_RUNS="graphs,eager"   only these runs
 *         DECODE_PROFILE_CUSTOM="label:NAME=VALUE NAME=VALUE;label2:..."   only these runs, in
 *             this order, each with graphs, fusion and PDL on plus its settings (at most 4):
 *             A / B / A / B comparisons of a switch within one process
 *         DECODE_PROFILE_VERIFY="2 4 5"   after the steps, speculative verify passes over that
 *             many positions (CUDA graphs, 32 timed replays): ms per pass and in decode steps
 *         DECODE_PROFILE_SKIP="split,merge"   leave these kernel families out (kernels.h
 *             K_SKIP_*: their cost on the step's critical path; the results are wrong)
 *         DECODE_PROFILE_NCU=1   bracket the measured steps with cudaProfilerStart / Stop, for
 *             `ncu --profile-from-start off` (bench/ncu_step_split.py reads its csv)
 *         DECODE_PROFILE_TRACE=FILE   the measured steps' kernels, each with its start and end
 *             (CUPTI; bench/trace_step.py reads it); DECODE_PROFILE_TRACE_ROWS=N: of the
 *             verify pass over N positions (one of DECODE_PROFILE_VERIFY's) instead;
 *             DECODE_PROFILE_TRACE_PREFILL=1: of the measured prompt's prefill instead (one
 *             "step": every chunk's products, attention and the last position's head)
 *         DECODE_PROFILE_MAX_LEN=N   a larger decoder capacity than the run needs
 *         WEIGHT_DTYPE, WEIGHT_GROUP   the layers' precision, as for `engine` (the head stays
 *             the model's bf16 head)
 *         DECODE_PROFILE_HORIZON=0   leave the sequence's horizon unset (1, the default:
 *             prompt + steps)
 *       A setting it does not understand is refused (exit status 1, a message naming it)
 *       before anything runs on the GPU.
 *   decode_profile matvec
 *       the matrix-vector kernels on E4B's shapes, in CUDA graphs, on the CUDA cores and on
 *       the tensor cores: us per launch; DECODE_PROFILE_MATVEC_SMALL=1: each launch followed by
 *       a one-block kernel, as in a decode step; DECODE_PROFILE_MATVEC_N=2..8: products over
 *       that many inputs (a verify pass's)
 *   decode_profile matmul
 *       one product at a time through the backend, on E4B's shapes (n = 1, 4, 64), every one on
 *       our kernels (GEMMA_CUDA_GEMM=own) and by the default (auto: n = 64 on cuBLAS)
 *   decode_profile copy-bw
 *       the device's copy bandwidth (the floor of a decode step: its bytes / this) */
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_CUPTI
#include <cupti.h>
#include <errno.h>
#endif

#include "backend.h"
#include "backend_cuda.h"
#include "decoder.h"
#include "engine.h"
#include "float16.h"
#include "kernels.h"
#include "knobs.h"
#include "model.h"
#include "util.h"

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) die("%s: %s", #call, cudaGetErrorString(e_));                       \
    } while (0)

/* ---- random inputs: a fixed-seed xorshift64* (the figures do not depend on the values) ---- */

static uint64_t rng_state = 88172645463325252ull;

static uint64_t rng_u64(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static int rng_int(int n) { /* [0, n) */
    return (int)(rng_u64() % (uint64_t)n);
}

static float rng_val(void) { /* [-2, -0.1] U [0.1, 2] */
    const double m = 0.1 + 1.9 * (double)(rng_u64() >> 11) / 9007199254740992.0;
    return (float)(rng_u64() & 1 ? m : -m);
}

static float *rand_vec(size_t n) {
    float *v = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        v[i] = rng_val();
    return v;
}

/* A bf16 matrix of random values (its host data stays alive: the backends key their device
 * copies by its address). */
static tensor rand_bf16(int rows, int cols) {
    const size_t n = (size_t)rows * cols;
    uint16_t *d = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++)
        d[i] = f32_to_bf16(rng_val());
    return (tensor){.data = d, .dtype = DT_BF16, .rows = rows, .cols = cols};
}

/* One past the largest token id m takes as input (a per-layer embedding table may be shorter
 * than the vocabulary). */
static int model_id_limit(const model *m) {
    const int V = model_vocab_size(m);
    return m->config.ple_dim && m->config.ple_vocab < V ? m->config.ple_vocab : V;
}

/* ---- DECODE_PROFILE_TRACE: the kernels' timeline --------------------------------------- */

/* Every kernel's start and end as the GPU saw them (CUPTI's concurrent-kernel activity records,
 * which include the kernel nodes of replayed CUDA graphs and do not serialise the kernels). With
 * programmatic dependent launch a kernel starts while the one before it runs, so a kernel's
 * duration says little; what it adds to the step is its end minus the previous kernel's end.
 * bench/trace_step.py reads the file and says that per kernel. Without CUPTI at build time
 * (HAVE_CUPTI unset) the setting is refused with a message.
 *
 * FILE: one line a kernel - start,end,name,grid x,block x,cluster x (CUPTI timestamps, ns) - and
 * a line "# measured T0 T1 STEPS", the window of the measured steps. With several runs in one
 * process (DECODE_PROFILE_CUSTOM) each rewrites FILE: the last run's is what stays. */
#ifdef HAVE_CUPTI
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
    die("DECODE_PROFILE_TRACE=%s: this decode_profile was built without CUPTI", path);
}
static uint64_t trace_now(void) {
    return 0;
}
static void trace_end(uint64_t t0, uint64_t t1, int steps) {
    (void)t0, (void)t1, (void)steps;
}
#endif

/* ---- the decode step ---------------------------------------------------------------------- */

/* A switch of this tool's own: set and not "0". */
static int env_on(const char *name) {
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* DECODE_PROFILE_VERIFY="2 4 5 9": after the decode steps, a speculative verify's forward pass
 * over n positions (no logits; the head's argmax is not included), run where the decoder
 * stands and rolled back each time - eager, captured, then timed over 32 replays. One line per
 * n: ms per pass and its cost in decode steps (step_ms, measured just before). With trace_rows
 * (DECODE_PROFILE_TRACE_ROWS), the timeline's measured window is that pass's 32 replays instead
 * of the decode steps; returns whether it was written. */
static int verify_profile(decoder *d, const char *label, double step_ms, int trace_rows) {
    const char *list = getenv("DECODE_PROFILE_VERIFY");
    int traced = 0;
    if (!list || !*list) return traced;
    const int pos = decoder_pos(d), id_max = model_id_limit(d->m);
    for (const char *p = list; *p;) {
        char *end = NULL;
        const long n = strtol(p, &end, 10);
        if (end == p || n < 1 || n > 64)
            die("DECODE_PROFILE_VERIFY: \"%s\" is not a list of row "
                "counts from 1 to 64",
                list);
        p = end + strspn(end, " ,");
        int buf[64];
        for (int i = 0; i < n; i++)
            buf[i] = (int)((7919u * (unsigned)(i + 1)) % (unsigned)id_max);
        float probe;
        double t0 = 0;
        uint64_t tr0 = 0;
        const int trace_this = n == trace_rows && !traced;
        enum { WARM = 3, REPS = 32 };
        for (int r = 0; r < WARM + REPS; r++) {
            if (r == WARM) {
                /* The warm-up passes out of the window: they run asynchronously (no logits), so
                 * the clock starts once they are done */
                d->b->download(d->b, &probe, d->hidden, 1);
                if (trace_this) tr0 = trace_now();
                t0 = now_seconds();
            }
            CHECK(decoder_forward(d, buf, (int)n, NULL, 0) == 0);
            CHECK(decoder_truncate(d, pos) == 0);
        }
        d->b->download(d->b, &probe, d->hidden, 1); /* waits for the last pass */
        const double ms = 1e3 * (now_seconds() - t0) / REPS;
        if (trace_this) {
            trace_end(tr0, trace_now(), REPS);
            traced = 1;
        }
        printf("{\"run\": \"%s\", \"verify_rows\": %ld, \"ms_per_verify\": %.4f, "
               "\"decode_steps\": %.2f}\n",
               label, n, ms, ms / step_ms);
    }
    return traced;
}

/* DECODE_PROFILE_SKIP="split,merge,..." as kernels.h's K_SKIP_* mask (profiling only: the
 * families named are not launched, so the results are wrong and only the time means anything). */
static unsigned skip_mask(const char *list) {
    static const struct {
        const char *name;
        unsigned bit;
    } fam[] = {{"split", K_SKIP_ATTN_SPLIT},       {"merge", K_SKIP_ATTN_MERGE},
               {"nrk", K_SKIP_NORM_ROPE},          {"normadd", K_SKIP_NORM_ADD},
               {"rmsnorm", K_SKIP_RMSNORM},        {"matvec", K_SKIP_MATVEC},
               {"elementwise", K_SKIP_ELEMENTWISE}};
    unsigned mask = 0;
    char *copy = xasprintf("%s", list ? list : ""), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t i = 0;
        while (i < sizeof fam / sizeof fam[0] && strcmp(fam[i].name, t))
            i++;
        if (i == sizeof fam / sizeof fam[0])
            die("DECODE_PROFILE_SKIP: unknown family '%s' (split, merge, nrk, normadd, rmsnorm, "
                "matvec, elementwise)",
                t);
        mask |= fam[i].bit;
    }
    free(copy);
    return mask;
}

/* Prefill `prompt` random tokens, then time `steps` greedy decode steps (decode alone: the
 * counters are reset after the prefill) in several ways: CUDA graphs on (with each of the
 * backend's switches set in turn: extra is "NAME=VALUE" settings separated by spaces, or NULL),
 * graphs off (eager launches), and profiled (every op timed by events; graphs off). Prints one
 * JSON line per way and the per-family table of the profiled run. */
static void decode_once(const model *m, const char *graphs, const char *profile, const char *fuse,
                        const char *pdl, const char *extra, int prompt, int steps,
                        const char *label) {
    /* DECODE_PROFILE_RUNS="graphs,graphs_no_pdl": only these runs. */
    const char *only = getenv("DECODE_PROFILE_RUNS");
    if (only && *only) {
        char want[80];
        snprintf(want, sizeof want, ",%s,", label);
        char *list = xasprintf(",%s,", only);
        const int skip = !strstr(list, want);
        free(list);
        if (skip) return;
    }
    setenv("GEMMA_CUDA_GRAPHS", graphs, 1);
    setenv("GEMMA_CUDA_PROFILE", profile, 1);
    setenv("GEMMA_CUDA_FUSE", fuse, 1);
    setenv("GEMMA_CUDA_PDL", pdl, 1);
    /* extra: "NAME=VALUE" settings separated by spaces, at most 4 */
    char extra_names[4][64], extra_value[128];
    int n_extra = 0;
    for (const char *p = extra; p && *p;) {
        const char *eq = strchr(p, '='), *end = strchr(p, ' ');
        if (!end) end = p + strlen(p);
        CHECK(n_extra < 4 && eq && eq < end && eq - p < 64 && end - eq <= 128);
        memcpy(extra_names[n_extra], p, (size_t)(eq - p));
        extra_names[n_extra][eq - p] = 0;
        memcpy(extra_value, eq + 1, (size_t)(end - eq - 1));
        extra_value[end - eq - 1] = 0;
        setenv(extra_names[n_extra++], extra_value, 1);
        p = *end ? end + 1 : end;
    }
    char err[512];
    /* DECODE_PROFILE_TRACE=FILE: the measured steps' kernels, each with its start and end
     * (trace_begin above), recorded from before the decoder exists so that its graphs are seen */
    const char *trace = getenv("DECODE_PROFILE_TRACE");
    const int tracing = trace && *trace;
    uint64_t trace_t0 = 0, trace_t1 = 0;
    /* room for DECODE_PROFILE_VERIFY's passes only when asked (the length sets the full
     * layers' attention slices, and so the step) */
    const char *verify = getenv("DECODE_PROFILE_VERIFY");
    /* DECODE_PROFILE_TRACE_ROWS=N: the timeline is of the verify pass over N positions (one of
     * DECODE_PROFILE_VERIFY's), its 32 timed replays as the "steps" */
    const char *trows = getenv("DECODE_PROFILE_TRACE_ROWS");
    int trace_rows = 0;
    if (trows && *trows) {
        char *end = NULL;
        const long n = strtol(trows, &end, 10);
        if (*end || n < 1 || n > 64 || !tracing || !verify || !*verify)
            die("DECODE_PROFILE_TRACE_ROWS: \"%s\" must be a row count of DECODE_PROFILE_VERIFY's, "
                "with DECODE_PROFILE_TRACE set",
                trows);
        trace_rows = (int)n;
    }
    /* DECODE_PROFILE_TRACE_PREFILL=1: the timeline is of the measured prompt's prefill */
    const char *tpre = getenv("DECODE_PROFILE_TRACE_PREFILL");
    const int trace_prefill = tpre && !strcmp(tpre, "1");
    if (tpre && *tpre && (strcmp(tpre, "0") && strcmp(tpre, "1")))
        die("DECODE_PROFILE_TRACE_PREFILL: \"%s\" is neither 0 nor 1", tpre);
    if (trace_prefill && (!tracing || trace_rows))
        die("DECODE_PROFILE_TRACE_PREFILL=1 needs DECODE_PROFILE_TRACE and no "
            "DECODE_PROFILE_TRACE_ROWS");
    if (tracing) trace_begin(trace);
    engine_options o = {.max_model_len = prompt + steps + 8 + (verify && *verify ? 64 : 0),
                        .device = "cuda"};
    /* DECODE_PROFILE_MAX_LEN=N: a larger capacity (MAX_MODEL_LEN=4096, as the challenge's record
     * ran); the sequence's horizon stays prompt + steps (DECODE_PROFILE_HORIZON=0: none, the
     * capacity alone picks the attention's form) */
    const char *max_len = getenv("DECODE_PROFILE_MAX_LEN");
    if (max_len && *max_len) {
        char *end = NULL;
        const long n = strtol(max_len, &end, 10);
        if (*end || n < 1 || n > 1 << 24)
            die("DECODE_PROFILE_MAX_LEN: \"%s\" is not a number of positions", max_len);
        if (n > o.max_model_len) o.max_model_len = (int)n;
    }
    const char *hz = getenv("DECODE_PROFILE_HORIZON");
    if (hz && *hz && strcmp(hz, "0") && strcmp(hz, "1"))
        die("DECODE_PROFILE_HORIZON: \"%s\" is neither 0 (none) nor 1 (prompt + steps)", hz);
    const int horizon = hz && !strcmp(hz, "0") ? 0 : prompt + steps;
    decoder *d = decoder_new(m, &o, err, sizeof err);
    if (!d) die("%s", err);
    const unsigned skip = skip_mask(getenv("DECODE_PROFILE_SKIP"));
    k_set_skip(skip);
    const int id_max = model_id_limit(m);
    int *ids = xmalloc((size_t)prompt * sizeof(int)), tok;
    for (int i = 0; i < prompt; i++)
        ids[i] = rng_int(id_max);
    /* Warm-up request (uploads the weights, sizes scratch, captures the graph), then the
     * measured one. */
    for (int rep = 0; rep < 2; rep++) {
        decoder_begin(d, horizon);
        if (rep == 1 && trace_prefill) trace_t0 = trace_now();
        CHECK(decoder_forward_argmax(d, ids, prompt, &tok) == 0); /* waits for the token */
        if (rep == 1 && trace_prefill) trace_t1 = trace_now();
        if (skip) tok = ids[0]; /* the logits are garbage: feed a valid id */
        if (rep == 1) backend_cuda_reset_counters(d->b);
        /* DECODE_PROFILE_NCU=1: the measured steps, and nothing else, between
         * cudaProfilerStart and Stop - `ncu --profile-from-start off` then sees those steps'
         * kernels alone (bench/bench_gpu.sh, bench/ncu_step_split.py). */
        const int ncu = rep == 1 && env_on("DECODE_PROFILE_NCU");
        if (ncu) CUDA_OK(cudaProfilerStart());
        if (rep == 1 && tracing && !trace_prefill) trace_t0 = trace_now();
        double t0 = now_seconds();
        for (int s = 0; s < (rep ? steps : 4); s++) {
            CHECK(decoder_forward_argmax(d, &tok, 1, &tok) == 0);
            if (skip) tok = ids[0];
        }
        double dt = now_seconds() - t0;
        if (rep == 1 && tracing && !trace_prefill) trace_t1 = trace_now();
        if (ncu) CUDA_OK(cudaProfilerStop());
        if (rep == 0) continue;
        backend_cuda_counters c;
        backend_cuda_stats(d->b, &c);
        printf("{\"run\": \"%s\", \"steps\": %d, \"ms_per_step\": %.4f, \"decode_tps\": %.2f, "
               "\"bytes_per_step\": %.0f, \"weight_bytes\": %zu, \"replays\": %ld, "
               "\"device\": \"%s\"}\n",
               label, steps, 1e3 * dt / steps, steps / dt, c.bytes / steps, c.weight_bytes,
               c.replays, c.device);
        if (!strcmp(profile, "1")) backend_cuda_profile_print(d->b, stdout);
        if (tracing && !trace_rows) /* before verify */
            trace_end(trace_t0, trace_t1, trace_prefill ? 1 : steps);
        if (!verify_profile(d, label, 1e3 * dt / steps, trace_rows) && trace_rows)
            die("DECODE_PROFILE_TRACE_ROWS=%d: no verify pass of that many rows in "
                "DECODE_PROFILE_VERIFY=\"%s\"",
                trace_rows, verify);
    }
    fflush(stdout);
    free(ids);
    decoder_free(d);
    k_set_skip(0);
    unsetenv("GEMMA_CUDA_GRAPHS");
    unsetenv("GEMMA_CUDA_PROFILE");
    unsetenv("GEMMA_CUDA_FUSE");
    unsetenv("GEMMA_CUDA_PDL");
    for (int i = 0; i < n_extra; i++)
        unsetenv(extra_names[i]);
}

static int run_decode_profile(const char *dir, int prompt, int steps) {
    char err[512];
    /* The engine's precision knobs WEIGHT_DTYPE / WEIGHT_GROUP, as `engine` reads them (the
     * others do not apply: the step runs the decoder's own full bf16 head). */
    knobs k;
    knobs_init(&k);
    if (knobs_from_env(&k, err, sizeof err)) die("%s", err);
    model *m = model_load_prec(dir, k.weight_dtype, k.weight_group, err, sizeof err);
    if (!m) die("%s", err);
    /* DECODE_PROFILE_CUSTOM="label:NAME=VALUE NAME=VALUE;label2:...": only these runs, in this
     * order, each with graphs, fusion and PDL on plus its settings (at most 4) - A / B / A / B
     * comparisons of a switch within one process. */
    const char *custom = getenv("DECODE_PROFILE_CUSTOM");
    if (custom && *custom) {
        char *list = xasprintf("%s", custom), *save = NULL;
        for (char *run = strtok_r(list, ";", &save); run; run = strtok_r(NULL, ";", &save)) {
            char *colon = strchr(run, ':');
            if (colon) *colon = 0;
            unsetenv("DECODE_PROFILE_RUNS"); /* decode_once's filter: not for these */
            decode_once(m, "1", "0", "1", "1", colon && colon[1] ? colon + 1 : NULL, prompt, steps,
                        run);
        }
        free(list);
        model_free(m);
        return 0;
    }
    /* The runs, in order: graphs with the defaults, then each switch in turn, the defaults
     * again (run-to-run spread), eager launches, and the profiled run (fewer steps). */
    static const struct {
        const char *label, *graphs, *profile, *fuse, *pdl, *extra;
    } runs[] = {
        {"graphs", "1", "0", "1", "1", NULL},
        {"graphs_no_pdl", "1", "0", "1", "0", NULL},
        {"graphs_no_fusion", "1", "0", "0", "1", NULL},
        {"graphs_no_mlp_kernel", "1", "0", "1", "1", "GEMMA_CUDA_MLP=0"},
        {"graphs_attn_split", "1", "0", "1", "1", "GEMMA_CUDA_ATTN=split"},
        {"graphs_again", "1", "0", "1", "1", NULL},
        {"eager", "0", "0", "1", "1", NULL},
        {"profiled", "0", "1", "1", "0", NULL},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const int profiled = !strcmp(runs[i].profile, "1");
        decode_once(m, runs[i].graphs, runs[i].profile, runs[i].fuse, runs[i].pdl, runs[i].extra,
                    prompt, profiled ? (steps / 4 > 8 ? steps / 4 : 8) : steps, runs[i].label);
    }
    model_free(m);
    return 0;
}

/* ---- the matrix-vector kernels on their own --------------------------------------------- */

/* Launches of k_matvec_multi over n inputs (bf16 weights; n = 1 a decode step, 2 .. 8 a verify
 * pass), captured into a CUDA graph with programmatic dependent launch as a decode step has it,
 * replayed: microseconds per launch.
 * The launches cycle through enough copies of the weights (at least 160 MB, over three times
 * the H200's L2) that every launch streams its weights from memory, as in a decode step.
 * small: after every product a one-block RMSNorm of its output into x, which the next product
 * reads - a decode step's order (a product starts after a small kernel, not after another
 * product, whose tail its own start would overlap); the time is then the pair's. */
static double time_mv_variant(int mma, int n_segs, const int *rows, int cols, char **w_copies,
                              int copies, size_t copy_bytes, float *x, float *out, int n, int reps,
                              int small) {
    const int pair = n_segs < 0; /* -1: one gate + up pair with the GeLU epilogue */
    if (pair) n_segs = 1;
    CHECK(k_matvec_set_mma(mma) == 0);
    cudaStream_t s;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    /* r = -1: one eager launch first (the launcher asks the occupancy once, outside capture) */
    for (int r = -1; r < reps; r++) {
        if (r == 0) {
            CUDA_OK(cudaStreamSynchronize(s));
            CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        }
        k_mv_seg segs[K_MV_SEGS];
        const char *w = w_copies[(r + copies) % copies];
        size_t off = 0, out_off = 0;
        for (int i = 0; i < n_segs; i++) {
            memset(&segs[i], 0, sizeof segs[i]);
            segs[i].out = out + out_off;
            segs[i].w = w + off;
            segs[i].rows = rows[i];
            segs[i].epilogue = K_MV_PLAIN;
            off += (size_t)rows[i] * cols * 2;
            out_off += (size_t)n * rows[i];
            if (pair) { /* the up matrix follows the gate */
                segs[i].epilogue = K_MV_GELU_PAIR;
                segs[i].w_up = w + off;
                segs[i].out_up = out + out_off;
                off += (size_t)rows[i] * cols * 2;
                out_off += (size_t)n * rows[i];
            }
        }
        CHECK(off <= copy_bytes);
        k_matvec_multi(s, segs, n_segs, KDT_BF16, x, cols, n);
        if (small) k_rmsnorm(s, x, out, NULL, KDT_F32, 1, cols, 1e-6f);
    }
    CUDA_OK(cudaStreamEndCapture(s, &graph));
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    cudaEvent_t e0, e1;
    CUDA_OK(cudaEventCreate(&e0));
    CUDA_OK(cudaEventCreate(&e1));
    CUDA_OK(cudaGraphLaunch(exec, s)); /* warm-up */
    CUDA_OK(cudaEventRecord(e0, s));
    const int replays = 5;
    for (int i = 0; i < replays; i++)
        CUDA_OK(cudaGraphLaunch(exec, s));
    CUDA_OK(cudaEventRecord(e1, s));
    CUDA_OK(cudaEventSynchronize(e1));
    float ms = 0;
    CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
    CUDA_OK(cudaEventDestroy(e0));
    CUDA_OK(cudaEventDestroy(e1));
    CUDA_OK(cudaGraphExecDestroy(exec));
    CUDA_OK(cudaGraphDestroy(graph));
    CUDA_OK(cudaStreamDestroy(s));
    return 1e3 * ms / ((double)replays * reps);
}

/* One row per E4B shape (or grouped launch), one column per tuning: us per launch and GB/s
 * of weights. The first and last columns are the default, to show the run-to-run spread.
 * DECODE_PROFILE_MATVEC_SMALL=1: each product followed by a small kernel, as in a step
 * (time_mv_variant); the last line then gives the small kernel's own time in such a chain.
 * DECODE_PROFILE_MATVEC_N=2..8: products over that many inputs, a speculative verify pass's
 * (default 1, a decode step's). */
static int run_matvec(void) {
    const char *small_env = getenv("DECODE_PROFILE_MATVEC_SMALL"),
               *n_env = getenv("DECODE_PROFILE_MATVEC_N");
    const int small = small_env && !strcmp(small_env, "1");
    const int n = n_env && *n_env ? atoi(n_env) : 1;
    if (n < 1 || n > 8)
        die("DECODE_PROFILE_MATVEC_N: \"%s\" is not a number of inputs from 1 to 8", n_env);
    struct cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    k_set_pdl(prop.major >= 9);
    const struct {
        const char *label;
        int mma;
    } tunes[] = {
        {"CUDA cores (default)", 0},
        {"tensor cores, x exact (GEMMA_CUDA_MV_MMA=1)", 1},
        {"tensor cores, x to 16 bits (GEMMA_CUDA_MV_MMA=2)", 2},
        {"default again", 0},
    };
    const int n_tunes = (int)(sizeof tunes / sizeof tunes[0]);
    const struct {
        const char *name;
        int n_segs, rows[3], cols;
    } shapes[] = {
        {"q_proj", 1, {2048}, 2560},
        {"k_proj", 1, {512}, 2560},
        {"q + k + v (one launch)", 3, {2048, 512, 512}, 2560},
        {"o_proj", 1, {2560}, 2048},
        {"mlp gate / up", 1, {10240}, 2560},
        {"gate + up (one launch)", 2, {10240, 10240}, 2560},
        {"gate + up pair, GeLU epilogue (decode)", -1, {10240}, 2560},
        {"mlp down", 1, {2560}, 10240},
        {"per-layer gate", 1, {256}, 2560},
        {"per-layer proj", 1, {2560}, 256},
        {"per-layer input proj", 1, {10752}, 2560},
        {"lm_head", 1, {262144}, 2560},
        {"(no product: the small kernel alone)", 1, {0}, 2560},
    };
    printf("matvec products on %s (bf16, n = %d, CUDA graph of %s, PDL "
           "%s): us per launch (GB/s of weights)\n\n| matrix | rows x cols |",
           prop.name, n,
           small ? "launches each followed by a one-block RMSNorm of its output into x (the time "
                   "is the pair's)"
                 : "back-to-back launches",
           prop.major >= 9 ? "on" : "off");
    for (int v = 0; v < n_tunes; v++)
        printf(" %s |", tunes[v].label);
    printf("\n|---|---|");
    for (int v = 0; v < n_tunes; v++)
        printf("---|");
    printf("\n");
    float *x = NULL, *out = NULL;
    const size_t nx = (size_t)n * 16384, nout = (size_t)n * 2 * 262144; /* pair: gate and up */
    CUDA_OK(cudaMalloc((void **)&x, nx * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&out, nout * sizeof(float)));
    float *xh = rand_vec(nx);
    CUDA_OK(cudaMemcpy(x, xh, nx * sizeof(float), cudaMemcpyHostToDevice));
    free(xh);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        size_t bytes = 0;
        int total_rows = 0;
        const int pair = shapes[i].n_segs < 0; /* one segment, gate and up: two matrices */
        for (int k = 0; k < (pair ? 1 : shapes[i].n_segs); k++) {
            bytes += (size_t)shapes[i].rows[k] * shapes[i].cols * 2 * (pair ? 2 : 1);
            total_rows += shapes[i].rows[k] * (pair ? 2 : 1);
        }
        if (!bytes && !small) continue; /* the last row is for the chain only */
        const int copies = !bytes ? 1
                           : bytes >= ((size_t)160 << 20)
                               ? 1
                               : (int)((((size_t)160 << 20) + bytes - 1) / bytes);
        char **w = xmalloc((size_t)copies * sizeof(char *));
        for (int c = 0; c < copies; c++) {
            CUDA_OK(cudaMalloc((void **)&w[c], bytes ? bytes : 16));
            /* bf16 0x3c3c (about 0.0115) everywhere: any value streams the same */
            CUDA_OK(cudaMemset(w[c], 0x3c, bytes ? bytes : 16));
        }
        const int reps = bytes > ((size_t)512 << 20) ? 10 : copies > 40 ? copies : 40;
        printf("| %s | %d x %d |", shapes[i].name, total_rows, shapes[i].cols);
        for (int v = 0; v < n_tunes; v++) {
            const double us =
                time_mv_variant(tunes[v].mma, shapes[i].n_segs, shapes[i].rows, shapes[i].cols, w,
                                copies, bytes, x, out, n, reps, small);
            printf(" %.1f (%.0f) |", us, bytes / us / 1e3);
            fflush(stdout);
        }
        printf("\n");
        for (int c = 0; c < copies; c++)
            CUDA_OK(cudaFree(w[c]));
        free(w);
    }
    k_matvec_set_mma(0);
    CUDA_OK(cudaFree(x));
    CUDA_OK(cudaFree(out));
    return 0;
}

/* ---- one product at a time through the backend --------------------------------------------- */

static double time_matmul(backend *b, float *out, const tensor *w, const float *x, int n,
                          int reps) {
    float one;
    b->matmul(b, out, w, x, n); /* upload + warm-up */
    b->download(b, &one, out, 1);
    double t0 = now_seconds();
    for (int r = 0; r < reps; r++)
        b->matmul(b, out, w, x, n);
    b->download(b, &one, out, 1);
    return (now_seconds() - t0) / reps;
}

/* The launches the backend's queue makes of several products of one x (backend_cuda_fuse.c):
 * q + k + v, and gate + up + gelu_mul, at n = 1 (decode). Rows of the same table. */
static void bench_fused_rows(backend *b) {
    const int H = 2560, reps = 200;
    tensor wq = rand_bf16(2048, H), wk = rand_bf16(512, H), wv = rand_bf16(512, H),
           wg = rand_bf16(10240, H), wu = rand_bf16(10240, H);
    float *xh = rand_vec(H), *x = b->alloc(b, H), *q = b->alloc(b, 2048), *k = b->alloc(b, 512),
          *v = b->alloc(b, 512), *g = b->alloc(b, 10240), *u = b->alloc(b, 10240), one;
    b->upload(b, x, xh, H);
    for (int which = 0; which < 2; which++) {
        double t0 = 0;
        for (int r = -1; r < reps; r++) {
            if (r == 0) { /* the first group uploads the weights and warms up */
                b->download(b, &one, which ? g : q, 1);
                t0 = now_seconds();
            }
            if (which == 0) {
                b->matmul(b, q, &wq, x, 1);
                b->matmul(b, k, &wk, x, 1);
                b->matmul(b, v, &wv, x, 1);
            } else {
                b->matmul(b, g, &wg, x, 1);
                b->matmul(b, u, &wu, x, 1);
                b->gelu_mul(b, g, g, u, 1, 10240, 10240);
            }
        }
        b->download(b, &one, which ? g : q, 1);
        const double dt = (now_seconds() - t0) / reps;
        const double bytes = which ? 2.0 * 10240 * H * 2 : (2048.0 + 1024.0) * H * 2;
        printf("| %s | %s x %d | 1 | %.1f | %.0f | - | - |\n",
               which ? "gate + up + gelu (one launch)" : "q + k + v (one launch)",
               which ? "2 x 10240" : "2048 + 512 + 512", H, dt * 1e6, bytes / dt / 1e9);
    }
    float *bufs[] = {x, q, k, v, g, u};
    for (int i = 0; i < 6; i++)
        b->release(b, bufs[i]);
    free(xh);
}

/* Each of E4B's shapes at n = 1, 4 and 64 on two backends: every product on our kernels
 * (GEMMA_CUDA_GEMM=own) and the default (auto: bf16 products of more than 17 inputs on cuBLAS,
 * x in two bf16 parts: its top 16 bits), then the grouped launches of the backend's queue. */
static int run_matmul(void) {
    char err[256];
    setenv("GEMMA_CUDA_GEMM", "own", 1);
    backend *own = backend_cuda_new(err, sizeof err);
    if (!own) die("%s", err);
    unsetenv("GEMMA_CUDA_GEMM");
    backend *dflt = backend_cuda_new(err, sizeof err);
    if (!dflt) die("%s", err);
    struct {
        const char *name;
        int rows, cols;
    } shapes[] = {{"q_proj", 2048, 2560},
                  {"k_proj", 512, 2560},
                  {"mlp gate/up", 10240, 2560},
                  {"mlp down", 2560, 10240},
                  {"lm_head", 262144, 2560}};
    const int ns[] = {1, 4, 64};
    printf("| matrix | rows x cols | n | own kernel us | own GB/s | default us | default GB/s |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < 5; i++) {
        tensor w = rand_bf16(shapes[i].rows, shapes[i].cols);
        for (int k = 0; k < 3; k++) {
            int n = ns[k];
            float *xh = rand_vec((size_t)n * w.cols);
            float *xo = own->alloc(own, (size_t)n * w.cols),
                  *xd = dflt->alloc(dflt, (size_t)n * w.cols);
            own->upload(own, xo, xh, (size_t)n * w.cols);
            dflt->upload(dflt, xd, xh, (size_t)n * w.cols);
            float *oo = own->alloc(own, (size_t)n * w.rows),
                  *od = dflt->alloc(dflt, (size_t)n * w.rows);
            int reps = w.rows > 100000 ? 20 : 200;
            double to = time_matmul(own, oo, &w, xo, n, reps),
                   td = time_matmul(dflt, od, &w, xd, n, reps);
            double bytes = (double)w.rows * w.cols * 2;
            printf("| %s | %d x %d | %d | %.1f | %.0f | %.1f | %.0f |\n", shapes[i].name, w.rows,
                   w.cols, n, to * 1e6, bytes / to / 1e9, td * 1e6, bytes / td / 1e9);
            own->release(own, xo);
            own->release(own, oo);
            dflt->release(dflt, xd);
            dflt->release(dflt, od);
            free(xh);
        }
        /* w's host copy stays alive until the backends go (their device copies are keyed
         * by its address). */
    }
    bench_fused_rows(own);
    own->destroy(own);
    dflt->destroy(dflt);
    return 0;
}

/* ---- device copy bandwidth -------------------------------------------------------------- */

/* A device-to-device copy of 2 GiB, 20 times: bytes read + bytes written per second. */
static int run_copy_bw(void) {
    char err[256];
    backend *g = backend_cuda_new(err, sizeof err);
    if (!g) die("%s", err);
    const size_t n = (size_t)512 << 20; /* floats: 2 GiB */
    float *a = g->alloc(g, n), *b = g->alloc(g, n), one;
    g->copy(g, b, a, n);
    g->download(g, &one, b, 1);
    const int reps = 20;
    double t0 = now_seconds();
    for (int r = 0; r < reps; r++)
        g->copy(g, r & 1 ? a : b, r & 1 ? b : a, n);
    g->download(g, &one, b, 1);
    double s = (now_seconds() - t0) / reps;
    printf("copy_bw_gbs %.1f\n", 2.0 * n * sizeof(float) / s / 1e9);
    g->release(g, a);
    g->release(g, b);
    g->destroy(g);
    return 0;
}

int main(int argc, char **argv) {
    util_progname = "decode_profile";
    if (argc == 4) return run_decode_profile(argv[1], atoi(argv[2]), atoi(argv[3]));
    if (argc == 2 && !strcmp(argv[1], "matvec")) return run_matvec();
    if (argc == 2 && !strcmp(argv[1], "matmul")) return run_matmul();
    if (argc == 2 && !strcmp(argv[1], "copy-bw")) return run_copy_bw();
    fprintf(stderr, "usage: decode_profile DIR PROMPT_TOKENS STEPS | matvec | matmul | copy-bw\n");
    return 2;
}
