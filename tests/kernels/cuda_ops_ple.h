/* cuda_ops_ple.h: the end of a decoder layer as one kernel (kernels/ple.cu, queued by
 * backend_cuda_fuse.c as pattern 4) against the CPU backend's separate ops, and each row of an
 * n-row launch against the same ops on that row alone, bit for bit - what a verify pass must
 * give the decode steps. Included once, by cuda_ops.c, after cuda_ops_fused.h (its helpers).
 *
 * The ops are forward.c's: rmsnorm(o) * w_o, x += o, h = gelu_tanh(Wg x) * ple[t], o = Wp h,
 * rmsnorm(o) * w_p, x += o and (with or without it) xn = rmsnorm(x) * w_x. Shapes: E4B's
 * (2560 x 256), a Gemma 4 E2B-like 1536 x 256, one whose 40 gate rows leave the last blocks of
 * the cluster none (1000 x 40), and the small model's (256 x 32); n = 1, 3, 17 (the most the
 * fused kernel takes) and 18 (the separate kernels again). Where the device runs the fused
 * kernel (k_ple_block_fits) the test checks that it ran - and where it does not, that it did not.
 *
 * Every form of the kernel (GEMMA_CUDA_PLE=stage, direct, l2) runs the whole check.
 *
 * Tolerance: the values after each norm are O(1): 2e-4 relative + 2e-4 absolute (both products
 * sum a few hundred to a few thousand terms, whose rounding, 1e-5 of sum |w x| (cuda_ops.c),
 * is at most sqrt(cols) times the result's relative error). h = gelu_tanh(g) * ple may be
 * near 0 where g's terms cancel, so its bound is the product's: 1.2 |ple| (2e-5 sum |w h1|),
 * with h1 the CPU's x after the first add (|gelu'| <= 1.13; h1's own rounding, ~1e-6
 * relative, is inside the 2e-5). */
static void ple_ops(backend *b, float *x, float *o, float *h, float *xn, const float *ple,
                    int stride, const tensor *wg, const tensor *wp, const tensor *w_o,
                    const tensor *w_p, const tensor *w_x, int n, int H, int P) {
    const float eps = 1e-6f;
    b->rmsnorm(b, o, o, w_o, n, H, eps);
    b->add(b, x, x, o, (size_t)n * H);
    b->matmul(b, h, wg, x, n);
    b->gelu_mul(b, h, h, ple, n, P, stride);
    b->matmul(b, o, wp, h, n);
    b->rmsnorm(b, o, o, w_p, n, H, eps);
    b->add(b, x, x, o, (size_t)n * H);
    if (xn) b->rmsnorm(b, xn, x, w_x, n, H, eps);
}

static long ple_calls(void) {
    backend_cuda_counters c;
    backend_cuda_stats(gpu, &c);
    return c.ple_calls;
}

static void test_ple_mode(const char *mode) {
    const int shapes[][2] = {{2560, 256}, {1536, 256}, {1000, 40}, {256, 32}};
    const int ns_full[] = {1, 3, 17, 18}, ns_small[] = {1, 3, 18};
    const int *ns = small_shapes ? ns_small : ns_full, n_ns = small_shapes ? 3 : 4;
    const weight_dtype dts[] = {DT_BF16, DT_F16, DT_F32};
    const int stage = !strcmp(mode, "stage") ? 1 : !strcmp(mode, "l2") ? 2 : 0;
    int fused_seen = 0;
    for (int si = small_shapes ? 2 : 0; si < 4; si++)
        for (int di = 0; di < (small_shapes ? 2 : 3); di++)
            for (int ni = 0; ni < n_ns; ni++)
                for (int with_xn = 0; with_xn < 2; with_xn++) {
                    const int H = shapes[si][0], P = shapes[si][1], n = ns[ni];
                    const int stride = 3 * P, off = P * rng_int(3);
                    const weight_dtype dt = dts[small_shapes && di ? 2 : di];
                    tensor wg = rand_tensor(P, H, dt), wp = rand_tensor(H, P, dt);
                    tensor w_o = rand_tensor(1, H, dt), w_p = rand_tensor(1, H, dt),
                           w_x = rand_tensor(1, H, dt);
                    float *x0 = rand_vec((size_t)n * H), *o0 = rand_vec((size_t)n * H);
                    pair x = pair_new(x0, (size_t)n * H), o = pair_new(o0, (size_t)n * H);
                    pair h = pair_new(NULL, (size_t)n * P), xn = pair_new(NULL, (size_t)n * H);
                    pair ple = pair_rand((size_t)n * stride);
                    const int fits = n <= 17 && k_ple_block_fits(H, P, (int)dt, stage);
                    const long calls0 = ple_calls();
                    ple_ops(gpu, x.g, o.g, h.g, with_xn ? xn.g : NULL, ple.g + off, stride, &wg,
                            &wp, &w_o, &w_p, &w_x, n, H, P);
                    /* the CPU's ops, h1 kept for h's bound */
                    const float eps = 1e-6f;
                    cpu->rmsnorm(cpu, o.c, o.c, &w_o, n, H, eps);
                    cpu->add(cpu, x.c, x.c, o.c, (size_t)n * H);
                    double *sg = dot_scale(&wg, x.c, n), *bound_h = xmalloc((size_t)n * P * 8);
                    for (int t = 0; t < n; t++)
                        for (int r = 0; r < P; r++)
                            bound_h[(size_t)t * P + r] = 1.2 *
                                                         fabs(ple.c[off + (size_t)t * stride + r]) *
                                                         sg[(size_t)t * P + r];
                    cpu->matmul(cpu, h.c, &wg, x.c, n);
                    cpu->gelu_mul(cpu, h.c, h.c, ple.c + off, n, P, stride);
                    cpu->matmul(cpu, o.c, &wp, h.c, n);
                    cpu->rmsnorm(cpu, o.c, o.c, &w_p, n, H, eps);
                    cpu->add(cpu, x.c, x.c, o.c, (size_t)n * H);
                    if (with_xn) cpu->rmsnorm(cpu, xn.c, x.c, &w_x, n, H, eps);
                    char what[128];
                    snprintf(what, sizeof what, "ple block (%s) [%d x %d] dtype %d n %d%s", mode, H,
                             P, dt, n, with_xn ? " + next norm" : "");
                    pair_check(&h, 1e-6, 2e-5, bound_h, what);
                    pair_check(&o, 2e-4, 2e-4, NULL, what);
                    pair_check(&x, 2e-4, 2e-4, NULL, what);
                    if (with_xn) pair_check(&xn, 2e-4, 2e-4, NULL, what);
                    free(sg);
                    free(bound_h);
                    const long ran = ple_calls() - calls0;
                    EXPECT(ran == (fits ? 1 : 0), "%s: the fused kernel ran %ld times (fits: %d)",
                           what, ran, fits);
                    fused_seen += fits;
                    /* row t alone gives row t's bits */
                    if (fits && n > 1) {
                        float *got[4], *one[4];
                        const pair *outs[4] = {&x, &o, &h, &xn};
                        const size_t w[4] = {(size_t)H, (size_t)H, (size_t)P, (size_t)H};
                        float *d[4];
                        for (int q = 0; q < 4; q++) {
                            got[q] = xmalloc((size_t)n * w[q] * sizeof(float));
                            one[q] = xmalloc(w[q] * sizeof(float));
                            pair_host(outs[q], got[q]);
                            d[q] = gpu->alloc(gpu, w[q]);
                        }
                        for (int t = 0; t < n; t++) {
                            gpu->upload(gpu, d[0], x0 + (size_t)t * H, (size_t)H);
                            gpu->upload(gpu, d[1], o0 + (size_t)t * H, (size_t)H);
                            ple_ops(gpu, d[0], d[1], d[2], with_xn ? d[3] : NULL,
                                    ple.g + off + (size_t)t * stride, stride, &wg, &wp, &w_o, &w_p,
                                    &w_x, 1, H, P);
                            for (int q = 0; q < (with_xn ? 4 : 3); q++) {
                                gpu->download(gpu, one[q], d[q], w[q]);
                                const size_t i = first_diff(one[q], got[q] + t * w[q], w[q]);
                                EXPECT(i == w[q],
                                       "%s: output %d, row %d: element %zu differs from the row "
                                       "alone",
                                       what, q, t, i);
                            }
                        }
                        for (int q = 0; q < 4; q++) {
                            free(got[q]);
                            free(one[q]);
                            gpu->release(gpu, d[q]);
                        }
                    }
                    pair_free(&x);
                    pair_free(&o);
                    pair_free(&h);
                    pair_free(&xn);
                    pair_free(&ple);
                    free(x0);
                    free(o0); /* the weights live on: the backend keys its copies by address */
                }
    printf("ple block (%s): %d fused launches checked%s\n", mode, fused_seen,
           fused_seen ? "" : " (this device runs none: sm_90 and later only)");
}

/* Each form on a backend of its own, put in gpu's place while its check runs. */
static void test_ple_block(void) {
    const char *modes[] = {"direct", "stage", "l2"};
    backend *dflt = gpu;
    for (int m = 0; m < 3; m++) {
        char err[256];
        setenv("GEMMA_CUDA_PLE", modes[m], 1);
        gpu = backend_cuda_new(err, sizeof err);
        unsetenv("GEMMA_CUDA_PLE");
        if (!gpu) die("%s", err);
        test_ple_mode(modes[m]);
        gpu->destroy(gpu);
        gpu = dflt;
    }
}
