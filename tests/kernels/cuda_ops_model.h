/* cuda_ops_model.h: `cuda_ops model DIR...` - whole models on the GPU against the CPU backend:
 * the logits of a prefill and of decode steps (eager, captured, then replayed CUDA graphs), the
 * greedy tokens, a chunk re-run bit for bit as the steps it stands for, the graphs dropped and
 * captured again when the scratch grows, and a sequence's horizon (cuda_ops_horizon.h). Included
 * once, by cuda_ops.c, after its helpers (test_util.h keeps everything static: one translation
 * unit). */

static double max_abs_diff(const float *a, const float *b, size_t n, double *amax) {
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]);
        if (!(d <= m)) m = d; /* NaN propagates as a failure */
        if (fabs(b[i]) > *amax) *amax = fabs(b[i]);
    }
    return m;
}

static int argmax_host(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* One past the largest token id m takes as input (a per-layer embedding table may be shorter
 * than the vocabulary). */
static int model_id_limit(const model *m) {
    const int V = model_vocab_size(m);
    return m->config.ple_dim && m->config.ple_vocab < V ? m->config.ple_vocab : V;
}

/* A CPU decoder and a CUDA one of m, cap positions each; dies naming dir when either fails. */
static void decoders_new(model *m, const char *dir, int cap, decoder **dc, decoder **dg) {
    char err[512];
    engine_options oc = {.max_model_len = cap, .device = "cpu"};
    engine_options og = oc;
    og.device = "cuda";
    *dc = decoder_new(m, &oc, err, sizeof err);
    if (!*dc) die("%s: %s", dir, err);
    *dg = decoder_new(m, &og, err, sizeof err);
    if (!*dg) die("%s: %s", dir, err);
}

#include "cuda_ops_horizon.h"

/* A scratch buffer that grows after a step was captured (a chunk longer than any before) must
 * not leave the captured step reading the freed buffer: the backend drops its graphs and
 * captures them again. A GPU decoder and a CPU one take a short prefill, three decode steps
 * (eager, captured, replayed), a long chunk (the attention scratch grows), and three more
 * decode steps: the logits agree throughout, and the decode step is captured twice. The GPU
 * decoder takes the split form of attention: its partials are the scratch that grows (the
 * cluster form keeps them in shared memory). */
static void check_graph_drop(model *m, const char *dir) {
    enum { SHORT = 4, LONG = 60 };
    const int V = model_vocab_size(m), id_max = model_id_limit(m);
    decoder *dc, *dg;
    const char *attn = getenv("GEMMA_CUDA_ATTN");
    char *saved = attn ? xasprintf("%s", attn) : NULL;
    setenv("GEMMA_CUDA_ATTN", "split", 1);
    decoders_new(m, dir, 256, &dc, &dg);
    if (saved)
        setenv("GEMMA_CUDA_ATTN", saved, 1);
    else
        unsetenv("GEMMA_CUDA_ATTN");
    free(saved);
    int ids[SHORT + LONG];
    for (int i = 0; i < SHORT + LONG; i++)
        ids[i] = rng_int(id_max);
    float *lc = xmalloc((size_t)V * sizeof(float)), *lg = xmalloc((size_t)V * sizeof(float));
    CHECK(decoder_forward(dc, ids, SHORT, lc, SHORT - 1) == 0 &&
          decoder_forward(dg, ids, SHORT, lg, SHORT - 1) == 0);
    double worst = 0;
    for (int phase = 0; phase < 2; phase++) {
        for (int s = 0; s < 3; s++) {
            const int tok = argmax_host(lc, V);
            CHECK(decoder_forward(dc, &tok, 1, lc, 0) == 0 &&
                  decoder_forward(dg, &tok, 1, lg, 0) == 0);
            double amax = 0, d = max_abs_diff(lg, lc, (size_t)V, &amax);
            if (d > worst) worst = d;
            EXPECT(d <= 2e-3 * (1 + amax),
                   "%s: graph drop: %s the long chunk, step %d: logits "
                   "differ by %g",
                   dir, phase ? "after" : "before", s, d);
        }
        if (phase == 0)
            CHECK(decoder_forward(dc, ids + SHORT, LONG, lc, LONG - 1) == 0 &&
                  decoder_forward(dg, ids + SHORT, LONG, lg, LONG - 1) == 0);
    }
    backend_cuda_counters cnt;
    backend_cuda_stats(dg->b, &cnt);
    const char *graphs = getenv("GEMMA_CUDA_GRAPHS");
    const int want_graphs = !graphs || strcmp(graphs, "0") != 0;
    EXPECT(want_graphs ? cnt.captures == 2 : cnt.captures == 0,
           "%s: graph drop: the decode step was captured %ld times (want %d: before the long "
           "chunk and again after it)",
           dir, cnt.captures, want_graphs ? 2 : 0);
    printf("%-40s graphs dropped when scratch grows: max|gpu-cpu| %.2e, %ld captures\n", dir, worst,
           cnt.captures);
    free(lc);
    free(lg);
    decoder_free(dc);
    decoder_free(dg);
}

/* The precision the models are checked in: WEIGHT_DTYPE and WEIGHT_GROUP from the environment,
 * as the engine reads them (bf16, group 32 when unset). */
static model *load_model_prec(const char *dir) {
    char err[512];
    quant_dtype dt = QUANT_BF16;
    const char *v = getenv("WEIGHT_DTYPE"), *g = getenv("WEIGHT_GROUP");
    if (v && *v && quant_dtype_parse("WEIGHT_DTYPE", v, &dt, err, sizeof err)) die("%s", err);
    const int group = g && *g ? atoi(g) : 32;
    model *m = model_load_prec(dir, dt, group, err, sizeof err);
    if (!m) die("%s", err);
    return m;
}

static void check_model(const char *dir) {
    model *m = load_model_prec(dir);
    const int V = model_vocab_size(m), N = 72, STEPS = 24, id_max = model_id_limit(m);
    decoder *dc, *dg;
    decoders_new(m, dir, 256, &dc, &dg);
    int *ids = xmalloc((size_t)(N + STEPS) * sizeof(int));
    for (int i = 0; i < N; i++)
        ids[i] = rng_int(id_max);
    float *lc = xmalloc((size_t)N * V * sizeof(float)),
          *lg = xmalloc((size_t)N * V * sizeof(float));
    CHECK(decoder_forward(dc, ids, N, lc, 0) == 0 && decoder_forward(dg, ids, N, lg, 0) == 0);
    double amax = 0, d = max_abs_diff(lg, lc, (size_t)N * V, &amax);
    const double tol = 2e-3 * (1 + amax);
    EXPECT(d <= tol, "%s: prefill logits differ by %g (tolerance %g)", dir, d, tol);
    printf("%-40s prefill %d tokens: max|gpu-cpu| %.2e of max|logit| %.2f\n", dir, N, d, amax);

    /* Greedy decode on both: the GPU takes steps 1 eager, 2 captured, 3.. replayed. */
    int tc = argmax_host(lc + (size_t)(N - 1) * V, V),
        tg = argmax_host(lg + (size_t)(N - 1) * V, V);
    double worst = 0;
    int same = 0;
    enum { LAST = 5 }; /* the last 2 x LAST steps are run again below as chunks of LAST */
    int fed[2 * LAST];
    float *step_logits = xmalloc((size_t)2 * LAST * V * sizeof(float));
    for (int s = 0; s < STEPS; s++) {
        EXPECT(tc == tg, "%s: greedy step %d: gpu %d cpu %d", dir, s, tg, tc);
        same += tc == tg;
        CHECK(decoder_forward(dc, &tc, 1, lc, 0) == 0 && decoder_forward(dg, &tc, 1, lg, 0) == 0);
        if (s >= STEPS - 2 * LAST) {
            fed[s - (STEPS - 2 * LAST)] = tc;
            memcpy(step_logits + (size_t)(s - (STEPS - 2 * LAST)) * V, lg,
                   (size_t)V * sizeof(float));
        }
        amax = 0;
        d = max_abs_diff(lg, lc, (size_t)V, &amax);
        if (d > worst) worst = d;
        EXPECT(d <= 2e-3 * (1 + amax), "%s: decode step %d (pos %d) logits differ by %g", dir, s,
               N + s, d);
        tc = argmax_host(lc, V);
        tg = argmax_host(lg, V);
    }
    /* Speculative verify runs k + 1 positions as one chunk and must reproduce plain decoding
     * exactly (lossless speculation). Roll the GPU decoder back 2 x LAST positions and run the
     * tokens those steps were fed as two chunks of LAST, twice over: a chunk of LAST tokens
     * runs eagerly, then captured, then replayed at both positions (a graph reads its position
     * and tokens from the device). Each chunk's logits must be bit for bit the steps'. */
    {
        static const char *how[2][2] = {{"eager", "captured"}, {"replayed", "replayed"}};
        float *chunk = xmalloc((size_t)LAST * V * sizeof(float));
        for (int pass = 0; pass < 2; pass++) {
            CHECK(decoder_truncate(dg, decoder_pos(dg) - 2 * LAST) == 0);
            for (int h = 0; h < 2; h++) {
                CHECK(decoder_forward(dg, fed + h * LAST, LAST, chunk, 0) == 0);
                EXPECT(!memcmp(chunk, step_logits + (size_t)h * LAST * V,
                               (size_t)LAST * V * sizeof(float)),
                       "%s: a %d-token chunk (%s, at position %d) does not reproduce the "
                       "single-token steps bit for bit",
                       dir, LAST, how[pass][h], decoder_pos(dg) - LAST);
            }
        }
        free(chunk);
    }
    free(step_logits);
    /* The fused path: decoder_forward_argmax picks the same token as the host argmax. */
    int dev_tok = -1;
    CHECK(decoder_forward_argmax(dg, &tc, 1, &dev_tok) == 0);
    CHECK(decoder_forward(dc, &tc, 1, lc, 0) == 0);
    EXPECT(dev_tok == argmax_host(lc, V), "%s: decoder_forward_argmax %d, cpu %d", dir, dev_tok,
           argmax_host(lc, V));
    backend_cuda_counters cnt;
    backend_cuda_stats(dg->b, &cnt);
    const char *graphs = getenv("GEMMA_CUDA_GRAPHS");
    const int want_graphs = !graphs || strcmp(graphs, "0") != 0;
    /* two graphs: the decode step and the LAST-token chunk (replayed twice) */
    EXPECT(want_graphs ? cnt.captures == 2 && cnt.replays >= STEPS - 2 + 2
                       : cnt.captures == 0 && cnt.replays == 0,
           "%s: expected two captured graphs and their replays, got %ld captures %ld replays", dir,
           cnt.captures, cnt.replays);
    printf("%-40s decode %d steps: max|gpu-cpu| %.2e, greedy %d/%d identical, graphs: %ld "
           "captured, %ld replays\n",
           dir, STEPS, worst, same, STEPS, cnt.captures, cnt.replays);
    free(ids);
    free(lc);
    free(lg);
    decoder_free(dc);
    decoder_free(dg);
    check_graph_drop(m, dir);
    check_horizon(m, dir);
    model_free(m);
}
