/* cuda_ops_matvec.h: the variants of matvec.cu's products a backend can take, checked the way
 * the default kernels are: against the CPU backend on fresh random inputs, and bit for bit
 * against the default where matvec.cu's reproducibility rule says a row's result depends only
 * on the shapes of the matrices in its launch. The variants: the rows kernel for 2 .. 8 inputs
 * at every size (k_matvec_test_rows_min(0); the engine takes it from 1 MiB of weights only),
 * and the tensor cores (GEMMA_CUDA_MV_MMA=1 and =2, bf16 and int4; =int4, int4 alone: the int4
 * products as the default's quantized ones are checked, test_matmul_quant). Included once, by
 * cuda_ops.c, after cuda_ops_fused.h (one translation unit).
 *
 * Each variant runs in its own backend (every matrix product may join a launch there, as in
 * the default ops test):
 *   - test_matmul: every dtype, n = 1 .. 64, aligned and odd cols, rows not a multiple of 8;
 *   - test_fused_mlp: gate + up + GeLU pair and gate * vector epilogues against the CPU, and
 *     row t of an n-row product equal to the 1-row product bit for bit;
 *   - lone and grouped (q, k, v-like: three matrices of one x in one launch) products at n = 1
 *     equal to the default backend's bit for bit, on shapes that give K = 8, 2 and 1 warps per
 *     row (K = 1 needs more rows than 8 blocks x the multiprocessors: only without "small");
 *   - (mv_rows_reproduce, run by cuda_ops.c on the default backend) every row of a product over
 *     n inputs equals the product of that input alone, bit for bit, on E4B-sized shapes (small
 *     ones under the sanitizers); and (mv_group_reproduce) every row of q, k and v grouped over
 *     n inputs equals the same group over that input alone;
 *   - the tensor cores: against the CPU within the same bound (=1: x is split exactly into
 *     three bf16; =2: into two, to 16 bits, at 2e-5), and their lone bf16 products against their
 *     own grouped ones, bit for bit (their sums are not the default's; int8 and the other dtypes
 *     run the default kernels). */

/* Products at n = 1 of three matrices that read one x (grouped into one launch), on backend b;
 * the results downloaded into h (rows0 + rows1 + rows2 floats). */
static void mv_group_run(backend *b, tensor *w, const float *xh, float *h) {
    const int cols = w[0].cols, total = w[0].rows + w[1].rows + w[2].rows;
    float *x = b->alloc(b, (size_t)cols), *out = b->alloc(b, (size_t)total);
    b->upload(b, x, xh, (size_t)cols);
    for (int i = 0, off = 0; i < 3; off += w[i].rows, i++)
        b->matmul(b, out + off, &w[i], x, 1);
    b->download(b, h, out, (size_t)total);
    b->release(b, x);
    b->release(b, out);
}

static void mv_lone_run(backend *b, tensor *w, const float *xh, float *h) {
    float *x = b->alloc(b, (size_t)w->cols), *out = b->alloc(b, (size_t)w->rows);
    b->upload(b, x, xh, (size_t)w->cols);
    b->matmul(b, out, w, x, 1);
    b->download(b, h, out, (size_t)w->rows);
    b->release(b, x);
    b->release(b, out);
}

/* The variant backend alt against the default backend gpu, bit for bit, at n = 1, grouped and
 * alone (a grouped product may be split otherwise than alone: matvec.cu launch_splits); or, for
 * a variant whose bf16 sums differ from the default's (own_bits: the tensor cores, which take
 * bf16 only), against itself there: its lone bf16 products against its own grouped ones (its
 * split depends on each matrix's own shape: matvec_mma.cu mma_split). */
static void mv_same_bits(backend *alt, const char *name, int own_bits) {
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    /* rows (an H200's 132 multiprocessors): K = 8 at 2560 cols (few rows); K = 1 in under a
     * wave of 8-warp blocks (5000 rows: 625 blocks); K = 1 over a wave (9000: the default
     * takes blocks of 4 warps there, matvec.cu mv_block_warps). The grouped launch of the
     * 9000 rows and two small matrices halves the small ones' splits down to 1 (launch_splits),
     * so it takes blocks of 4 as well. */
    const int n_shapes = small_shapes ? 1 : 3;
    const int base_rows[] = {small_shapes ? 24 : 700, 5000, 9000};
    for (int di = 0; di < 3; di++)
        for (int si = 0; si < n_shapes; si++) {
            const int cols = small_shapes ? 128 : 2560, rows = odd_size(base_rows[si], 300);
            tensor w[3] = {rand_tensor(rows, cols, dts[di]),
                           rand_tensor(odd_size(small_shapes ? 8 : 200, 300), cols, dts[di]),
                           rand_tensor(odd_size(small_shapes ? 8 : 200, 300), cols, dts[di])};
            const int total = w[0].rows + w[1].rows + w[2].rows;
            const int own = own_bits && dts[di] == DT_BF16;
            float *xh = rand_vec((size_t)cols), *want = xmalloc((size_t)total * sizeof(float)),
                  *got = xmalloc((size_t)total * sizeof(float));
            mv_group_run(own ? alt : gpu, w, xh, want);
            mv_group_run(alt, w, xh, got);
            const size_t i = first_diff(got, want, (size_t)total);
            EXPECT(i == (size_t)total,
                   "%s: grouped product element %zu of %d (dtype %d, rows %d + %d + %d, cols %d) "
                   "differs from the default's: %.9g vs %.9g",
                   name, i, total, dts[di], w[0].rows, w[1].rows, w[2].rows, cols,
                   i < (size_t)total ? got[i] : 0.0, i < (size_t)total ? want[i] : 0.0);
            if (!own) mv_lone_run(gpu, &w[0], xh, want);
            mv_lone_run(alt, &w[0], xh, got);
            EXPECT(!memcmp(got, want, (size_t)w[0].rows * sizeof(float)),
                   "%s: a lone product (dtype %d, %d x %d) differs from the %s", name, dts[di],
                   w[0].rows, cols, own ? "variant's grouped one" : "default's lone one");
            free(xh);
            free(want);
            free(got);
            /* w stays alive: the backends key their device copies by the host pointer. */
        }
}

/* Row t of a product over n inputs equals the product of input t alone, bit for bit (what makes
 * a verify pass reproduce the decode steps it stands for), on backend b: n = 2 .. 8 and 13
 * against 13 lone products (the lean kernel). Launches of at least 1 MiB of weights (the
 * default) take n = 2 .. 8 in the rows kernel (a form for each n; 2 rows a warp up to 4 inputs,
 * 4 from 5), smaller ones the general kernel (groups of 4 and 8); n = 13 is the general kernel's
 * two passes either way. Shapes: E4B's down, o, q and k projections and odd ones, in the three
 * dtypes; among the small ones (the sanitizers' run) 7000 rows of 256 columns, a decode launch of
 * more than a wave of 8-warp blocks, which takes blocks of 4 (matvec.cu mv_block_warps). */
static void mv_rows_reproduce(backend *b, const char *name) {
    const struct {
        int rows, cols;
        weight_dtype dt;
    } full[] = {{2560, 10240, DT_BF16}, {2560, 2048, DT_BF16}, {2048, 2560, DT_BF16},
                {512, 2560, DT_BF16},   {5000, 2560, DT_F32},  {2561, 4096, DT_F16}},
      small[] = {{512, 4096, DT_BF16},
                 {131, 4104, DT_F32},
                 {3200, 1024, DT_BF16},
                 {67, 1032, DT_F16},
                 {7000, 256, DT_BF16}};
    const int n_full = (int)(sizeof full / sizeof full[0]);
    const int n_small = (int)(sizeof small / sizeof small[0]);
    const int n_shapes = small_shapes ? n_small : n_full, ns[] = {2, 3, 4, 5, 6, 7, 8, 13};
    const int nmax = 13;
    const int n_ns = (int)(sizeof ns / sizeof ns[0]);
    for (int si = 0; si < n_shapes; si++) {
        const int rows = small_shapes ? small[si].rows : full[si].rows;
        const int cols = small_shapes ? small[si].cols : full[si].cols;
        tensor w = rand_tensor(rows, cols, small_shapes ? small[si].dt : full[si].dt);
        float *xh = rand_vec((size_t)nmax * cols);
        float *x = b->alloc(b, (size_t)nmax * cols), *out = b->alloc(b, (size_t)nmax * rows);
        float *want = xmalloc((size_t)nmax * rows * sizeof(float)),
              *got = xmalloc((size_t)nmax * rows * sizeof(float));
        b->upload(b, x, xh, (size_t)nmax * cols);
        for (int t = 0; t < nmax; t++)
            b->matmul(b, out + (size_t)t * rows, &w, x + (size_t)t * cols, 1);
        b->download(b, want, out, (size_t)nmax * rows);
        for (int ni = 0; ni < n_ns; ni++) {
            const int n = ns[ni];
            b->matmul(b, out, &w, x, n);
            b->download(b, got, out, (size_t)n * rows);
            const size_t i = first_diff(got, want, (size_t)n * rows);
            EXPECT(i == (size_t)n * rows,
                   "%s: product over %d inputs [%d x %d], input %zu row %zu: %.9g, alone %.9g",
                   name, n, rows, cols, i / rows, i % rows, i < (size_t)n * rows ? got[i] : 0.0,
                   i < (size_t)n * rows ? want[i] : 0.0);
        }
        b->release(b, x);
        b->release(b, out);
        free(xh);
        free(want);
        free(got);
        /* w stays alive: the backend keys its device copy by the host pointer. */
    }
}

/* The same for a launch of several matrices: row t of q, k and v grouped over n inputs equals
 * the same group over input t alone, bit for bit, on backend b. E4B's q / k / v shapes (and
 * smaller ones under the sanitizers) are split by launch_splits otherwise than alone, so this is
 * the check that the halving is the same for every n. n = 2, 3, 5 .. 8 and 13, bf16 and f32. */
static void mv_group_reproduce(backend *b, const char *name) {
    const int cols = small_shapes ? 1024 : 2560, nmax = 13, ns[] = {2, 3, 5, 6, 7, 8, 13};
    const int n_ns = (int)(sizeof ns / sizeof ns[0]);
    const int rows[3] = {small_shapes ? 1000 : 2048, small_shapes ? 400 : 512,
                         small_shapes ? 400 : 512};
    const weight_dtype dts[] = {DT_BF16, DT_F32};
    for (int di = 0; di < 2; di++) {
        tensor w[3];
        float *out[3], *want[3], *got = xmalloc((size_t)nmax * rows[0] * sizeof(float));
        for (int m = 0; m < 3; m++) {
            w[m] = rand_tensor(rows[m], cols, dts[di]);
            out[m] = b->alloc(b, (size_t)nmax * rows[m]);
            want[m] = xmalloc((size_t)nmax * rows[m] * sizeof(float));
        }
        float *xh = rand_vec((size_t)nmax * cols), *x = b->alloc(b, (size_t)nmax * cols);
        b->upload(b, x, xh, (size_t)nmax * cols);
        for (int t = 0; t < nmax; t++) /* one group per input: the three read x[t] */
            for (int m = 0; m < 3; m++)
                b->matmul(b, out[m] + (size_t)t * rows[m], &w[m], x + (size_t)t * cols, 1);
        for (int m = 0; m < 3; m++)
            b->download(b, want[m], out[m], (size_t)nmax * rows[m]);
        for (int ni = 0; ni < n_ns; ni++) {
            const int n = ns[ni];
            for (int m = 0; m < 3; m++)
                b->matmul(b, out[m], &w[m], x, n);
            for (int m = 0; m < 3; m++) {
                const size_t cnt = (size_t)n * rows[m];
                b->download(b, got, out[m], cnt);
                const size_t i = first_diff(got, want[m], cnt);
                EXPECT(i == cnt,
                       "%s: matrix %d of q / k / v [%d x %d] dtype %d over %d inputs, input %zu "
                       "row %zu: %.9g, the group over that input alone %.9g",
                       name, m, rows[m], cols, dts[di], n, i / rows[m], i % rows[m],
                       i < cnt ? got[i] : 0.0, i < cnt ? want[m][i] : 0.0);
            }
        }
        for (int m = 0; m < 3; m++) {
            b->release(b, out[m]);
            free(want[m]);
        }
        b->release(b, x);
        free(xh);
        free(got);
        /* w stays alive: the backend keys its device copies by the host pointer. */
    }
}

/* int4 products of three matrices grouped into one k_matvec_q_multi launch whose split-K differs
 * between them (on 132 multiprocessors - H100, H200 - the large matrix takes K = 4, the small
 * ones K = 8), on both kernels (the CUDA cores and the tensor cores): every row of the group over
 * n = 1 .. 9 inputs must be the bits of its matrix launched alone over that input alone
 * (matvec_q.h: a row's bits are its matrix's alone, whatever n - verify == decode). Through the
 * launchers directly: the backend groups matrices only by its queue's patterns. */
static void mvq_group_reproduce(void) {
    const int cols = small_shapes ? 2048 : 2560, nmax = K_MATVEC_Q_MAX_N;
    const int rows[3] = {small_shapes ? 7000 : 9000, small_shapes ? 40 : 200,
                         small_shapes ? 3 : 200};
    quant_matrix qm[3];
    k_qseg seg[3];
    float *want[3], *got = xmalloc((size_t)nmax * rows[0] * sizeof(float)), *dx;
    for (int m = 0; m < 3; m++) {
        char err[256];
        float *wf = rand_vec((size_t)rows[m] * cols);
        CHECK(!quant_from_f32(&qm[m], "w", wf, rows[m], cols, QUANT_INT4, 32, err, sizeof err));
        free(wf);
        const size_t qb = qm[m].row_bytes * rows[m], sb = (size_t)rows[m] * (cols / 32) * 2;
        void *dq;
        uint16_t *ds;
        CHECK(cudaMalloc(&dq, qb) == cudaSuccess && cudaMalloc((void **)&ds, sb) == cudaSuccess);
        CHECK(cudaMemcpy(dq, qm[m].q, qb, cudaMemcpyHostToDevice) == cudaSuccess &&
              cudaMemcpy(ds, qm[m].scales, sb, cudaMemcpyHostToDevice) == cudaSuccess);
        seg[m].w = (k_qmat){KQ_INT4, rows[m], cols, 32, dq, ds};
        CHECK(cudaMalloc((void **)&seg[m].y, (size_t)nmax * rows[m] * sizeof(float)) ==
              cudaSuccess);
        want[m] = xmalloc((size_t)nmax * rows[m] * sizeof(float));
    }
    float *xh = rand_vec((size_t)nmax * cols);
    CHECK(cudaMalloc((void **)&dx, (size_t)nmax * cols * sizeof(float)) == cudaSuccess);
    CHECK(cudaMemcpy(dx, xh, (size_t)nmax * cols * sizeof(float), cudaMemcpyHostToDevice) ==
          cudaSuccess);
    for (int mma = 0; mma <= 1; mma++) {
        const char *kernel = mma ? "tensor cores" : "CUDA cores";
        k_matvec_q_set_mma(mma);
        for (int m = 0; m < 3; m++) { /* each matrix alone, each input alone */
            for (int t = 0; t < nmax; t++)
                CHECK(!k_matvec_q(0, &seg[m].w, dx + (size_t)t * cols,
                                  seg[m].y + (size_t)t * rows[m], 1));
            CHECK(cudaMemcpy(want[m], seg[m].y, (size_t)nmax * rows[m] * sizeof(float),
                             cudaMemcpyDeviceToHost) == cudaSuccess);
        }
        for (int n = 1; n <= nmax; n++) {
            CHECK(!k_matvec_q_multi(0, seg, 3, dx, n));
            for (int m = 0; m < 3; m++) {
                const size_t cnt = (size_t)n * rows[m];
                CHECK(cudaMemcpy(got, seg[m].y, cnt * sizeof(float), cudaMemcpyDeviceToHost) ==
                      cudaSuccess);
                const size_t i = first_diff(got, want[m], cnt);
                EXPECT(i == cnt,
                       "int4 group on the %s: matrix %d [%d x %d] over %d inputs, input %zu row "
                       "%zu: %.9g, the matrix alone over that input alone %.9g",
                       kernel, m, rows[m], cols, n, i / rows[m], i % rows[m],
                       i < cnt ? got[i] : 0.0, i < cnt ? want[m][i] : 0.0);
            }
        }
    }
    k_matvec_q_set_mma(0);
    for (int m = 0; m < 3; m++) {
        CHECK(cudaFree((void *)seg[m].w.q) == cudaSuccess &&
              cudaFree((void *)seg[m].w.scales) == cudaSuccess &&
              cudaFree(seg[m].y) == cudaSuccess);
        quant_free(&qm[m]);
        free(want[m]);
    }
    CHECK(cudaFree(dx) == cudaSuccess);
    free(xh);
    free(got);
}

static void test_matvec_variants(void) {
    /* rows_min: the rows kernel's threshold for the variant (bytes; -1: the default); mma: its
     * GEMMA_CUDA_MV_MMA (NULL: unset) */
    const struct {
        const char *name;
        long rows_min;
        const char *mma;
    } variants[] = {
        {"rows kernel at every size", 0, NULL},
        {"GEMMA_CUDA_MV_MMA=1", -1, "1"},
        {"GEMMA_CUDA_MV_MMA=2", -1, "2"},
        {"GEMMA_CUDA_MV_MMA=int4", -1, "int4"},
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        const char *name = variants[v].name;
        const int mma = variants[v].mma != NULL;
        if (mma) setenv("GEMMA_CUDA_MV_MMA", variants[v].mma, 1);
        char err[256];
        backend *alt = backend_cuda_new(err, sizeof err);
        unsetenv("GEMMA_CUDA_MV_MMA");
        if (!alt) die("%s", err);
        if (variants[v].rows_min >= 0) k_matvec_test_rows_min((size_t)variants[v].rows_min);
        const int before = failures;
        /* the tensor cores carry x exactly (hi + mid + lo): fp32 sums in another order, inside
         * the CUDA cores' bound; with x to 16 bits (hi + lo) at most 2^-17 (7.6e-6) of
         * sum |w x| more */
        const double tol = mma && !strcmp(variants[v].mma, "2") ? 2e-5 : 1e-5;
        /* int4: only the int4 products move (bf16's are the default's, checked already) */
        const int bf16_moves = !mma || strcmp(variants[v].mma, "int4");
        if (bf16_moves) {
            test_matmul(alt, tol, tol, name);
            backend *save = gpu;
            gpu = alt; /* the fused checks run on the variant; pair buffers are made there */
            test_fused_mlp();
            gpu = save;
            mv_same_bits(alt, name, mma);
        }
        if (mma) test_matmul_quant(alt, 17, 1e-5, name); /* int4 on the tensor cores, int8 not */
        k_matvec_test_rows_min((size_t)1 << 20);         /* the engine's threshold again */
        printf("matvec variant %s: %s\n", name, failures == before ? "ok" : "FAILED");
        alt->destroy(alt);
    }
}
