/* cuda_ops_draft.h: the drafter's checks of tests/kernels/cuda_ops.c (included there, after
 * the whole-model checks; one translation unit, so it shares cuda_ops.c's helpers): the
 * draft_head and embed_dev ops against the CPU path (`cuda_ops ops`, `cuda_ops draft`), and on
 * a model folder with its assistant the device draft chain against single steps and the CPU
 * drafter, and lossless speculation k = 1..8 (`cuda_ops draft DIR`). */
/* ---- the drafter's head on the device (draft_head, embed_dev) -------------------------- */

/* Index order of the top-k reference: higher score first, then the lower index. */
static const float *cmp_scores;
static int cmp_cluster(const void *pa, const void *pb) {
    const int a = *(const int *)pa, b = *(const int *)pb;
    if (cmp_scores[a] != cmp_scores[b]) return cmp_scores[a] > cmp_scores[b] ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int download_word(backend *b, const int *dev) {
    float w;
    int v;
    b->download(b, &w, (const float *)dev, 1);
    memcpy(&v, &w, sizeof v);
    return v;
}

/* One shape of the head: nc clusters of per tokens, cols columns, top k. Checks the clusters
 * (exactly the sorted order), the logits (the CPU matmul of each cluster's rows, to the dot
 * tolerance) and the id: a planted exact tie between two kept rows that beat every other
 * token (the smaller token id must win), then a fresh x (same id as the CPU unless the CPU's
 * best two are within rounding). */
static void draft_head_case(weight_dtype dt, int nc, int per, int cols, int k) {
    const int rows = nc * per;
    char what[160];
    snprintf(what, sizeof what, "draft_head dtype %d: %d clusters x %d tokens, %d cols, top %d", dt,
             nc, per, cols, k);
    tensor head = rand_tensor(rows, cols, dt);
    int *ordering = xmalloc((size_t)rows * sizeof(int));
    for (int i = 0; i < rows; i++)
        ordering[i] = i;
    for (int i = rows - 1; i > 0; i--) { /* a random permutation of the token ids */
        int j = rng_int(i + 1), t = ordering[i];
        ordering[i] = ordering[j];
        ordering[j] = t;
    }
    /* Centroid scores with a planted tie at the top: clusters a < b score the same, above
     * every other, so a must come first and b second. */
    float *cs = rand_vec((size_t)nc);
    int a = rng_int(nc), b = rng_int(nc - 1);
    b += b >= a;
    if (a > b) {
        int t = a;
        a = b;
        b = t;
    }
    cs[a] = cs[b] = 3.0f;
    float *x = rand_vec((size_t)cols);
    /* Two kept rows (in cluster a, and in b when b is kept) set to 2 * sign(x): each dots to
     * 2 * sum |x|, bit for bit the same, and more than any random row can reach. */
    const int r1 = a * per + rng_int(per), r2 = (k >= 2 ? b : a) * per + rng_int(per);
    const int tie = r1 == r2 ? -1 : (ordering[r1] < ordering[r2] ? ordering[r1] : ordering[r2]);
    for (int c = 0; c < cols && tie >= 0; c++) {
        const float v = x[c] > 0 ? 2.0f : -2.0f;
        for (int r = 0; r < 2; r++) {
            const size_t i = (size_t)(r ? r2 : r1) * cols + c;
            if (dt == DT_F32)
                ((float *)head.data)[i] = v;
            else
                ((uint16_t *)head.data)[i] = dt == DT_BF16 ? f32_to_bf16(v) : f32_to_f16(v);
        }
    }

    float *dcs = gpu->alloc(gpu, (size_t)nc), *dlog = gpu->alloc(gpu, (size_t)k * per);
    int *did = (int *)gpu->alloc(gpu, 1), *dwork = (int *)gpu->alloc(gpu, (size_t)k + 4);
    gpu->upload(gpu, dcs, cs, (size_t)nc);
    int *want_cl = xmalloc((size_t)nc * sizeof(int)), *got_cl = xmalloc((size_t)(k + 4) * 4);
    for (int i = 0; i < nc; i++)
        want_cl[i] = i;
    cmp_scores = cs;
    qsort(want_cl, (size_t)nc, sizeof(int), cmp_cluster);
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* a fresh x: no planted winner, and the op's running best reset */
            free(x);
            x = rand_vec((size_t)cols);
        }
        pair px = pair_new(x, (size_t)cols), ref = pair_new(NULL, (size_t)k * per);
        gpu->draft_head(gpu, did, dwork, dlog, dcs, nc, k, &head, ordering, px.g);
        float words[64 + 4];
        CHECK(k + 4 <= 68);
        gpu->download(gpu, words, (const float *)dwork, (size_t)k);
        memcpy(got_cl, words, (size_t)k * sizeof(int));
        int same = 1;
        for (int j = 0; j < k; j++)
            same &= got_cl[j] == want_cl[j];
        EXPECT(same, "%s: clusters differ from the sorted scores (first: gpu %d want %d)", what,
               got_cl[0], want_cl[0]);
        /* The reference way: one CPU matmul per kept cluster, then better() on the host. */
        double *scale = xmalloc((size_t)k * per * sizeof(double));
        for (int j = 0; j < k; j++) {
            tensor part = head;
            part.data = (const char *)head.data + (size_t)want_cl[j] * per * cols * dtype_size(dt);
            part.rows = per;
            cpu->matmul(cpu, ref.c + (size_t)j * per, &part, px.c, 1);
            double *s = dot_scale(&part, px.c, 1);
            memcpy(scale + (size_t)j * per, s, (size_t)per * sizeof(double));
            free(s);
        }
        gpu->copy(gpu, ref.g, dlog, (size_t)k * per);
        char tag[200];
        snprintf(tag, sizeof tag, "%s%s", what, round ? ", fresh x" : "");
        pair_check(&ref, 1e-6, 1e-5, scale, tag);
        int best = -1, second_gap_ok = 1;
        float bs = -INFINITY, gs = -INFINITY;
        for (int i = 0; i < k * per; i++) {
            const int id = ordering[want_cl[i / per] * per + i % per];
            const float s = ref.c[i];
            if (s > bs || (s == bs && id < best)) {
                bs = s;
                best = id;
            }
        }
        const int got = download_word(gpu, did);
        for (int i = 0; i < k * per; i++) {
            const int id = ordering[want_cl[i / per] * per + i % per];
            if (id == got) gs = ref.c[i];
            if (id != best && fabs(ref.c[i] - bs) <= 2e-5 * scale[i] + 1e-6) second_gap_ok = 0;
        }
        if (round == 0 && tie >= 0)
            EXPECT(got == tie && best == tie, "%s: planted tie: gpu %d cpu %d, want %d", what, got,
                   best, tie);
        else if (second_gap_ok)
            EXPECT(got == best, "%s: gpu picks %d, cpu %d", what, got, best);
        else
            EXPECT(fabs(gs - bs) <= 2e-5 * (1 + fabs(bs)), "%s: gpu picks %d (%g), cpu %d (%g)",
                   what, got, gs, best, bs);
        free(scale);
        pair_free(&px);
        pair_free(&ref);
    }
    gpu->release(gpu, dcs);
    gpu->release(gpu, dlog);
    gpu->release(gpu, (float *)did);
    gpu->release(gpu, (float *)dwork);
    free(want_cl);
    free(got_cl);
    free(cs);
    free(x);
    /* head and ordering stay alive: the backend keys its device copies by the host pointers, so
     * a later case must not get either address again */
}

static void test_draft_head(void) {
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    for (int di = 0; di < 3; di++) {
        if (small_shapes) {
            draft_head_case(dts[di], 24, 8, 64, 3);
            draft_head_case(dts[di], 10, 5, 40 + 1 + rng_int(7), 1);
            continue;
        }
        draft_head_case(dts[di], 96, 64, 256, 2);                   /* gemma4-tiny's assistant */
        draft_head_case(dts[di], 512, 32, 256, 32);                 /* E4B's top-k, more clusters */
        draft_head_case(dts[di], 40, 16, 128, 40);                  /* every cluster kept */
        draft_head_case(dts[di], 64, 24, 200 + rng_int(50), 5);     /* odd columns: scalar path */
        draft_head_case(dts[di], 2048, 4, 256 + 8 * rng_int(4), 1); /* a single cluster kept */
    }
    /* embed_dev: the ids come from device memory. */
    const int V = 300, cols = 96, n = 7;
    tensor table = rand_tensor(V, cols, DT_BF16);
    int ids[7];
    for (int i = 0; i < n; i++)
        ids[i] = rng_int(V);
    float words[7];
    memcpy(words, ids, sizeof ids);
    int *dids = (int *)gpu->alloc(gpu, (size_t)n);
    gpu->upload(gpu, (float *)dids, words, (size_t)n);
    pair out = pair_new(NULL, (size_t)n * cols);
    cpu->embed(cpu, out.c, &table, ids, n, 1.7f);
    gpu->embed_dev(gpu, out.g, &table, dids, n, 1.7f);
    pair_check(&out, 1e-6, 2e-6, NULL, "embed_dev");
    pair_free(&out);
    gpu->release(gpu, (float *)dids);
}

/* The drafter on a real model and its assistant (DIR and DIR-assistant): a draft round by
 * drafter_draft (the device chain: eager, then captured, then replayed) against the same
 * steps one by one (drafter_step, device head, no graph: the same kernels, so the same
 * tokens exactly), and against the CPU drafter (the reference head on the host) to rounding:
 * where they differ, the CPU's scores of the two tokens must be within 2e-3 (1 + |best|). */
static void check_drafter(const char *dir) {
    char err[512], adir[1024];
    snprintf(adir, sizeof adir, "%s-assistant", dir);
    model *m = load_model_prec(dir);
    assistant *as = assistant_load(adir, err, sizeof err);
    if (!as) die("%s", err);
    const int V = model_vocab_size(m), N = 80, ROUNDS = 8;
    decoder *dc, *dg;
    decoders_new(m, dir, 256, &dc, &dg);
    drafter *rc = drafter_new(as, dc, 0, err, sizeof err),
            *rg = drafter_new(as, dg, 0, err, sizeof err);
    if (!rc || !rg) die("%s: %s", adir, err);
    int *ids = xmalloc((size_t)N * sizeof(int)), *sc_ids = xmalloc((size_t)V * sizeof(int));
    float *sc = xmalloc((size_t)V * sizeof(float)), *lc = xmalloc((size_t)V * sizeof(float));
    for (int i = 0; i < N; i++)
        ids[i] = rng_int(V);
    CHECK(decoder_forward(dc, ids, N, lc, N - 1) == 0 && decoder_forward(dg, ids, N, NULL, 0) == 0);
    int x = argmax_host(lc, V), exact = 0, agree = 0, total = 0;
    long captures = 0, replays = 0;
    for (int r = 0; r < ROUNDS; r++) {
        const int k = r == ROUNDS - 1 ? 3 : 6, pos = decoder_pos(dg);
        int chain[16], steps[16], ref[16];
        backend_cuda_counters c0, c1;
        backend_cuda_stats(dg->b, &c0);
        drafter_draft(rg, dg->hidden_rows - 1, x, pos, k, chain);
        backend_cuda_stats(dg->b, &c1);
        captures += c1.captures - c0.captures;
        replays += c1.replays - c0.replays;
        drafter_begin(rg, dg->hidden_rows - 1);
        drafter_begin(rc, dc->hidden_rows - 1);
        for (int i = 0, xs = x; i < k; i++) {
            steps[i] = xs = drafter_step(rg, xs, pos, NULL, NULL, NULL);
            exact += steps[i] == chain[i];
            total++;
        }
        for (int i = 0, xr = x; i < k; i++) {
            int n_sc = 0;
            ref[i] = xr = drafter_step(rc, xr, pos, sc_ids, sc, &n_sc);
            if (ref[i] == chain[i]) {
                agree++;
                continue;
            }
            float best = -INFINITY, mine = NAN;
            for (int j = 0; j < n_sc; j++) {
                if (sc_ids[j] == ref[i]) best = sc[j];
                if (sc_ids[j] == chain[i]) mine = sc[j];
            }
            EXPECT(fabs(best - mine) <= 2e-3 * (1 + fabs(best)),
                   "%s: round %d step %d: gpu drafts %d (cpu score %g), cpu %d (%g)", adir, r, i,
                   chain[i], mine, ref[i], best);
            break; /* the chains part here; later steps start from different tokens */
        }
        /* Advance both targets by the CPU's greedy token. */
        CHECK(decoder_forward(dc, &x, 1, lc, 0) == 0 && decoder_forward(dg, &x, 1, NULL, 0) == 0);
        x = argmax_host(lc, V);
    }
    EXPECT(exact == total, "%s: the graph chain and the single steps differ (%d of %d equal)", adir,
           exact, total);
    /* k = 6: eager, captured, then ROUNDS - 3 replays; the last round (k = 3) is eager. */
    const char *graphs = getenv("GEMMA_CUDA_GRAPHS");
    if (!graphs || strcmp(graphs, "0"))
        EXPECT(captures == 1 && replays == ROUNDS - 3,
               "%s: the draft chain: %ld captures, %ld replays (want 1 and %d)", adir, captures,
               replays, ROUNDS - 3);
    printf("%-40s drafter: %d draft tokens, graph chain == single steps %d/%d, == cpu %d/%d "
           "(rest within rounding); graphs: %ld captured, %ld replays\n",
           adir, total, exact, total, agree, total, captures, replays);
    drafter_free(rc);
    drafter_free(rg);
    decoder_free(dc);
    decoder_free(dg);
    assistant_free(as);
    model_free(m);
    free(ids);
    free(sc_ids);
    free(sc);
    free(lc);
}

/* Lossless speculation on the GPU, in one process: spec_generate with k = 1..8 must serve
 * exactly the tokens of k = 0 (plain greedy through the same head) on DIR with DIR-assistant,
 * with the full head and with a keepset of 1024, at the native window and at 24, for the first
 * two prompts of DIR/eval/prompts_tune.jsonl. A difference prints its first position. */
static void check_lossless(const char *dir) {
    char err[512], adir[1024], path[1024];
    snprintf(adir, sizeof adir, "%s-assistant", dir);
    snprintf(path, sizeof path, "%s/eval/prompts_tune.jsonl", dir);
    model *m = load_model_prec(dir);
    assistant *as = assistant_load(adir, err, sizeof err);
    prompt_set ps;
    if (!as || prompt_set_load(path, &ps, err, sizeof err)) die("%s", err);
    const int V = model_vocab_size(m), NEW = 96, P = ps.n < 2 ? ps.n : 2;
    snprintf(path, sizeof path, "%s/keepset.txt", dir);
    keepset ks;
    const int have_ks = keepset_load(path, 1024, V, &ks, err, sizeof err) == 0;
    int *want = xmalloc((size_t)NEW * sizeof(int)), *got = xmalloc((size_t)NEW * sizeof(int));
    for (int cfg = 0; cfg < 4; cfg++) {
        const int use_ks = cfg & 1, window = cfg & 2 ? 24 : 0;
        if (use_ks && !have_ks) continue;
        engine_options o = {.max_model_len = 1200, .device = "cuda", .sliding_window = window};
        decoder *d = decoder_new(m, &o, err, sizeof err);
        if (!d) die("%s: %s", dir, err);
        drafter *dr = drafter_new(as, d, 0, err, sizeof err);
        if (!dr) die("%s: %s", adir, err);
        head *h = head_new(d, use_ks ? &ks : NULL);
        int bad = 0;
        double accepted = 0, steps = 0;
        for (int p = 0; p < P; p++) {
            const prompt *pr = &ps.items[p];
            if (!pr->tokens || pr->n_tokens + NEW > o.max_model_len) continue;
            for (int k = 0; k <= 8; k++) {
                speculator s;
                speculator_init(&s, d, h, k ? dr : NULL, k);
                int n = spec_generate(&s, pr->tokens, pr->n_tokens, NEW, -1, k ? got : want, NULL,
                                      NULL);
                CHECK(n == NEW);
                accepted += k ? s.stats.accepted : 0;
                steps += k ? s.stats.steps : 0;
                int first = -1;
                for (int i = 0; i < NEW && k && first < 0; i++)
                    if (got[i] != want[i]) first = i;
                if (first >= 0) bad++;
                EXPECT(first < 0,
                       "%s: %s, window %d, prompt %d, k %d: token %d is %d, plain greedy has %d",
                       dir, use_ks ? "keepset 1024" : "full head", window, p, k, first,
                       first >= 0 ? got[first] : 0, first >= 0 ? want[first] : 0);
            }
        }
        printf("%-40s lossless, %s, window %s: k = 1..8 %s plain greedy over %d prompt(s) x %d "
               "tokens (%.2f drafts accepted per verify)\n",
               dir, use_ks ? "keepset 1024" : "full head", window ? "24" : "native",
               bad ? "DIFFER from" : "all equal", P, NEW, steps ? accepted / steps : 0.0);
        head_free(h);
        drafter_free(dr);
        decoder_free(d);
    }
    if (have_ks) keepset_free(&ks);
    free(want);
    free(got);
    prompt_set_free(&ps);
    assistant_free(as);
    model_free(m);
}

/* cuda_ops draft [small] | draft DIR...: the head op alone, or the drafter on models. */
static int run_draft(int argc, char **argv) {
    cpu = backend_cpu_new(0);
    char err[256];
    gpu = backend_cuda_new(err, sizeof err);
    if (!gpu) die("%s", err);
    if (argc <= 2 || !strcmp(argv[2], "small")) {
        small_shapes = argc > 2;
        test_draft_head();
    } else {
        for (int i = 2; i < argc; i++) {
            check_drafter(argv[i]);
            check_lossless(argv[i]);
        }
    }
    printf("draft: %s\n", failures ? "FAILED" : "the device head agrees with the CPU path");
    gpu->destroy(gpu);
    cpu->destroy(cpu);
    return failures != 0;
}
