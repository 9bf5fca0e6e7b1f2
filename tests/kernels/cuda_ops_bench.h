/* cuda_ops_bench.h: the timing subcommands of tests/kernels/cuda_ops.c (included there; one
 * translation unit): bench-matmul (our kernel against cuBLAS on E4B's shapes), decode-profile
 * (ms per decode step under each switch, and the per-family profile) and copy-bw (the device's
 * copy bandwidth). Used by bench/bench_gpu.sh, never by a test. */
/* ---- matmul timing: our kernel against cuBLAS ------------------------------------------ */

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
    tensor wq = rand_tensor(2048, H, DT_BF16), wk = rand_tensor(512, H, DT_BF16),
           wv = rand_tensor(512, H, DT_BF16), wg = rand_tensor(10240, H, DT_BF16),
           wu = rand_tensor(10240, H, DT_BF16);
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

static int run_bench_matmul(void) {
    char err[256];
    backend *own = backend_cuda_new(err, sizeof err);
    if (!own) die("%s", err);
    setenv("GEMMA_CUDA_GEMM", "cublas", 1);
    backend *cub = backend_cuda_new(err, sizeof err);
    CHECK(cub);
    struct {
        const char *name;
        int rows, cols;
    } shapes[] = {{"q_proj", 2048, 2560},
                  {"k_proj", 512, 2560},
                  {"mlp gate/up", 10240, 2560},
                  {"mlp down", 2560, 10240},
                  {"lm_head", 262144, 2560}};
    const int ns[] = {1, 4, 64};
    printf("| matrix | rows x cols | n | own kernel us | own GB/s | cuBLAS us | cuBLAS GB/s |\n");
    printf("|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < 5; i++) {
        tensor w = rand_tensor(shapes[i].rows, shapes[i].cols, DT_BF16);
        for (int k = 0; k < 3; k++) {
            int n = ns[k];
            float *xh = rand_vec((size_t)n * w.cols);
            float *xo = own->alloc(own, (size_t)n * w.cols),
                  *xc = cub->alloc(cub, (size_t)n * w.cols);
            own->upload(own, xo, xh, (size_t)n * w.cols);
            cub->upload(cub, xc, xh, (size_t)n * w.cols);
            float *oo = own->alloc(own, (size_t)n * w.rows),
                  *oc = cub->alloc(cub, (size_t)n * w.rows);
            int reps = w.rows > 100000 ? 20 : 200;
            double to = time_matmul(own, oo, &w, xo, n, reps),
                   tcb = time_matmul(cub, oc, &w, xc, n, reps);
            double bytes = (double)w.rows * w.cols * 2;
            printf("| %s | %d x %d | %d | %.1f | %.0f | %.1f | %.0f |\n", shapes[i].name, w.rows,
                   w.cols, n, to * 1e6, bytes / to / 1e9, tcb * 1e6, bytes / tcb / 1e9);
            own->release(own, xo);
            own->release(own, oo);
            cub->release(cub, xc);
            cub->release(cub, oc);
            free(xh);
        }
        /* w's host copy stays alive until the backends go (their device copies are keyed
         * by its address). */
    }
    bench_fused_rows(own);
    own->destroy(own);
    cub->destroy(cub);
    return 0;
}

/* ---- decode step profile --------------------------------------------------------------- */

/* Prefill `prompt` random tokens, then time `steps` greedy decode steps (decode alone: the
 * counters are reset after the prefill) in several ways: CUDA graphs on (with each of the
 * backend's switches turned off in turn: extra is one more "NAME=VALUE" or NULL), graphs off
 * (eager launches), and profiled (every op timed by events; graphs off). Prints one JSON line
 * per way and the per-family table of the profiled run. */
static void decode_once(const model *m, const char *graphs, const char *profile, const char *fuse,
                        const char *pdl, const char *extra, int prompt, int steps,
                        const char *label) {
    /* DECODE_PROFILE_RUNS="graphs,graphs_unroll4": only these runs (a short device call). */
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
    char extra_name[64] = "";
    if (extra) {
        const char *eq = strchr(extra, '=');
        CHECK(eq && eq - extra < (long)sizeof extra_name);
        memcpy(extra_name, extra, (size_t)(eq - extra));
        extra_name[eq - extra] = 0;
        setenv(extra_name, eq + 1, 1);
    }
    char err[512];
    engine_options o = {.max_model_len = prompt + steps + 8, .device = "cuda"};
    decoder *d = decoder_new(m, &o, err, sizeof err);
    if (!d) die("%s", err);
    const int V = model_vocab_size(m);
    const int id_max = m->config.ple_dim && m->config.ple_vocab < V ? m->config.ple_vocab : V;
    int *ids = xmalloc((size_t)prompt * sizeof(int)), tok;
    for (int i = 0; i < prompt; i++)
        ids[i] = rng_int(id_max);
    /* Warm-up request (uploads the weights, sizes scratch, captures the graph), then the
     * measured one. */
    for (int rep = 0; rep < 2; rep++) {
        decoder_reset(d);
        CHECK(decoder_forward_argmax(d, ids, prompt, &tok) == 0);
        if (rep == 1) backend_cuda_reset_counters(d->b);
        double t0 = now_seconds();
        for (int s = 0; s < (rep ? steps : 4); s++)
            CHECK(decoder_forward_argmax(d, &tok, 1, &tok) == 0);
        double dt = now_seconds() - t0;
        if (rep == 0) continue;
        backend_cuda_counters c;
        backend_cuda_stats(d->b, &c);
        printf("{\"run\": \"%s\", \"steps\": %d, \"ms_per_step\": %.4f, \"decode_tps\": %.2f, "
               "\"bytes_per_step\": %.0f, \"weight_bytes\": %zu, \"replays\": %ld, "
               "\"device\": \"%s\"}\n",
               label, steps, 1e3 * dt / steps, steps / dt, c.bytes / steps, c.weight_bytes,
               c.replays, c.device);
        if (!strcmp(profile, "1")) backend_cuda_profile_print(d->b, stdout);
    }
    fflush(stdout);
    free(ids);
    decoder_free(d);
    unsetenv("GEMMA_CUDA_GRAPHS");
    unsetenv("GEMMA_CUDA_PROFILE");
    unsetenv("GEMMA_CUDA_FUSE");
    unsetenv("GEMMA_CUDA_PDL");
    if (extra) unsetenv(extra_name);
}

static int run_decode_profile(const char *dir, int prompt, int steps) {
    char err[512];
    model *m = model_load(dir, err, sizeof err);
    if (!m) die("%s", err);
    decode_once(m, "1", "0", "1", "1", NULL, prompt, steps, "graphs");
    decode_once(m, "1", "0", "1", "0", NULL, prompt, steps, "graphs_no_pdl");
    decode_once(m, "1", "0", "0", "1", NULL, prompt, steps, "graphs_no_fusion");
    decode_once(m, "1", "0", "1", "1", "GEMMA_CUDA_FUSE_MM=0", prompt, steps,
                "graphs_no_matmul_groups");
    decode_once(m, "1", "0", "1", "1", "GEMMA_CUDA_FUSE_MM=1", prompt, steps,
                "graphs_all_matmul_groups");
    decode_once(m, "1", "0", "1", "1", "GEMMA_CUDA_FUSE_MM=nopair", prompt, steps,
                "graphs_groups_no_pair");
    decode_once(m, "1", "0", "1", "1", "GEMMA_CUDA_MV_UNROLL=4", prompt, steps, "graphs_unroll4");
    decode_once(m, "1", "0", "1", "1", "GEMMA_CUDA_MV_PREFETCH=0", prompt, steps,
                "graphs_no_prefetch");
    decode_once(m, "1", "0", "1", "1", "GEMMA_CUDA_MV_PREFETCH=4", prompt, steps,
                "graphs_prefetch4");
    decode_once(m, "1", "0", "1", "1", NULL, prompt, steps, "graphs_again");
    decode_once(m, "0", "0", "1", "1", NULL, prompt, steps, "eager");
    decode_once(m, "0", "1", "1", "0", NULL, prompt, steps / 4 > 8 ? steps / 4 : 8, "profiled");
    model_free(m);
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
