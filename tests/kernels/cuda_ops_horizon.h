/* cuda_ops_horizon.h: a sequence's horizon (decoder_begin) on the GPU. With a cache longer than
 * the cluster attention takes (kernels/attention.cu: 2048 positions for heads up to 256 wide),
 * the full-attention layers run as slices + merge; a horizon inside that reach runs them as one
 * cluster kernel. Whole-model checks of a fixture under both, against the CPU backend. Included
 * once, by cuda_ops.c, after its helpers (test_util.h keeps everything static: one translation
 * unit). */

/* Three sequences of the same tokens on a CPU and a GPU decoder of CAP positions: no horizon
 * (first, so that the split form's scratch is as large as it gets and no later growth drops the
 * graphs), a horizon the decode runs past, and that horizon again. In each, the logits agree
 * with the CPU's (prefill and every greedy step), and two chunks of LAST tokens re-run after a
 * rollback are bit for bit the steps they stand for (lossless speculation under a horizon). The
 * third sequence repeats the second bit for bit and captures nothing new: a horizon class keeps
 * its graphs (the decode step and the chunk, captured in each of the first two sequences). */
static void check_horizon(model *m, const char *dir) {
    enum { CAP = 2560, N = 40, STEPS = 12, LAST = 4, HORIZON = N + STEPS / 2 };
    const int V = model_vocab_size(m), id_max = model_id_limit(m);
    /* The fixtures are trained for 256 positions; the test reads N + STEPS of them, and a longer
     * capacity only sizes the caches (and picks the attention's form). */
    const int saved_max = m->config.max_positions;
    if (m->config.max_positions < CAP) m->config.max_positions = CAP;
    decoder *dc, *dg;
    decoders_new(m, dir, CAP, &dc, &dg);
    m->config.max_positions = saved_max;

    int ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = rng_int(id_max);
    float *lc = xmalloc((size_t)N * V * sizeof(float)),
          *lg = xmalloc((size_t)N * V * sizeof(float));
    float *steps[3], *chunk = xmalloc((size_t)LAST * V * sizeof(float));
    int fed[STEPS];
    double worst = 0;
    long captures[3], split_ops[3], split_total = 0; /* attention ops issued as slices + merge */
    for (int seq = 0; seq < 3; seq++) {
        const int horizon = seq == 0 ? 0 : HORIZON;
        steps[seq] = xmalloc((size_t)STEPS * V * sizeof(float));
        decoder_reset(dc);
        decoder_begin(dg, horizon);
        CHECK(decoder_forward(dc, ids, N, lc, 0) == 0 && decoder_forward(dg, ids, N, lg, 0) == 0);
        double amax = 0, d = max_abs_diff(lg, lc, (size_t)N * V, &amax);
        EXPECT(d <= 2e-3 * (1 + amax), "%s: horizon %d: prefill logits differ by %g", dir, horizon,
               d);
        int tok = argmax_host(lc + (size_t)(N - 1) * V, V);
        for (int s = 0; s < STEPS; s++) { /* both fed the CPU's greedy token */
            fed[s] = tok;
            CHECK(decoder_forward(dc, &tok, 1, lc, 0) == 0 &&
                  decoder_forward(dg, &tok, 1, steps[seq] + (size_t)s * V, 0) == 0);
            amax = 0;
            d = max_abs_diff(steps[seq] + (size_t)s * V, lc, (size_t)V, &amax);
            if (d > worst) worst = d;
            EXPECT(d <= 2e-3 * (1 + amax),
                   "%s: horizon %d: decode step %d (pos %d) logits differ "
                   "by %g",
                   dir, horizon, s, N + s, d);
            tok = argmax_host(lc, V);
        }
        CHECK(decoder_truncate(dg, decoder_pos(dg) - 2 * LAST) == 0);
        for (int h = 0; h < 2; h++) {
            CHECK(decoder_forward(dg, fed + STEPS - 2 * LAST + h * LAST, LAST, chunk, 0) == 0);
            EXPECT(!memcmp(chunk, steps[seq] + (size_t)(STEPS - 2 * LAST + h * LAST) * V,
                           (size_t)LAST * V * sizeof(float)),
                   "%s: horizon %d: a %d-token chunk at position %d does not reproduce the "
                   "single-token steps bit for bit",
                   dir, horizon, LAST, decoder_pos(dg) - LAST);
        }
        backend_cuda_counters cnt;
        backend_cuda_stats(dg->b, &cnt);
        captures[seq] = cnt.captures;
        split_ops[seq] = cnt.attn_split_ops - split_total;
        split_total = cnt.attn_split_ops;
    }
    EXPECT(!memcmp(steps[2], steps[1], (size_t)STEPS * V * sizeof(float)),
           "%s: the same tokens under the same horizon gave other logits", dir);
    const char *graphs = getenv("GEMMA_CUDA_GRAPHS");
    const int want_graphs = !graphs || strcmp(graphs, "0") != 0;
    const long want[3] = {want_graphs ? 2 : 0, want_graphs ? 4 : 0, want_graphs ? 4 : 0};
    EXPECT(captures[0] == want[0] && captures[1] == want[1] && captures[2] == want[2],
           "%s: horizon: %ld, %ld, %ld graphs captured after each sequence (want %ld, %ld, %ld)",
           dir, captures[0], captures[1], captures[2], want[0], want[1], want[2]);
    /* Which form the full layers took (their ring is the cache's, CAP positions): slices
     * without a horizon, and under it one cluster kernel where the backend runs that form - so
     * the horizon reached the kernels, not only the graph keys. */
    backend_cuda_counters bc;
    backend_cuda_stats(dg->b, &bc);
    const int clusters = bc.attn_form == K_ATTN_CLUSTER;
    EXPECT(split_ops[0] > 0 && (clusters ? split_ops[1] == 0 && split_ops[2] == 0
                                         : split_ops[1] > 0 && split_ops[2] > 0),
           "%s: horizon: %ld, %ld, %ld attention ops as slices + merge in the three sequences "
           "(want some, then %s)",
           dir, split_ops[0], split_ops[1], split_ops[2], clusters ? "none" : "some");
    printf("%-40s horizon %d / none in a cache of %d: %ld / %ld attention ops as slices; "
           "max|gpu-cpu| %.2e, %ld graphs captured\n",
           dir, HORIZON, CAP, split_ops[1], split_ops[0], worst, captures[2]);
    for (int seq = 0; seq < 3; seq++)
        free(steps[seq]);
    free(chunk);
    free(lc);
    free(lg);
    decoder_free(dc);
    decoder_free(dg);
}
