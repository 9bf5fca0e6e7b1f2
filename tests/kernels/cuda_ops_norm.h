/* cuda_ops_norm.h: the norm folded into the matrix-vector launch that reads its result
 * (kernels/matvec.cu k_matvec_multi_norm, backend_cuda_fuse.c's step 2a, GEMMA_CUDA_FUSE_NORM).
 * Included once, by cuda_ops.c, after cuda_ops_bench.h (one translation unit).
 *
 *   - through the backend's queue, the three sequences of a decode layer and the lone norms:
 *     norm(o), x += o, norm(x) -> q / k / v (three products) or gate + up + GeLU pair;
 *     norm(o), x += o -> per-layer gate * vector from memory; norm(x) -> a product (the head),
 *     also in place. Against the CPU backend on fresh random inputs, and bit for bit against a
 *     backend with GEMMA_CUDA_FUSE_NORM=0 (every buffer: o, x, xn and the products), on
 *     E4B's shapes (2560 wide; 10240-row gate and up: many waves of blocks, the write-after-
 *     read hazard on x) and odd ones (264 wide: 9 virtual warps for 8 real ones; 72; widths
 *     that are not a multiple of the 16-byte vector, which run apart);
 *   - the launcher directly: it runs fused (returns 1) where it should, equals the separate
 *     kernels bit for bit, leaves its ticket zero, and runs the same ticket three times in a
 *     row; it falls back (returns 0) with the same bits for odd widths and other tunings;
 *   - a bad GEMMA_CUDA_FUSE_NORM value is refused with the variable's name.
 * Tolerances are cuda_ops.c's: norms 1e-5 relative + 1e-5 absolute; a product of normalised
 * inputs 1e-5 * sum |w x| (+ 1e-5), the GeLU forms with cuda_ops_fused.h's bounds. */

enum { NF_ATTN, NF_MLP, NF_PLE, NF_LONE, NF_LONE_INPLACE, NF_COUNT };
static const char *const nf_name[NF_COUNT] = {"norm/add/norm -> q,k,v", "norm/add/norm -> gate+up",
                                              "norm/add -> ple gate*mul", "norm -> product",
                                              "norm in place -> product"};

/* One decode-layer sequence on backend b; the buffers: 0 x, 1 o, 2 xn, 3..5 products, 6 mul. */
typedef struct {
    int variant, dim, rows[3], stride, off;
    tensor wo, wx, w[3];
} nf_case;

enum { NF_X, NF_O, NF_XN, NF_P0, NF_P1, NF_P2, NF_MUL, NF_BUFS };

static size_t nf_len(const nf_case *c, int k) {
    return k <= NF_XN    ? (size_t)c->dim
           : k == NF_MUL ? (size_t)c->stride
                         : (size_t)c->rows[k - NF_P0];
}

/* Run c on b from the host buffers init (x, o, mul) and download every buffer into res[k]. */
static void nf_run(backend *b, const nf_case *c, float *const *init, float **res) {
    float *d[NF_BUFS];
    for (int k = 0; k < NF_BUFS; k++) {
        d[k] = b->alloc(b, nf_len(c, k));
        if (init[k]) b->upload(b, d[k], init[k], nf_len(c, k));
    }
    const int D = c->dim;
    const float eps = 1e-6f;
    switch (c->variant) {
    case NF_ATTN:
    case NF_MLP:
        b->rmsnorm(b, d[NF_O], d[NF_O], &c->wo, 1, D, eps);
        b->add(b, d[NF_X], d[NF_X], d[NF_O], (size_t)D);
        b->rmsnorm(b, d[NF_XN], d[NF_X], &c->wx, 1, D, eps);
        if (c->variant == NF_ATTN) {
            for (int i = 0; i < 3; i++)
                b->matmul(b, d[NF_P0 + i], &c->w[i], d[NF_XN], 1);
        } else {
            b->matmul(b, d[NF_P0], &c->w[0], d[NF_XN], 1);
            b->matmul(b, d[NF_P1], &c->w[1], d[NF_XN], 1);
            b->gelu_mul(b, d[NF_P0], d[NF_P0], d[NF_P1], 1, c->rows[0], c->rows[0]);
        }
        break;
    case NF_PLE:
        b->rmsnorm(b, d[NF_O], d[NF_O], &c->wo, 1, D, eps);
        b->add(b, d[NF_X], d[NF_X], d[NF_O], (size_t)D);
        b->matmul(b, d[NF_P0], &c->w[0], d[NF_X], 1);
        b->gelu_mul(b, d[NF_P0], d[NF_P0], d[NF_MUL] + c->off, 1, c->rows[0], c->stride);
        break;
    case NF_LONE:
        b->rmsnorm(b, d[NF_XN], d[NF_X], &c->wx, 1, D, eps);
        b->matmul(b, d[NF_P0], &c->w[0], d[NF_XN], 1);
        break;
    default: /* NF_LONE_INPLACE */
        b->rmsnorm(b, d[NF_X], d[NF_X], &c->wx, 1, D, eps);
        b->matmul(b, d[NF_P0], &c->w[0], d[NF_X], 1);
        break;
    }
    for (int k = 0; k < NF_BUFS; k++) {
        b->download(b, res[k], d[k], nf_len(c, k));
        b->release(b, d[k]);
    }
}

/* |g - c| <= atol + rtol * (scale ? scale[i] : |c|) for every i. */
static void nf_near(const float *g, const float *c, size_t n, double atol, double rtol,
                    const double *scale, const char *what, const char *buf) {
    for (size_t i = 0; i < n; i++) {
        const double tol = atol + rtol * (scale ? scale[i] : fabs(c[i]));
        if (!(fabs((double)g[i] - c[i]) <= tol)) {
            fprintf(stderr, "%s, %s: element %zu of %zu: gpu %.9g cpu %.9g (tolerance %.3g)\n",
                    what, buf, i, n, g[i], c[i], tol);
            failures++;
            return;
        }
    }
}

/* sum_c |w[r][c] x[c]| per row (cuda_ops.c's dot_scale for one input). */
static double *nf_scale(const tensor *w, const float *x) {
    return dot_scale(w, x, 1);
}

static void nf_check(backend *off, const nf_case *c, const char *what) {
    const int D = c->dim;
    float *init[NF_BUFS] = {0}, *rc[NF_BUFS], *rg[NF_BUFS], *r0[NF_BUFS];
    init[NF_X] = rand_vec((size_t)D);
    init[NF_O] = rand_vec((size_t)D);
    init[NF_MUL] = rand_vec((size_t)c->stride);
    for (int k = 0; k < NF_BUFS; k++) {
        rc[k] = xmalloc(nf_len(c, k) * sizeof(float));
        rg[k] = xmalloc(nf_len(c, k) * sizeof(float));
        r0[k] = xmalloc(nf_len(c, k) * sizeof(float));
    }
    nf_run(cpu, c, init, rc);
    nf_run(gpu, c, init, rg);
    nf_run(off, c, init, r0);
    static const char *const bufname[NF_BUFS] = {"x",         "o",         "xn", "product 0",
                                                 "product 1", "product 2", "mul"};
    /* bit for bit against GEMMA_CUDA_FUSE_NORM=0, every buffer */
    for (int k = 0; k < NF_BUFS; k++) {
        size_t i = 0, n = nf_len(c, k);
        while (i < n && !memcmp(&rg[k][i], &r0[k][i], sizeof(float)))
            i++;
        EXPECT(i == n,
               "%s, %s: element %zu of %zu differs from GEMMA_CUDA_FUSE_NORM=0's: %.9g vs %.9g",
               what, bufname[k], i, n, i < n ? rg[k][i] : 0.0, i < n ? r0[k][i] : 0.0);
    }
    /* against the CPU */
    for (int k = NF_X; k <= NF_XN; k++)
        nf_near(rg[k], rc[k], (size_t)D, 1e-5, 1e-5, NULL, what, bufname[k]);
    const float *in = c->variant == NF_PLE || c->variant == NF_LONE_INPLACE ? rc[NF_X] : rc[NF_XN];
    const int n_prod = c->variant == NF_ATTN ? 3 : c->variant == NF_MLP ? 2 : 1;
    double *sc[3] = {0};
    for (int p = 0; p < n_prod; p++)
        sc[p] = nf_scale(&c->w[p], in);
    if (c->variant == NF_MLP) { /* gate = gelu(w0 . xn) * up: cuda_ops_fused.h's bound */
        float *graw = xmalloc((size_t)c->rows[0] * sizeof(float));
        for (int r = 0; r < c->rows[0]; r++) {
            double acc = 0;
            for (int j = 0; j < D; j++)
                acc += tensor_get(&c->w[0], (size_t)r * D + j) * in[j];
            graw[r] = (float)acc;
            sc[0][r] = 1.2 * sc[0][r] * fabs(rc[NF_P1][r]) + (fabs(graw[r]) + 1) * sc[1][r];
        }
        free(graw);
    } else if (c->variant == NF_PLE) {
        for (int r = 0; r < c->rows[0]; r++)
            sc[0][r] = 1.2 * sc[0][r] * fabs(init[NF_MUL][c->off + r]);
    }
    for (int p = 0; p < n_prod; p++) {
        nf_near(rg[NF_P0 + p], rc[NF_P0 + p], (size_t)c->rows[p], 1e-5, 1e-5, sc[p], what,
                bufname[NF_P0 + p]);
        free(sc[p]);
    }
    for (int k = 0; k < NF_BUFS; k++) {
        free(init[k]);
        free(rc[k]);
        free(rg[k]);
        free(r0[k]);
    }
}

static void test_norm_fold_queue(void) {
    char err[256];
    setenv("GEMMA_CUDA_FUSE_MM", "1", 1);
    setenv("GEMMA_CUDA_FUSE_NORM", "0", 1);
    backend *off = backend_cuda_new(err, sizeof err);
    unsetenv("GEMMA_CUDA_FUSE_MM");
    unsetenv("GEMMA_CUDA_FUSE_NORM");
    if (!off) die("%s", err);
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    /* widths: E4B's (bf16 only: the large shapes cost CPU time), 264 (9 virtual warps), 72,
     * and one that is not a multiple of 8 (runs apart) */
    const int widths[] = {2560, 264, 72, 2563};
    for (int wi = 0; wi < 4; wi++)
        for (int di = 0; di < 3; di++)
            for (int v = 0; v < NF_COUNT; v++) {
                const int e4b = widths[wi] == 2560;
                if (e4b && dts[di] != DT_BF16) continue;
                nf_case c = {.variant = v, .dim = small_shapes && e4b ? 96 : widths[wi]};
                if (small_shapes && wi == 3) c.dim = 99;
                if (e4b && !small_shapes) {
                    const int r[NF_COUNT][3] = {{2048, 512, 512},
                                                {10240, 10240, 0},
                                                {256, 0, 0},
                                                {30000, 0, 0},
                                                {2560, 0, 0}};
                    memcpy(c.rows, r[v], sizeof c.rows);
                } else {
                    for (int i = 0; i < 3; i++)
                        c.rows[i] = odd_size(small_shapes ? 10 : 100, small_shapes ? 30 : 900);
                    if (v == NF_MLP) c.rows[1] = c.rows[0];
                }
                const int n_mat = v == NF_ATTN ? 3 : v == NF_MLP ? 2 : 1;
                for (int i = 0; i < 3; i++)
                    if (i >= n_mat) c.rows[i] = 1; /* unused */
                c.stride = c.rows[0] * (2 + rng_int(3));
                c.off = c.rows[0] * rng_int(2);
                c.wo = rand_tensor(1, c.dim, dts[di]);
                c.wx = rand_tensor(1, c.dim, dts[di]);
                for (int i = 0; i < n_mat; i++)
                    c.w[i] = rand_tensor(c.rows[i], c.dim, dts[di]);
                char what[160];
                snprintf(what, sizeof what, "norm fold: %s, dtype %d, width %d, rows %d/%d/%d",
                         nf_name[v], dts[di], c.dim, c.rows[0], n_mat > 1 ? c.rows[1] : 0,
                         n_mat > 2 ? c.rows[2] : 0);
                nf_check(off, &c, what);
                /* the tensors stay alive: the backends key their device copies by host data */
            }
    off->destroy(off);
    /* a bad value is refused with the variable's name */
    setenv("GEMMA_CUDA_FUSE_NORM", "yes", 1);
    err[0] = 0;
    backend *bad = backend_cuda_new(err, sizeof err);
    unsetenv("GEMMA_CUDA_FUSE_NORM");
    EXPECT(!bad && strstr(err, "GEMMA_CUDA_FUSE_NORM"), "GEMMA_CUDA_FUSE_NORM=yes accepted (%s)",
           err);
    if (bad) bad->destroy(bad);
}

/* ---- the launcher itself ------------------------------------------------------------------ */

static float *nf_dev(const float *h, size_t n) {
    float *d = NULL;
    CUDA_OK(cudaMalloc((void **)&d, n * sizeof(float)));
    if (h) CUDA_OK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

static void *nf_dev_weights(const tensor *t) {
    const size_t bytes = (size_t)t->rows * t->cols * dtype_size(t->dtype);
    void *d = NULL;
    CUDA_OK(cudaMalloc(&d, bytes));
    CUDA_OK(cudaMemcpy(d, t->data, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* The gate + up pair (10240 rows each at E4B's width: many waves) with norm/add/norm, through
 * k_matvec_multi_norm and through k_norm_add_norm + k_matvec_multi, under `tune`. */
static void nf_kernel_case(int dim, int rows, const k_mv_tuning *tune, int want_fused) {
    const tensor wg = rand_tensor(rows, dim, DT_BF16), wu = rand_tensor(rows, dim, DT_BF16);
    const tensor wo = rand_tensor(1, dim, DT_BF16), wx = rand_tensor(1, dim, DT_BF16);
    void *dwg = nf_dev_weights(&wg), *dwu = nf_dev_weights(&wu), *dwo = nf_dev_weights(&wo),
         *dwx = nf_dev_weights(&wx);
    float *xh = rand_vec((size_t)dim), *oh = rand_vec((size_t)dim);
    unsigned *ticket = NULL;
    CUDA_OK(cudaMalloc((void **)&ticket, sizeof(unsigned)));
    CUDA_OK(cudaMemset(ticket, 0, sizeof(unsigned)));
    /* [0]: apart, [1]: fused; each: x, o, xn, gate, up on the host */
    float *res[2][5];
    const size_t lens[5] = {(size_t)dim, (size_t)dim, (size_t)dim, (size_t)rows, (size_t)rows};
    CHECK(k_matvec_set_tuning(tune) == 0);
    for (int fused = 0; fused < 2; fused++)
        for (int rep = 0; rep < (fused ? 3 : 1); rep++) { /* the same ticket, three times */
            float *d[5];
            d[0] = nf_dev(xh, (size_t)dim);
            d[1] = nf_dev(oh, (size_t)dim);
            for (int k = 2; k < 5; k++)
                d[k] = nf_dev(NULL, lens[k]);
            k_mv_seg seg = {.out = d[3],
                            .w = dwg,
                            .rows = rows,
                            .epilogue = K_MV_GELU_PAIR,
                            .w_up = dwu,
                            .out_up = d[4]};
            if (fused) {
                const k_mv_norm kn = {d[0], d[1], d[2], dwo, dwx, 1e-6f, ticket};
                const int got = k_matvec_multi_norm(0, &seg, 1, KDT_BF16, &kn, dim);
                EXPECT(got == want_fused,
                       "k_matvec_multi_norm width %d unroll %d prefetch %d decode %d: returned "
                       "%d, expected %d",
                       dim, tune->unroll, tune->prefetch, tune->decode, got, want_fused);
            } else {
                k_norm_add_norm(0, d[0], d[1], dwo, d[2], dwx, KDT_BF16, 1, dim, 1e-6f);
                k_matvec_multi(0, &seg, 1, KDT_BF16, d[2], dim, 1);
            }
            CUDA_OK(cudaDeviceSynchronize());
            unsigned t = 1;
            CUDA_OK(cudaMemcpy(&t, ticket, sizeof t, cudaMemcpyDeviceToHost));
            EXPECT(t == 0, "k_matvec_multi_norm width %d: the ticket is %u after the launch", dim,
                   t);
            for (int k = 0; k < 5; k++) {
                float *h = xmalloc(lens[k] * sizeof(float));
                CUDA_OK(cudaMemcpy(h, d[k], lens[k] * sizeof(float), cudaMemcpyDeviceToHost));
                CUDA_OK(cudaFree(d[k]));
                if (rep == 0)
                    res[fused][k] = h;
                else { /* a repeat gives the same bits */
                    EXPECT(!memcmp(h, res[1][k], lens[k] * sizeof(float)),
                           "k_matvec_multi_norm width %d: run %d differs from run 1 (buffer %d)",
                           dim, rep + 1, k);
                    free(h);
                }
            }
        }
    for (int k = 0; k < 5; k++) {
        size_t i = 0;
        while (i < lens[k] && !memcmp(&res[0][k][i], &res[1][k][i], sizeof(float)))
            i++;
        EXPECT(i == lens[k],
               "k_matvec_multi_norm width %d rows %d unroll %d: buffer %d element %zu differs "
               "from the separate kernels': %.9g vs %.9g",
               dim, rows, tune->unroll, k, i, i < lens[k] ? res[1][k][i] : 0.0,
               i < lens[k] ? res[0][k][i] : 0.0);
        free(res[0][k]);
        free(res[1][k]);
    }
    const k_mv_tuning dflt = {8, 2, K_MV_LEAN, 0};
    k_matvec_set_tuning(&dflt);
    CUDA_OK(cudaFree(dwg));
    CUDA_OK(cudaFree(dwu));
    CUDA_OK(cudaFree(dwo));
    CUDA_OK(cudaFree(dwx));
    CUDA_OK(cudaFree(ticket));
    free(xh);
    free(oh);
    free((void *)wg.data);
    free((void *)wu.data);
    free((void *)wo.data);
    free((void *)wx.data);
}

static void test_norm_fold_kernel(void) {
    CUDA_OK(cudaDeviceSynchronize()); /* the backends' streams are done with the device */
    const int dim = small_shapes ? 96 : 2560, rows = small_shapes ? 37 : 10240;
    const k_mv_tuning lean = {8, 2, K_MV_LEAN, 0}, lean_u4 = {4, 2, K_MV_LEAN, 0},
                      no_pf = {8, 0, K_MV_LEAN, 0}, pf4 = {8, 4, K_MV_LEAN, 0},
                      general = {8, 2, K_MV_GENERAL, 0}, persist = {8, 2, K_MV_LEAN, -1};
    nf_kernel_case(dim, rows, &lean, 1);
    nf_kernel_case(dim, rows, &lean_u4, 1);
    nf_kernel_case(dim, rows, &no_pf, 1);
    nf_kernel_case(264, odd_size(small_shapes ? 20 : 3000, 500), &lean, 1);
    nf_kernel_case(small_shapes ? 99 : 2563, rows, &lean, 0); /* not a multiple of 8: apart */
    nf_kernel_case(dim, rows, &pf4, 0);
    nf_kernel_case(dim, rows, &general, 0);
    nf_kernel_case(dim, rows, &persist, 0);
}

static void test_norm_fold(void) {
    test_norm_fold_queue();
    test_norm_fold_kernel();
}
