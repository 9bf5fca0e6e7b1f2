/* cuda_ops_dequant.h: the 16-bit copies of quantized matrices that prefill products read, made
 * one product ahead on a second stream or kept on the device (kernels/backend_cuda_dequant.c).
 * Included once, by cuda_ops.c.
 *
 * Four matrices - int4 of two groups and sizes, int8 (two bf16 parts, twice the bytes of a
 * copy), a small int4 one - are multiplied past gemm_rows in rounds, every product of a round
 * queued before the round's results are read, so copies made ahead are still being written
 * while earlier products run:
 *   1. A B C D   nothing known yet: every copy made on the main stream, as before;
 *   2. A B C D   the order repeats: each copy made ahead (D's successor, A, from this round);
 *   3. A A B D C the same matrix twice, then wrong guesses: D comes where C was made ahead, and
 *                C after its buffer went to A's copy, made ahead during D's product;
 *   4. D C B A   D found (made ahead during C's product), then wrong guesses again.
 * A product's result does not depend on where its copy was made: every product of rounds 2-4
 * equals round 1's of the same matrix and input bit for bit, and round 1's are checked against
 * the CPU backend. Round 1 leaves none of A and B in a buffer, so round 2 makes 4 copies ahead
 * (B, C, D, then the next round's A) and finds 3 of them (B, C, D): the backend's counters
 * (not under GEMMA_CUDA_PROFILE, which makes nothing ahead). The same rounds on a backend that
 * keeps its copies (GEMMA_CUDA_DEQUANT=keep) give the same bits, from 4 copies kept in round 2
 * and written once: a round after the counters are zeroed writes none. */

#define DQ_MATS 4

typedef struct {
    tensor w[DQ_MATS];
    pair x[DQ_MATS];
    float *ref[DQ_MATS]; /* round 1's products, downloaded */
    quant_dtype dt[DQ_MATS];
    int group[DQ_MATS];
    int n;
} dq_case;

static const int dq_rounds[][5] = {
    {0, 1, 2, 3, -1}, {0, 1, 2, 3, -1}, {0, 0, 1, 3, 2}, {3, 2, 1, 0, -1}};

/* Round r of the products on gpu (queued, then read): round 1 on the first backend against
 * the CPU's (its results kept in ref), every other against ref bit for bit. */
static void dq_round(dq_case *t, int r, int first, const char *form) {
    pair out[5];
    int len = 0;
    for (; len < 5 && dq_rounds[r][len] >= 0; len++) {
        const int i = dq_rounds[r][len];
        out[len] = pair_new(NULL, (size_t)t->n * t->w[i].rows);
        gpu->matmul(gpu, out[len].g, &t->w[i], t->x[i].g, t->n); /* queued: read below */
    }
    for (int k = 0; k < len; k++) {
        const int i = dq_rounds[r][k];
        const size_t count = (size_t)t->n * t->w[i].rows;
        char what[160];
        snprintf(what, sizeof what, "16-bit copies %s: round %d, product %d (%s g%d)", form, r + 1,
                 k + 1, quant_dtype_name(t->dt[i]), t->group[i]);
        if (first && r == 0) {
            cpu->matmul(cpu, out[k].c, &t->w[i], t->x[i].c, t->n);
            double *scale = dot_scale(&t->w[i], t->x[i].c, t->n);
            pair_check(&out[k], 1e-6, t->dt[i] == QUANT_INT8 ? RTOL_X16 : 1e-5, scale, what);
            free(scale);
            gpu->download(gpu, t->ref[i], out[k].g, count);
        } else {
            float *got = xmalloc(count * sizeof(float));
            gpu->download(gpu, got, out[k].g, count);
            EXPECT(!memcmp(got, t->ref[i], count * sizeof(float)),
                   "%s: not the bits of the copy made on the main stream", what);
            free(got);
        }
        pair_free(&out[k]);
    }
}

/* ahead: a backend under GEMMA_CUDA_DEQUANT=ahead (the default), keep: one under keep; both
 * with GEMMA_CUDA_GEMM=auto. Under keep every round's products are round 1's bits too; round 1
 * keeps nothing (a matrix's copy is kept from its second product), round 2 keeps the 4 copies
 * (at least 2 bytes a weight each), each written once, and nothing is ever made ahead. */
static void test_dequant_copies(backend *ahead, backend *keep) {
    backend *save = gpu;
    dq_case t = {.n = small_shapes ? 20 : 64}; /* past gemm_rows: cuBLAS */
    const struct {
        quant_dtype dt;
        int group, rows, cols;
    } shape[DQ_MATS] = {
        {QUANT_INT4, 32, small_shapes ? 96 : 3000, small_shapes ? 256 : 2560},
        {QUANT_INT8, 64, small_shapes ? 64 : 1000, small_shapes ? 128 : 2560},
        {QUANT_INT4, 128, small_shapes ? 40 : 700, small_shapes ? 128 : 1024},
        {QUANT_INT4, 64, small_shapes ? 72 : 2000, small_shapes ? 384 : 3072},
    };
    size_t weights = 0;
    gpu = ahead;
    for (int i = 0; i < DQ_MATS; i++) {
        const int rows = shape[i].rows, cols = shape[i].cols;
        float *wf = rand_vec((size_t)rows * cols);
        quant_matrix *qm = xcalloc(1, sizeof *qm); /* stays alive: keyed by address */
        char err[256];
        CHECK(
            !quant_from_f32(qm, "w", wf, rows, cols, shape[i].dt, shape[i].group, err, sizeof err));
        free(wf);
        t.w[i] = tensor_of_quant(qm);
        t.dt[i] = shape[i].dt;
        t.group[i] = shape[i].group;
        t.x[i] = pair_rand((size_t)t.n * cols);
        t.ref[i] = xmalloc((size_t)t.n * rows * sizeof(float));
        weights += (size_t)rows * cols;
    }
    backend_cuda_counters c0, c1;
    for (int r = 0; r < 4; r++) {
        if (r == 1) backend_cuda_stats(gpu, &c0);
        const char *prof = getenv("GEMMA_CUDA_PROFILE");
        if (r == 2 && !(prof && strcmp(prof, "0"))) {
            backend_cuda_stats(gpu, &c1);
            EXPECT(c1.dequant_ahead - c0.dequant_ahead == 4 &&
                       c1.dequant_ahead_used - c0.dequant_ahead_used == 3,
                   "dequantized ahead: round 2 made %ld copies ahead and found %ld (want 4 and 3)",
                   c1.dequant_ahead - c0.dequant_ahead,
                   c1.dequant_ahead_used - c0.dequant_ahead_used);
        }
        dq_round(&t, r, 1, "made ahead");
    }
    backend_cuda_stats(gpu, &c1);
    EXPECT(c1.dequant_kept == 0 && c1.dequant_kept_bytes == 0,
           "copies made ahead: %ld kept (want none)", c1.dequant_kept);

    gpu = keep;
    for (int r = 0; r < 4; r++) {
        dq_round(&t, r, 0, "kept");
        backend_cuda_stats(gpu, &c1);
        const long want = r == 0 ? 0 : DQ_MATS; /* kept from a matrix's second product */
        EXPECT(c1.dequant_kept == want && c1.dequant_kept_writes == want &&
                   (c1.dequant_kept_bytes >= 2 * weights) == (want > 0) && c1.dequant_ahead == 0,
               "copies kept: after round %d %ld kept in %zu bytes, written %ld times, %ld made "
               "ahead (want %ld, at least %zu bytes, written once each, none ahead)",
               r + 1, c1.dequant_kept, c1.dequant_kept_bytes, c1.dequant_kept_writes,
               c1.dequant_ahead, want, 2 * weights);
    }
    backend_cuda_reset_counters(gpu); /* zeroes the writes, not the copies */
    dq_round(&t, 1, 0, "kept, counters zeroed");
    backend_cuda_stats(gpu, &c1);
    EXPECT(c1.dequant_kept == DQ_MATS && c1.dequant_kept_writes == 0,
           "copies kept: after zeroing the counters and a round, %ld kept, written %ld times (want "
           "%d, none)",
           c1.dequant_kept, c1.dequant_kept_writes, DQ_MATS);
    gpu = ahead;
    for (int i = 0; i < DQ_MATS; i++) {
        pair_free(&t.x[i]);
        free(t.ref[i]);
    }
    gpu = save;
}
