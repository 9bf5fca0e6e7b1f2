/* cuda_ops_attention.h: the attention (attention.cu, attention_rows.cu) checked against the CPU
 * backend - KV-ring writes into rings that wrap, then attention over them, in both GPU forms of
 * decode and verify (slices and merge; thread block clusters) and over prefill chunks, every row
 * of a verify-sized chunk also against that row alone. Included
 * once, by cuda_ops.c, after its helpers (test_util.h keeps everything static: one translation
 * unit). */

/* kv_write into rings that wrap, then attention over them, against the CPU; each row of a
 * chunk of up to 8 rows (a verify pass) must also be, bit for bit, that row attended alone
 * (a decode step), which is what keeps speculation lossless. form names the GPU's form. */
static void test_attention(const char *form) {
    struct {
        int n_tok, heads, kv_heads, hd, len, window, pos0, horizon; /* horizon 0: none */
    } cases[] = {
        {1, 8, 2, 256, 600, 512, 0, 0},     /* first token */
        {1, 8, 2, 256, 575, 512, 2000, 0},  /* sliding ring, wrapped many times */
        {1, 8, 2, 512, 3000, 0, 2500, 0},   /* full context, long: many splits */
        {5, 8, 2, 256, 575, 512, 700, 0},   /* verify-sized chunk over a wrapped ring */
        {64, 8, 2, 256, 575, 512, 1000, 0}, /* prefill chunk */
        {64, 4, 4, 48, 200, 0, 100, 0},     /* odd head_dim, no GQA */
        {3, 6, 1, 32, 40, 7, 33, 0},        /* tiny window */
        {4, 8, 2, 128, 300, 0, 200, 0},     /* 128-wide heads, short full context */
        {2, 8, 2, 512, 700, 0, 650, 0},     /* 512-wide heads, a ring the cluster form takes */
        /* a long ring and a short sequence (its horizon): the cluster form where it has one */
        {1, 8, 2, 512, 4096, 0, 600, 900},
        {5, 8, 2, 256, 4096, 0, 1500, 2000}, /* a verify-sized chunk */
        {1, 8, 2, 512, 3000, 0, 1900, 1000}, /* past its horizon: slower, still right */
        /* prefill chunks (more than BACKEND_VERIFY_ROWS rows: attention_rows.cu) */
        {256, 8, 2, 256, 767, 512, 0, 0},   /* a first chunk of 256, E4B's sliding layers */
        {256, 8, 2, 512, 1024, 0, 256, 0},  /* a second chunk, E4B's full layers */
        {200, 8, 2, 256, 767, 512, 900, 0}, /* a wrapped ring, the window cutting every row */
        {40, 6, 1, 32, 80, 7, 70, 0},       /* tiny window, a partial row tile, wrapped */
        {18, 4, 4, 48, 200, 0, 100, 0},     /* odd head_dim, one row past a verify pass */
        {24, 8, 2, 128, 300, 0, 200, 0},    /* 128-wide heads: every lane a unit */
        {20, 8, 2, 128, 256, 0, 50, 0},     /* a split of the positions (64) ending inside a row
                                               tile: rows 50 .. 63 have none in its second */
    };
    /* which form each case ran in: the backend's counters say whether it issued slices + merge */
    const int has_clusters = k_attention_has_clusters();
    backend_cuda_counters bc;
    backend_cuda_stats(gpu, &bc);
    int in_clusters = 0, in_heads[3] = {0, 0, 0}; /* several rows, 1 / 2 / 4 heads a cluster */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n_tok = cases[i].n_tok, H = cases[i].heads, KV = cases[i].kv_heads, hd = cases[i].hd;
        int len = cases[i].len, window = cases[i].window, pos0 = cases[i].pos0;
        const int prefill = n_tok > BACKEND_VERIFY_ROWS;
        if (small_shapes) { /* a prefill chunk keeps more rows than a verify pass */
            if (n_tok > (prefill ? 20 : 8)) n_tok = prefill ? 20 : 8;
            if (len > 300) len = window ? window + 63 : 300;
            if (pos0 + n_tok > len && !window) pos0 = len - n_tok;
            if (pos0 > 400) pos0 = 400;
        }
        const int kv_dim = KV * hd;
        /* Fill the ring with the positions the queries can see, as decoding would. */
        pair kc = pair_rand((size_t)len * kv_dim), vc = pair_rand((size_t)len * kv_dim);
        int start = pos0 - len + n_tok > 0 ? pos0 - len + n_tok : 0;
        int fill = pos0 - start;
        if (fill > 0) {
            pair src = pair_rand((size_t)fill * kv_dim);
            cpu->kv_write(cpu, kc.c, src.c, fill, kv_dim, start, len);
            gpu->kv_write(gpu, kc.g, src.g, fill, kv_dim, start, len);
            pair_free(&src);
        }
        pair nk = pair_rand((size_t)n_tok * kv_dim), nv = pair_rand((size_t)n_tok * kv_dim);
        cpu->kv_write(cpu, kc.c, nk.c, n_tok, kv_dim, pos0, len);
        gpu->kv_write(gpu, kc.g, nk.g, n_tok, kv_dim, pos0, len);
        cpu->kv_write(cpu, vc.c, nv.c, n_tok, kv_dim, pos0, len);
        gpu->kv_write(gpu, vc.g, nv.g, n_tok, kv_dim, pos0, len);
        char what[128];
        snprintf(what, sizeof what, "kv_write len %d pos %d", len, pos0);
        pair_check(&kc, 0, 0, NULL, what);
        pair_check(&vc, 0, 0, NULL, what);
        pair q = pair_rand((size_t)n_tok * H * hd), out = pair_new(NULL, (size_t)n_tok * H * hd);
        const int horizon = cases[i].horizon;
        gpu->set_horizon(gpu, horizon);
        cpu->attention(cpu, out.c, q.c, kc.c, vc.c, n_tok, pos0, len, window, H, KV, hd);
        backend_cuda_stats(gpu, &bc);
        const long split_before = bc.attn_split_ops, rows_before = bc.attn_rows_ops;
        gpu->attention(gpu, out.g, q.g, kc.g, vc.g, n_tok, pos0, len, window, H, KV, hd);
        backend_cuda_stats(gpu, &bc);
        EXPECT((bc.attn_rows_ops > rows_before) == prefill,
               "attention (%s), %d rows: the prefill kernel %s", form, n_tok,
               prefill ? "did not run" : "ran for a verify-sized chunk");
        const int clustered = !prefill && bc.attn_split_ops == split_before;
        in_clusters += clustered;
        int at_once;
        const int heads = k_attention_cluster_heads(hd, n_tok, H, KV, &at_once);
        if (clustered && n_tok > 1) {
            in_heads[heads == 4 ? 2 : heads == 2 ? 1 : 0]++;
            printf("attention (%s): %d rows, %d / %d heads of %d: %d heads a cluster, %d clusters "
                   "at once\n",
                   form, n_tok, H, KV, hd, heads, at_once);
        }
        /* a horizon within the cluster form's reach takes the case there, whatever the ring */
        if (horizon > 0 && has_clusters && bc.attn_form == K_ATTN_CLUSTER)
            EXPECT(clustered == (k_attention_splits(K_ATTN_CLUSTER, len, horizon, 1, H, hd) == 0),
                   "attention (%s), ring %d, horizon %d: the backend ran the %s form", form, len,
                   horizon, clustered ? "cluster" : "split");
        snprintf(what, sizeof what,
                 "attention (%s) %d rows, %d/%d heads, hd %d, len %d, window %d, pos %d, "
                 "horizon %d",
                 form, n_tok, H, KV, hd, len, window, pos0, horizon);
        /* A chunk of more than CPU_CHUNK_MIN rows runs the CPU's chunk kernel (its exp is a
         * polynomial, its sums vectorised), and the GPU's prefill kernel sums in its own order,
         * so each is checked against a double-precision reference instead of the other: two
         * fp32 orders differ by some 1e-5 in the scores of 256-wide random heads, which a
         * softmax that mixes two positions carries into its outputs. The bound is twice what
         * test_backend_cpu_chunk holds the CPU's kernel to (growing with the head width as the
         * scores' sums do): on these longer rings and wider heads the CPU's kernel reaches 1.35
         * of that (worst of 36 seeds of these cases). A window one position short moves some
         * output of each windowed case here by more than 1. */
        const int chunk = n_tok > CPU_CHUNK_MIN;
        const double grow = chunk && hd > 16 ? sqrt(hd / 16.0) : 1.0;
        if (chunk) {
            const size_t n = (size_t)n_tok * H * hd;
            double *want = attention_ref(q.c, kc.c, vc.c, n_tok, pos0, len, window, H, KV, hd);
            float *g = xmalloc(n * sizeof(float));
            gpu->download(gpu, g, out.g, n);
            char who[sizeof what + 8];
            snprintf(who, sizeof who, "%s (cpu)", what);
            close_all(out.c, want, n, 2e-5 * grow, 2e-4 * grow, who);
            snprintf(who, sizeof who, "%s (gpu)", what);
            close_all(g, want, n, 2e-5 * grow, 2e-4 * grow, who);
            free(g);
            free(want);
        } else {
            pair_check(&out, 1e-5, 1e-5, NULL, what);
        }
        if (n_tok > 1 && n_tok <= 8) {
            const size_t row = (size_t)H * hd;
            float *chunk = xmalloc((size_t)n_tok * row * sizeof(float));
            float *alone = xmalloc(row * sizeof(float));
            float *one = gpu->alloc(gpu, row);
            gpu->download(gpu, chunk, out.g, (size_t)n_tok * row);
            for (int t = 0; t < n_tok; t++) {
                gpu->attention(gpu, one, q.g + t * row, kc.g, vc.g, 1, pos0 + t, len, window, H, KV,
                               hd);
                gpu->download(gpu, alone, one, row);
                if (memcmp(alone, chunk + t * row, row * sizeof(float))) {
                    fprintf(stderr, "%s: row %d differs from the same row attended alone\n", what,
                            t);
                    failures++;
                    break;
                }
            }
            gpu->release(gpu, one);
            free(alone);
            free(chunk);
        }
        gpu->set_horizon(gpu, 0);
        pair_free(&kc);
        pair_free(&vc);
        pair_free(&nk);
        pair_free(&nv);
        pair_free(&q);
        pair_free(&out);
    }
    /* the default form takes the short rings in clusters where the device has them; the split
     * form never does */
    const int want = !strcmp(form, "default") && has_clusters;
    EXPECT(want ? in_clusters > 0 : in_clusters == 0,
           "attention (%s): %d cases ran in thread block clusters (the device %s them)", form,
           in_clusters, has_clusters ? "has" : "does not have");
    /* over several rows both forms run: a head a cluster (the 512-wide heads always; on an H200
     * the 3-row case too), and 4 heads where they take fewer waves (there the 5-row cases) */
    if (want)
        EXPECT(in_heads[0] > 0 && in_heads[2] > 0,
               "attention (%s): several rows ran %d times a head a cluster and %d times 4 heads "
               "(both forms expected)",
               form, in_heads[0], in_heads[2]);
    printf("attention (%s): %d cases in thread block clusters\n", form, in_clusters);
}
