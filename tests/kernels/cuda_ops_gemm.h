/* cuda_ops_gemm.h: prefill products that read the same x and share one split of it
 * (kernels/backend_cuda_fuse.c try_shared_split). Included once, by cuda_ops.c.
 *
 * Products past gemm_rows of a bf16, two int4 and an int8 matrix (bf16 parts: bf16 and int8;
 * row-scaled fp16 parts: int4) are queued on one x, then x += y, then the two int4 products
 * again on the new x, and read back at the end: the queue groups the first four by split kind
 * (bf16 with int8, int4 with int4), and the last two share the new x's split, not the first. Each
 * result must be the bits of the same product run alone (its queue flushed around it, so it makes
 * its own split). */

enum { SS_MATS = 4 };

static void test_shared_split(backend *g) {
    backend *save = gpu;
    gpu = g;
    const int n = small_shapes ? 20 : 64, cols = small_shapes ? 256 : 2560; /* past gemm_rows */
    const int rows[SS_MATS] = {small_shapes ? 48 : 2048, small_shapes ? 40 : 1024,
                               small_shapes ? 56 : 512, small_shapes ? 24 : 256};
    tensor w[SS_MATS];
    w[0] = rand_tensor(rows[0], cols, DT_BF16);
    const struct {
        quant_dtype dt;
        int group;
    } q[] = {{QUANT_INT4, 32}, {QUANT_INT8, 64}, {QUANT_INT4, 128}};
    for (int i = 1; i < SS_MATS; i++) {
        float *wf = rand_vec((size_t)rows[i] * cols);
        quant_matrix *qm = xcalloc(1, sizeof *qm); /* stays alive: keyed by address */
        char err[256];
        CHECK(!quant_from_f32(qm, "w", wf, rows[i], cols, q[i - 1].dt, q[i - 1].group, err,
                              sizeof err));
        free(wf);
        w[i] = tensor_of_quant(qm);
    }
    /* the products in order: matrix, and whether x += y comes before it */
    const int order[][2] = {{0, 0}, {1, 0}, {2, 0}, {3, 0}, {3, 1}, {1, 0}};
    const int np = sizeof order / sizeof order[0];
    pair x = pair_rand((size_t)n * cols), y = pair_rand((size_t)n * cols);
    float *x0 = xmalloc((size_t)n * cols * sizeof(float));
    gpu->download(gpu, x0, x.g, (size_t)n * cols);
    pair out[6];
    float *alone[6];
    for (int k = 0; k < np; k++) { /* alone: a download flushes the queue after each op */
        const int i = order[k][0];
        out[k] = pair_new(NULL, (size_t)n * rows[i]);
        alone[k] = xmalloc((size_t)n * rows[i] * sizeof(float));
        if (order[k][1]) {
            gpu->add(gpu, x.g, x.g, y.g, (size_t)n * cols);
            gpu->download(gpu, alone[k], out[k].g, 1); /* (runs the add alone) */
        }
        gpu->matmul(gpu, out[k].g, &w[i], x.g, n);
        gpu->download(gpu, alone[k], out[k].g, (size_t)n * rows[i]);
    }
    gpu->upload(gpu, x.g, x0, (size_t)n * cols);
    for (int k = 0; k < np; k++) { /* queued together: read after the last */
        if (order[k][1]) gpu->add(gpu, x.g, x.g, y.g, (size_t)n * cols);
        gpu->matmul(gpu, out[k].g, &w[order[k][0]], x.g, n);
    }
    for (int k = 0; k < np; k++) {
        const size_t count = (size_t)n * rows[order[k][0]];
        float *got = xmalloc(count * sizeof(float));
        gpu->download(gpu, got, out[k].g, count);
        EXPECT(!memcmp(got, alone[k], count * sizeof(float)),
               "shared split: product %d (matrix %d%s) is not the bits of the product alone", k + 1,
               order[k][0], k >= 4 ? ", after x changed" : "");
        free(got);
        free(alone[k]);
        pair_free(&out[k]);
    }
    free(x0);
    pair_free(&x);
    pair_free(&y);
    gpu = save; /* (w[0]'s data stays alive: the backend keys its weights by address) */
}
