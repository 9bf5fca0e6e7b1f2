/* cuda_ops_fused.h: the checks of the CUDA backend's op queue (kernels/backend_cuda_fuse.c) -
 * the multi-matrix matrix-vector launches with their GeLU epilogues and the q / k / v
 * norm + RoPE + KV-write kernel - against the CPU backend's separate ops. Included once, by
 * cuda_ops.c, after its helpers (test_util.h keeps everything static: one translation unit).
 *
 * Shapes are drawn fresh each run: rows that are not a multiple of the 8 warps of a block,
 * cols that are not a multiple of the 16-byte vector (the scalar path), head sizes 2 * odd,
 * n = 1, 3 and 9 (the three input-group widths of matvec.cu), every weight dtype.
 *
 * Tolerances. A product's rounding is bounded by 1e-5 * sum |w_i x_i| (cuda_ops.c); gelu_tanh(g)
 * * u then errs by at most 1.2 * |u| * err(g) + |g| * err(u) (|gelu'| <= 1.13), the bound used
 * below. After an RMSNorm the values are O(1) and the product's relative rounding (<= 1e-5
 * of sum |w x| over a norm of about sqrt(cols) * |w x|) is amplified by at most sqrt(cols):
 * 1e-4 relative + 1e-4 absolute there. Bit-for-bit where the design promises it: a matrix's
 * rows do not depend on n (the same ops fused alike at n = 1), on the unroll or on prefetching
 * (the speculative verify relies on it); they may depend on the matrices sharing the launch
 * (matvec.cu launch_splits), which a verify pass shares as decoding does. */

/* ---- shared pieces ------------------------------------------------------------------------- */

static void pair_host(const pair *p, float *h) { /* the GPU side, downloaded */
    gpu->download(gpu, h, p->g, p->n);
}

/* The first of n floats where a and b differ in any bit, or n. */
static size_t first_diff(const float *a, const float *b, size_t n) {
    size_t i = 0;
    while (i < n && !memcmp(&a[i], &b[i], sizeof(float)))
        i++;
    return i;
}

static int odd_size(int base, int spread) { /* base + something, never a multiple of 8 */
    int v = base + rng_int(spread);
    return v % 8 ? v : v + 1 + rng_int(7);
}

/* ---- gate + up + gelu_mul, and gate + gelu_mul with a vector from memory ------------------- */

static void test_fused_mlp(void) {
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    /* n = 3 and 6 take the rows kernel's 3- and 6-input forms where it runs; on the
     * tensor cores with x exact n = 2, 5 and 6 fill one and two passes over B and begin a
     * third, with x to 16 bits n = 4 and 5 fill one and begin a second, and n = 9 is a launch
     * of 8 and one of 1; the small shapes' aligned cols (512) split rows over 2 warps, so the
     * sanitizers see the kernels' shared-memory sum of slices */
    const int ns[] = {1, 2, 3, 4, 5, 6, 9};
    for (int di = 0; di < 3; di++)
        for (int ni = 0; ni < 7; ni++)
            for (int odd = 0; odd < 2; odd++) {
                const int n = ns[ni], rows = odd_size(small_shapes ? 20 : 300, 500);
                const int cols = (small_shapes ? (odd ? 64 : 512) : 256 * (1 + rng_int(4))) +
                                 (odd ? 1 + rng_int(7) : 0);
                tensor wg = rand_tensor(rows, cols, dts[di]), wu = rand_tensor(rows, cols, dts[di]);
                pair x = pair_rand((size_t)n * cols);
                pair gate = pair_new(NULL, (size_t)n * rows), up = pair_new(NULL, (size_t)n * rows);
                /* the per-layer-input form: gelu(w . x) * mul[t * stride + r] */
                const int stride = rows * (2 + rng_int(3)), off = rows * rng_int(2);
                pair mul = pair_rand((size_t)n * stride), h = pair_new(NULL, (size_t)n * rows);
                backend *bs[2] = {cpu, gpu};
                for (int k = 0; k < 2; k++) {
                    backend *b = bs[k];
                    const float *xb = k ? x.g : x.c;
                    float *gb = k ? gate.g : gate.c, *ub = k ? up.g : up.c, *hb = k ? h.g : h.c;
                    b->matmul(b, gb, &wg, xb, n);
                    b->matmul(b, ub, &wu, xb, n);
                    b->gelu_mul(b, gb, gb, ub, n, rows, rows);
                    b->matmul(b, hb, &wg, xb, n);
                    b->gelu_mul(b, hb, hb, (k ? mul.g : mul.c) + off, n, rows, stride);
                }
                /* the bound: raw products on the CPU, their rounding scales */
                pair graw = pair_new(NULL, (size_t)n * rows);
                cpu->matmul(cpu, graw.c, &wg, x.c, n);
                double *sg = dot_scale(&wg, x.c, n), *su = dot_scale(&wu, x.c, n);
                double *bound = xmalloc((size_t)n * rows * sizeof(double)),
                       *bound_h = xmalloc((size_t)n * rows * sizeof(double));
                for (int t = 0; t < n; t++)
                    for (int r = 0; r < rows; r++) {
                        const size_t i = (size_t)t * rows + r;
                        const double g = fabs(graw.c[i]), u = fabs(up.c[i]);
                        const double m = fabs(mul.c[(size_t)t * stride + off + r]);
                        bound[i] = 1.2 * sg[i] * u + (g + 1) * su[i];
                        bound_h[i] = 1.2 * sg[i] * m;
                    }
                char what[128];
                snprintf(what, sizeof what, "fused gate/up/gelu dtype %d n %d [%d x %d]", dts[di],
                         n, rows, cols);
                pair_check(&up, 1e-6, 1e-5, su, what);
                pair_check(&gate, 1e-6, 1e-5, bound, what);
                snprintf(what, sizeof what, "fused gate/gelu*mul dtype %d n %d [%d x %d] stride %d",
                         dts[di], n, rows, cols, stride);
                pair_check(&h, 1e-6, 1e-5, bound_h, what);
                /* row t of each n-row output (up, the GeLU pair, the GeLU times a vector) is the
                 * same ops' on x[t] alone, fused alike - what a verify pass must give a decode
                 * step */
                float *fu = xmalloc((size_t)n * rows * sizeof(float)),
                      *fg = xmalloc((size_t)n * rows * sizeof(float)),
                      *fh = xmalloc((size_t)n * rows * sizeof(float)),
                      *one = xmalloc((size_t)rows * sizeof(float));
                pair_host(&up, fu);
                pair_host(&gate, fg);
                pair_host(&h, fh);
                float *g1 = gpu->alloc(gpu, (size_t)rows), *u1 = gpu->alloc(gpu, (size_t)rows),
                      *h1 = gpu->alloc(gpu, (size_t)rows);
                for (int t = 0; t < n; t++) {
                    const float *xt = x.g + (size_t)t * cols;
                    const size_t o = (size_t)t * rows, sz = (size_t)rows * sizeof(float);
                    gpu->matmul(gpu, g1, &wg, xt, 1);
                    gpu->matmul(gpu, u1, &wu, xt, 1);
                    gpu->gelu_mul(gpu, g1, g1, u1, 1, rows, rows);
                    gpu->matmul(gpu, h1, &wg, xt, 1);
                    gpu->gelu_mul(gpu, h1, h1, mul.g + off + (size_t)t * stride, 1, rows, stride);
                    gpu->download(gpu, one, u1, (size_t)rows);
                    EXPECT(!memcmp(one, fu + o, sz), "dtype %d: up row %d of %d differs from n = 1",
                           dts[di], t, n);
                    gpu->download(gpu, one, g1, (size_t)rows);
                    EXPECT(!memcmp(one, fg + o, sz),
                           "dtype %d: gelu(gate) * up row %d of %d differs from n = 1", dts[di], t,
                           n);
                    gpu->download(gpu, one, h1, (size_t)rows);
                    EXPECT(!memcmp(one, fh + o, sz),
                           "dtype %d: gelu(gate) * mul row %d of %d differs from n = 1", dts[di], t,
                           n);
                }
                gpu->release(gpu, g1);
                gpu->release(gpu, u1);
                gpu->release(gpu, h1);
                free(one);
                free(fh);
                free(fg);
                free(fu);
                free(sg);
                free(su);
                free(bound);
                free(bound_h);
                pair_free(&graw);
                pair_free(&x);
                pair_free(&gate);
                pair_free(&up);
                pair_free(&mul);
                pair_free(&h);
            }
}

/* ---- a whole MLP as one kernel: gate, up, gelu_mul, down (mlp.cu, mlp_mma.cu) ------------- */

/* Against the CPU's four ops, with the bounds above for u and h and, for the output, down's
 * rounding plus h's error carried through it: 1e-5 * sum_k |w[r][k]| (|h_k| + bound_k + 0.1).
 * Every row of an n-row launch (n = 1 .. 64: a form for each pass of 1 .. 8 inputs, chunks of 16;
 * under the sanitizers 1, 2, 3 and 6: the forms of one input, a power of two and not) equals
 * the same ops on x[t] alone, bit for bit, in out, h and u. On sm_90 and later the shapes here must
 * take the kernel (k_mlp_supported) and the backend must run the four ops as it (its mlp_ops
 * counter), so that the test cannot pass on the grouped products there. Weights in bf16, int8
 * (group 64) and int4 (groups 32 and 128: a thread's columns in one group of many, or of few),
 * I a multiple of 128 for the quantized ones, as the engine holds them. Run for each form
 * (GEMMA_CUDA_MLP=all, the CUDA cores for every dtype; =mma, the tensor cores for bf16, which
 * leaves the quantized MLPs to the separate products: they must agree too, and not be fused) on
 * a backend of its own; the caller's GEMMA_CUDA_MLP is put back afterwards. */
static void test_fused_whole_mlp_form(int form, int quant);
static void test_fused_whole_mlp(void) {
    backend *dflt = gpu;
    const struct {
        const char *value;
        int form, quant;
    } sw[] = {{"all", K_MLP_CORES, 1}, {"mma", K_MLP_MMA, 0}};
    for (int f = 0; f < 2; f++) {
        gpu = gpu_under((const char *const[][2]){{"GEMMA_CUDA_MLP", sw[f].value}}, 1);
        test_fused_whole_mlp_form(sw[f].form, sw[f].quant);
        gpu->destroy(gpu);
    }
    gpu = dflt;
}

/* A random [rows, cols] weight of one kind: bf16, or int8 / int4 with this group. */
static tensor mlp_weight(int rows, int cols, int bits, int group) {
    if (bits == 16) return rand_tensor(rows, cols, DT_BF16);
    float *wf = rand_vec((size_t)rows * cols);
    quant_matrix *qm = xcalloc(1, sizeof *qm); /* stays alive: keyed by address */
    char err[256];
    CHECK(!quant_from_f32(qm, "w", wf, rows, cols, bits == 8 ? QUANT_INT8 : QUANT_INT4, group, err,
                          sizeof err));
    free(wf);
    return tensor_of_quant(qm);
}

static void test_fused_whole_mlp_form(int form, int quant) {
    const int kinds[][2] = {{16, 0}, {8, 64}, {4, 32}, {4, 128}}; /* bits, group */
    for (int ki = 0; ki < 4; ki++) {
        const int bits = kinds[ki][0], group = kinds[ki][1];
        char name[32];
        snprintf(name, sizeof name, "%s %s g%d", form == K_MLP_MMA ? "mma" : "cores",
                 bits == 16  ? "bf16"
                 : bits == 8 ? "int8"
                             : "int4",
                 group);
        /* whether the switch fuses these weights, and the kernel that takes them */
        const int fused = bits == 16 || quant, kform = bits == 16 ? form : K_MLP_CORES;
        int dev = 0, major = 0, sms = 0;
        CHECK(cudaGetDevice(&dev) == cudaSuccess);
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        /* 1024 in the small shapes (the sanitizers' run): wide enough that mlp.cu's producer runs
         * under its limit on rows in flight (mlp_depth below the ring's stages), as 2560 does */
        const int Hs[] = {256, 512, small_shapes ? 1024 : 2560};
        /* 33 and 64: prefill-sized passes (GEMMA_CUDA_GEMM=own), in reductions of 16 inputs;
         * the quantized kinds stop at 17 (chunks of 16 and a pass of one), which keeps the CPU's
         * reference within the op test's time */
        const int ns_full[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 33, 64}, ns_small[] = {1, 2, 3, 6};
        const int *ns = small_shapes ? ns_small : ns_full;
        const int n_ns = small_shapes ? 4 : bits == 16 ? 12 : 10;
        for (int hi = 0; hi < 3; hi++)
            for (int ni = 0; ni < n_ns; ni++) {
                /* The widest H with at least 20 indices a block: 60 rows or more through mlp.cu's
                 * ring of at most 48 stages and mlp_mma.cu's of at most 24, so that both wrap under
                 * the sanitizers too (racecheck sees a stage's reads against its next fill only
                 * then; at 8 indices a block, 24 - 30 rows, neither need wrap). A stage holds 2
                 * int8 or 4 int4 rows: as many times the indices under the sanitizers */
                const int rps = !small_shapes || bits == 16 ? 1 : bits == 8 ? 2 : 4;
                int I = (hi == 2 ? 20 * rps : 8) * sms + rng_int(300);
                if (bits < 16) I = (I + 127) / 128 * 128;
                const int H = Hs[hi], n = ns[ni];
                if (major >= 9 && fused)
                    EXPECT(k_mlp_supported(H, I, bits, group, kform),
                           "whole MLP (%s) does not take H %d I %d on sm_%d", name, H, I, major);
                tensor wg = mlp_weight(I, H, bits, group), wu = mlp_weight(I, H, bits, group),
                       wd = mlp_weight(H, I, bits, group);
                pair x = pair_rand((size_t)n * H);
                pair gate = pair_new(NULL, (size_t)n * I), up = pair_new(NULL, (size_t)n * I),
                     out = pair_new(NULL, (size_t)n * H), graw = pair_new(NULL, (size_t)n * I);
                backend *bs[2] = {cpu, gpu};
                backend_cuda_counters c0, c1;
                backend_cuda_stats(gpu, &c0);
                for (int k = 0; k < 2; k++) {
                    backend *b = bs[k];
                    const float *xb = k ? x.g : x.c;
                    float *gb = k ? gate.g : gate.c, *ub = k ? up.g : up.c, *ob = k ? out.g : out.c;
                    b->matmul(b, gb, &wg, xb, n);
                    b->matmul(b, ub, &wu, xb, n);
                    b->gelu_mul(b, gb, gb, ub, n, I, I);
                    b->matmul(b, ob, &wd, gb, n);
                }
                backend_cuda_stats(gpu, &c1);
                EXPECT(c1.mlp_form == form && c1.mlp_quant == quant,
                       "whole MLP (%s): the backend's form is %d (quantized %d)", name, c1.mlp_form,
                       c1.mlp_quant);
                if (major >= 9)
                    EXPECT(
                        c1.mlp_ops == c0.mlp_ops + fused,
                        "whole MLP (%s) n %d H %d I %d: the four ops ran as %ld whole-MLP kernels, "
                        "not %d",
                        name, n, H, I, c1.mlp_ops - c0.mlp_ops, fused);
                cpu->matmul(cpu, graw.c, &wg, x.c, n);
                double *sg = dot_scale(&wg, x.c, n), *su = dot_scale(&wu, x.c, n);
                double *bound = xmalloc((size_t)n * I * sizeof(double));
                float *hv = xmalloc((size_t)n * I * sizeof(float));
                for (size_t i = 0; i < (size_t)n * I; i++) {
                    bound[i] = 1.2 * sg[i] * fabs(up.c[i]) + (fabs(graw.c[i]) + 1) * su[i];
                    hv[i] = (float)(fabs(gate.c[i]) + 1e-5 * bound[i] + 0.1);
                }
                double *so = dot_scale(&wd, hv, n);
                char what[128];
                snprintf(what, sizeof what, "whole MLP (%s) n %d H %d I %d: up", name, n, H, I);
                pair_check(&up, 1e-6, 1e-5, su, what);
                snprintf(what, sizeof what, "whole MLP (%s) n %d H %d I %d: gelu(gate) * up", name,
                         n, H, I);
                pair_check(&gate, 1e-6, 1e-5, bound, what);
                snprintf(what, sizeof what, "whole MLP (%s) n %d H %d I %d: out", name, n, H, I);
                pair_check(&out, 1e-6, 1e-5, so, what);
                /* row t alone */
                float *fo = xmalloc((size_t)n * H * sizeof(float)),
                      *fg = xmalloc((size_t)n * I * sizeof(float)),
                      *fu = xmalloc((size_t)n * I * sizeof(float)),
                      *one = xmalloc((size_t)(I > H ? I : H) * sizeof(float));
                pair_host(&out, fo);
                pair_host(&gate, fg);
                pair_host(&up, fu);
                float *g1 = gpu->alloc(gpu, (size_t)I), *u1 = gpu->alloc(gpu, (size_t)I),
                      *o1 = gpu->alloc(gpu, (size_t)H);
                for (int t = 0; t < n; t++) {
                    gpu->matmul(gpu, g1, &wg, x.g + (size_t)t * H, 1);
                    gpu->matmul(gpu, u1, &wu, x.g + (size_t)t * H, 1);
                    gpu->gelu_mul(gpu, g1, g1, u1, 1, I, I);
                    gpu->matmul(gpu, o1, &wd, g1, 1);
                    gpu->download(gpu, one, o1, (size_t)H);
                    EXPECT(!memcmp(one, fo + (size_t)t * H, (size_t)H * 4),
                           "whole MLP (%s) H %d: out row %d of %d differs from n = 1", name, H, t,
                           n);
                    gpu->download(gpu, one, g1, (size_t)I);
                    EXPECT(!memcmp(one, fg + (size_t)t * I, (size_t)I * 4),
                           "whole MLP (%s) H %d: h row %d of %d differs from n = 1", name, H, t, n);
                    gpu->download(gpu, one, u1, (size_t)I);
                    EXPECT(!memcmp(one, fu + (size_t)t * I, (size_t)I * 4),
                           "whole MLP (%s) H %d: u row %d of %d differs from n = 1", name, H, t, n);
                }
                gpu->release(gpu, g1);
                gpu->release(gpu, u1);
                gpu->release(gpu, o1);
                free(one);
                free(fo);
                free(fg);
                free(fu);
                free(hv);
                free(so);
                free(sg);
                free(su);
                free(bound);
                pair_free(&x);
                pair_free(&gate);
                pair_free(&up);
                pair_free(&out);
                pair_free(&graw);
            }
    }
}

/* ---- the attention prologue: q, k, v products, head norms, RoPE, KV-ring writes ----------- */

static void test_fused_attention_prologue(void) {
    const weight_dtype dts[] = {DT_F32, DT_BF16, DT_F16};
    const int ns[] = {1, 3, 9};
    for (int di = 0; di < 3; di++)
        for (int ni = 0; ni < 3; ni++) {
            const int n = ns[ni], H = 1 + rng_int(4), KV = 1 + rng_int(2);
            const int hd = 2 * (small_shapes ? 5 + rng_int(8) : 21 + 2 * rng_int(60)); /* 2*odd */
            const int cols = (small_shapes ? 64 : 256 * (1 + rng_int(4))) + (ni == 1 ? 3 : 0);
            const int len = n + 4 + rng_int(20), pos0 = rng_int(300), kvd = KV * hd;
            tensor wq = rand_tensor(H * hd, cols, dts[di]), wk = rand_tensor(kvd, cols, dts[di]),
                   wv = rand_tensor(kvd, cols, dts[di]);
            tensor qn = rand_tensor(1, hd, dts[di]), kn = rand_tensor(1, hd, dts[di]);
            float *f = xmalloc((size_t)hd / 2 * sizeof(float));
            for (int j = 0; j < hd / 2; j++) /* some pairs unrotated, as proportional RoPE */
                f[j] = j % 3 == 2 ? 0.0f : (float)pow(10000.0, -2.0 * j / hd);
            pair inv = pair_new(f, (size_t)hd / 2), x = pair_rand((size_t)n * cols);
            pair q = pair_new(NULL, (size_t)n * H * hd), k = pair_new(NULL, (size_t)n * kvd),
                 v = pair_new(NULL, (size_t)n * kvd);
            pair kc = pair_rand((size_t)len * kvd), vc = pair_rand((size_t)len * kvd);
            backend *bs[2] = {cpu, gpu};
            for (int s = 0; s < 2; s++) {
                backend *b = bs[s];
                const float *xb = s ? x.g : x.c, *fb = s ? inv.g : inv.c;
                float *qb = s ? q.g : q.c, *kb = s ? k.g : k.c, *vb = s ? v.g : v.c;
                b->matmul(b, qb, &wq, xb, n);
                b->rmsnorm(b, qb, qb, &qn, n * H, hd, 1e-6f);
                b->rope(b, qb, n, H, hd, pos0, fb);
                b->matmul(b, kb, &wk, xb, n);
                b->matmul(b, vb, &wv, xb, n);
                b->rmsnorm(b, kb, kb, &kn, n * KV, hd, 1e-6f);
                b->rope(b, kb, n, KV, hd, pos0, fb);
                b->rmsnorm(b, vb, vb, NULL, n * KV, hd, 1e-6f);
                b->kv_write(b, s ? kc.g : kc.c, kb, n, kvd, pos0, len);
                b->kv_write(b, s ? vc.g : vc.c, vb, n, kvd, pos0, len);
            }
            char what[160];
            snprintf(what, sizeof what,
                     "fused q/k/v + norm/rope/kv dtype %d n %d heads %d/%d hd %d cols %d len %d "
                     "pos %d",
                     dts[di], n, H, KV, hd, cols, len, pos0);
            pair_check(&q, 1e-4, 1e-4, NULL, what);
            pair_check(&k, 1e-4, 1e-4, NULL, what);
            pair_check(&v, 1e-4, 1e-4, NULL, what);
            pair_check(&kc, 1e-4, 1e-4, NULL, what); /* untouched rows must stay exact */
            pair_check(&vc, 1e-4, 1e-4, NULL, what);
            pair_free(&inv);
            pair_free(&x);
            pair_free(&q);
            pair_free(&k);
            pair_free(&v);
            pair_free(&kc);
            pair_free(&vc);
            free(f);
        }
}

/* ---- what must not be fused, and what must be flushed ------------------------------------- */

static void test_fused_barriers(void) {
    const int rows = odd_size(small_shapes ? 16 : 200, 100), cols = small_shapes ? 64 : 512;
    const int n = 1 + rng_int(4);
    tensor w[6];
    for (int i = 0; i < 6; i++)
        w[i] = rand_tensor(rows, cols, DT_BF16);
    pair x = pair_rand((size_t)n * cols), y = pair_rand((size_t)n * cols);
    pair o[6];
    for (int i = 0; i < 6; i++)
        o[i] = pair_new(NULL, (size_t)n * rows);
    backend *bs[2] = {cpu, gpu};
    for (int s = 0; s < 2; s++) {
        backend *b = bs[s];
        float *xb = s ? x.g : x.c;
        float *ob[6];
        for (int i = 0; i < 6; i++)
            ob[i] = s ? o[i].g : o[i].c;
        /* x changes between the products: the second must see the new x */
        b->matmul(b, ob[0], &w[0], xb, n);
        b->add(b, xb, xb, s ? y.g : y.c, (size_t)n * cols);
        b->matmul(b, ob[1], &w[1], xb, n);
        /* more products of one x than a launch takes (K_MV_SEGS = 4) */
        for (int i = 0; i < 5; i++)
            b->matmul(b, ob[i < 4 ? i + 2 : 0], &w[i], xb, n);
        /* gelu_mul over two products of the launch: the pair epilogue */
        b->gelu_mul(b, ob[2], ob[2], ob[3], n, rows, rows);
    }
    pair_check(&x, 0, 0, NULL, "queue barriers: x after the add");
    /* the last producer of each output (x.c is the new x: the CPU ran the add at once) */
    const int last[6] = {4, 1, 0, 1, 2, 3};
    double *sc[6];
    for (int i = 0; i < 6; i++)
        sc[i] = dot_scale(&w[last[i]], x.c, n);
    pair graw = pair_new(NULL, (size_t)n * rows);
    cpu->matmul(cpu, graw.c, &w[0], x.c, n);
    for (size_t i = 0; i < (size_t)n * rows; i++) /* o[2] = gelu(w0 . x) * o[3] */
        sc[2][i] = 1.2 * sc[2][i] * fabs(o[3].c[i]) + (fabs(graw.c[i]) + 1) * sc[3][i];
    for (int i = 0; i < 6; i++) {
        char what[64];
        snprintf(what, sizeof what, "queue barriers: output %d", i);
        pair_check(&o[i], 1e-6, 1e-5, sc[i], what);
        free(sc[i]);
    }
    double *sg = dot_scale(&w[0], x.c, n), *su = dot_scale(&w[1], x.c, n);
    /* a download in the middle of a pair: gate must be the raw product then */
    pair g = pair_new(NULL, (size_t)n * rows), u = pair_new(NULL, (size_t)n * rows);
    for (int s = 0; s < 2; s++) {
        backend *b = bs[s];
        b->matmul(b, s ? g.g : g.c, &w[0], s ? x.g : x.c, n);
        b->matmul(b, s ? u.g : u.c, &w[1], s ? x.g : x.c, n);
    }
    pair_check(&g, 1e-6, 1e-5, sg, "raw gate before its gelu_mul");
    for (size_t i = 0; i < (size_t)n * rows; i++)
        sg[i] = 1.2 * sg[i] * fabs(u.c[i]) + (fabs(g.c[i]) + 1) * su[i];
    cpu->gelu_mul(cpu, g.c, g.c, u.c, n, rows, rows);
    gpu->gelu_mul(gpu, g.g, g.g, u.g, n, rows, rows);
    pair_check(&g, 1e-6, 1e-5, sg, "gelu_mul after a flush");
    free(sg);
    free(su);
    pair_free(&graw);
    for (int i = 0; i < 6; i++)
        pair_free(&o[i]);
    pair_free(&x);
    pair_free(&y);
    pair_free(&g);
    pair_free(&u);
}

/* ---- debugging switches change no bit ----------------------------------------------------- */

/* The debugging switches give the default's bits: without programmatic dependent launch the
 * grouped product against the default's grouped one, and without fusion (GEMMA_CUDA_FUSE=0:
 * the two products launched apart) against the default's lone one - a product grouped with
 * others may be split otherwise than alone (matvec.cu launch_splits). */
static void test_fused_switches(void) {
    const char *envs[][2] = {{"GEMMA_CUDA_PDL", "0"}, {"GEMMA_CUDA_FUSE", "0"}};
    const int rows = odd_size(small_shapes ? 24 : 1000, 300), cols = small_shapes ? 128 : 2560;
    const int n = 1 + rng_int(9);
    tensor wg = rand_tensor(rows, cols, DT_BF16), wu = rand_tensor(rows, cols, DT_BF16);
    pair x = pair_rand((size_t)n * cols), g = pair_new(NULL, (size_t)n * rows),
         u = pair_new(NULL, (size_t)n * rows);
    gpu->matmul(gpu, g.g, &wg, x.g, n);
    gpu->matmul(gpu, u.g, &wu, x.g, n);
    float *ref = xmalloc((size_t)n * rows * sizeof(float)),
          *ref_lone = xmalloc((size_t)n * rows * sizeof(float));
    pair_host(&g, ref);
    gpu->matmul(gpu, g.g, &wg, x.g, n);
    pair_host(&g, ref_lone); /* the download ran it alone */
    for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++) {
        const int apart = !strcmp(envs[e][0], "GEMMA_CUDA_FUSE");
        setenv(envs[e][0], envs[e][1], 1);
        char err[256];
        backend *alt = backend_cuda_new(err, sizeof err);
        unsetenv(envs[e][0]);
        if (!alt) die("%s", err);
        float *xa = alt->alloc(alt, (size_t)n * cols), *ga = alt->alloc(alt, (size_t)n * rows),
              *ua = alt->alloc(alt, (size_t)n * rows), *xh = xmalloc((size_t)n * cols * 4),
              *gh = xmalloc((size_t)n * rows * 4);
        gpu->download(gpu, xh, x.g, (size_t)n * cols);
        alt->upload(alt, xa, xh, (size_t)n * cols);
        alt->matmul(alt, ga, &wg, xa, n);
        alt->matmul(alt, ua, &wu, xa, n);
        alt->download(alt, gh, ga, (size_t)n * rows);
        const size_t i = first_diff(gh, apart ? ref_lone : ref, (size_t)n * rows);
        EXPECT(i == (size_t)n * rows, "%s=%s: product element %zu differs from the default's",
               envs[e][0], envs[e][1], i);
        alt->release(alt, xa);
        alt->release(alt, ga);
        alt->release(alt, ua);
        alt->destroy(alt);
        free(xh);
        free(gh);
    }
    /* bad values, and variables that are no switch, are refused with the variable's name */
    const char *bads[][2] = {{"GEMMA_CUDA_MLP", "tensor"},
                             {"GEMMA_CUDA_GEMM", "cublas"},
                             {"GEMMA_CUDA_FUSE_MM", "1"},
                             {"GEMMA_CUDA_MV_ROWS_MIN", "0"}};
    for (size_t e = 0; e < sizeof bads / sizeof bads[0]; e++) {
        setenv(bads[e][0], bads[e][1], 1);
        char err[256] = "";
        backend *bad = backend_cuda_new(err, sizeof err);
        unsetenv(bads[e][0]);
        EXPECT(!bad && strstr(err, bads[e][0]), "%s=%s accepted (%s)", bads[e][0], bads[e][1], err);
        if (bad) bad->destroy(bad);
    }
    free(ref);
    free(ref_lone);
    pair_free(&x);
    pair_free(&g);
    pair_free(&u);
}

static void test_fused(void) {
    test_fused_mlp();
    test_fused_whole_mlp();
    test_fused_attention_prologue();
    test_fused_barriers();
    test_fused_switches();
}
