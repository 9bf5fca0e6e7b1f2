/* test_head.c: keepset files, the fused greedy head and its agreement with the unfused one.
 *
 *   - backend matmul_argmax (CPU) equals matmul + softcap + argmax for bf16 / f32 / f16 weights,
 *     1..20 input rows (the row-wise and the blocked kernels), with and without a softcap, on
 *     random data and on rows built to tie exactly (the first row must win, as torch.argmax);
 *   - head_argmax over a keepset equals the argmax of the full logits restricted to kept ids;
 *   - keepset files: comments, blank lines and CRLF accepted; every bad line named by number;
 *     coverage of perplexity targets;
 *   - head_ppl_score (full head, and a keepset of every id) equals ppl_score, and names a token
 *     id outside the vocabulary. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "decoder.h"
#include "head.h"
#include "model.h"
#include "util.h"
#include "../test_util.h"
#include "fixture_util.h"

static unsigned long long rng = 88172645463325252ULL;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static void fused_vs_unfused(backend *b, weight_dtype dt, int rows, int cols, int n, float cap,
                             int ties) {
    size_t es = dtype_size(dt);
    void *data = xmalloc((size_t)rows * cols * es);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            /* with ties: rows repeat every 7, so equal maxima appear at several rows */
            float v = frand();
            size_t i = (size_t)r * cols + c;
            if (ties && r >= 7) {
                memcpy((char *)data + i * es, (char *)data + ((size_t)(r % 7) * cols + c) * es, es);
                continue;
            }
            if (dt == DT_F32) ((float *)data)[i] = v;
            if (dt == DT_BF16) ((uint16_t *)data)[i] = f32_to_bf16(v);
            if (dt == DT_F16) ((uint16_t *)data)[i] = f32_to_f16(v);
        }
    tensor w = {.data = data, .dtype = dt, .rows = rows, .cols = cols};
    float *x = b->alloc(b, (size_t)n * cols), *s = b->alloc(b, (size_t)n * rows);
    for (int i = 0; i < n * cols; i++)
        x[i] = 3.0f * frand();
    int *got = xmalloc((size_t)n * sizeof(int));
    b->matmul(b, s, &w, x, n);
    /* few rows: each row bit for bit what a one-row call gives (verify == decode) */
    float *one = b->alloc(b, (size_t)rows);
    for (int t = 0; t < n && n <= 16; t++) {
        b->matmul(b, one, &w, x + (size_t)t * cols, 1);
        EXPECT(!memcmp(one, s + (size_t)t * rows, (size_t)rows * sizeof(float)),
               "dtype %d cols %d n %d: row %d of a %d-row matmul differs from a one-row matmul", dt,
               cols, n, t, n);
    }
    b->release(b, one);
    if (cap > 0) b->softcap(b, s, (size_t)n * rows, cap);
    b->matmul_argmax(b, got, &w, x, n, cap);
    for (int t = 0; t < n; t++) {
        int want = b->argmax(b, s + (size_t)t * rows, rows);
        EXPECT(got[t] == want, "dtype %d rows %d n %d cap %g ties %d: row %d: fused %d, unfused %d",
               dt, rows, n, cap, ties, t, got[t], want);
        if (ties) EXPECT(got[t] < 7, "a tie must go to the first row (got %d)", got[t]);
    }
    free(got);
    b->release(b, x);
    b->release(b, s);
    free(data);
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
}

static void expect_load_error(const char *text, int n, const char *needle) {
    char path[] = "/tmp/test_head_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    write_text(path, text);
    keepset ks;
    char err[512] = "";
    int rc = keepset_load(path, n, 100, &ks, err, sizeof err);
    EXPECT(rc == -1 && strstr(err, path) && strstr(err, needle),
           "keepset \"%s\": want \"%s\", got \"%s\"", text, needle, err);
    if (!rc) keepset_free(&ks);
    unlink(path);
}

static void files(void) {
    char path[] = "/tmp/test_head_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    write_text(path, "# header\n\n42\r\n  7\n99\n# note\n0\n");
    keepset ks;
    char err[512];
    EXPECT(keepset_load(path, 3, 100, &ks, err, sizeof err) == 0, "%s", err);
    EXPECT(ks.n == 3 && ks.file_count == 4 && ks.ids[0] == 7 && ks.ids[1] == 42 && ks.ids[2] == 99,
           "first three ids, ascending");
    EXPECT(ks.index[42] == 1 && ks.index[0] == -1 && ks.index[5] == -1, "index");
    int ctx[] = {1}, tgt[] = {42, 0, 7, 3};
    ppl_record rec = {1, ctx, 1, tgt, 4};
    ppl_set pp = {"x", &rec, 1, 4};
    long out;
    EXPECT(fabs(keepset_coverage(&ks, &pp, &out) - 0.5) < 1e-12 && out == 2, "coverage");
    keepset_free(&ks);
    unlink(path);
    expect_load_error("1\n2\nx3\n", 1, ":3: not a token id");
    expect_load_error("1\n2\n3 4\n", 1, ":3: not a token id");
    expect_load_error("1\n-2\n", 1, ":2: token id -2 is outside the vocabulary");
    expect_load_error("1\n100\n", 1, ":2: token id 100 is outside the vocabulary");
    expect_load_error("5\n6\n5\n", 1, ":3: token id 5 is listed twice");
    expect_load_error("5\n6\n", 3, "LM_HEAD_KEEPSET=3: the file lists 2 token ids");
    expect_load_error("# only comments\n", 1, "lists 0 token ids");
    keepset none;
    EXPECT(keepset_load("/nonexistent/keepset.txt", 1, 10, &none, err, sizeof err) == -1 &&
               strstr(err, "/nonexistent/keepset.txt"),
           "missing file named: %s", err);
}

/* A keepset file listing V - 1, V - 1 - step, ... (every step-th id, descending), its first n
 * ids loaded into ks. */
static void keepset_descending(keepset *ks, int V, int step, int n) {
    char err[512], path[] = "/tmp/test_head_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (int i = V - 1; i >= 0; i -= step)
        fprintf(f, "%d\n", i);
    fclose(f);
    if (keepset_load(path, n, V, ks, err, sizeof err)) die("%s", err);
    unlink(path);
}

/* head_argmax with a keepset = argmax of full logits over kept ids, on fixture a. */
static void head_on_fixture(void) {
    model *m = fixture_model("fixtures/a_ple_kvshare");
    decoder *d = fixture_decoder(m, 0, 64);
    const int V = m->config.vocab;
    keepset ks;
    keepset_descending(&ks, V, 3, 90);
    int toks[12];
    for (int i = 0; i < 12; i++)
        toks[i] = (i * 37 + 5) % V;
    float *logits = xmalloc((size_t)12 * V * sizeof(float));
    CHECK(decoder_forward(d, toks, 12, logits, 0) == 0);
    head *hk = head_new(d, &ks), *hf = head_new(d, NULL);
    int got[12], full[12];
    head_argmax(hk, 0, 12, got);
    head_argmax(hf, 0, 12, full);
    for (int t = 0; t < 12; t++) {
        int best = -1, fb = 0;
        for (int i = 0; i < V; i++) {
            if (ks.index[i] >= 0 &&
                (best < 0 || logits[(size_t)t * V + i] > logits[(size_t)t * V + best]))
                best = i;
            if (logits[(size_t)t * V + i] > logits[(size_t)t * V + fb]) fb = i;
        }
        EXPECT(got[t] == best, "row %d: keepset head %d, reference %d", t, got[t], best);
        EXPECT(full[t] == fb, "row %d: full head %d, reference %d", t, full[t], fb);
    }
    head_free(hk);
    head_free(hf);
    keepset_free(&ks);
    free(logits);
    decoder_free(d);
    model_free(m);
}

/* head_ppl_score: the full head gives ppl_score's figure (one scoring loop, two heads); a
 * keepset of every id gives the same; a bad token id is named, not taken for a full cache. */
static void head_ppl_on_fixture(void) {
    char err[512];
    model *m = fixture_model("fixtures/a_ple_kvshare");
    decoder *d = fixture_decoder(m, 0, 128);
    const int V = m->config.vocab;
    ppl_set pp;
    if (ppl_set_load("fixtures/a_ple_kvshare/ppl.jsonl", &pp, err, sizeof err)) die("%s", err);
    ppl_total want, got;
    EXPECT(ppl_score(d, V, 128, &pp, 0, &want, err, sizeof err) == 0, "%s", err);

    keepset ks;
    keepset_descending(&ks, V, 1, V);
    head *heads[2] = {head_new(d, NULL), head_new(d, &ks)};
    for (int k = 0; k < 2; k++) {
        EXPECT(head_ppl_score(heads[k], 128, &pp, &got, err, sizeof err) == 0, "%s", err);
        EXPECT(got.tokens == want.tokens && got.records == want.records && got.nonfinite == 0,
               "head %d: %ld tokens %d records, want %ld %d", k, got.tokens, got.records,
               want.tokens, want.records);
        EXPECT(fabs(got.nll - want.nll) <= 1e-6 * fabs(want.nll), "head %d: nll %.9g, want %.9g", k,
               got.nll, want.nll);

        int ctx_ids[2] = {1, 2}, tgt_ids[2] = {3, V};
        ppl_record rec = {
            .line = 7, .context = ctx_ids, .n_context = 2, .target = tgt_ids, .n_target = 2};
        ppl_set bad = {.path = "bad.jsonl", .items = &rec, .n = 1, .n_targets = 2};
        char needle[128];
        snprintf(needle, sizeof needle, "bad.jsonl:7: token id %d is outside the model's", V);
        EXPECT(head_ppl_score(heads[k], 128, &bad, &got, err, sizeof err) == -1 &&
                   strstr(err, needle),
               "head %d: want \"%s\", got \"%s\"", k, needle, err);
        EXPECT(head_ppl_score(heads[k], 10, &pp, &got, err, sizeof err) == -1 &&
                   strstr(err, "more than MAX_MODEL_LEN = 10"),
               "head %d: got \"%s\"", k, err);
    }
    head_free(heads[0]);
    head_free(heads[1]);
    keepset_free(&ks);
    ppl_set_free(&pp);
    decoder_free(d);
    model_free(m);
}

int main(void) {
    const char *isas[] = {"avx512", "avx2", "portable"}; /* every kernel set this CPU has */
    for (int threads = 1; threads <= 2 * 3; threads++) {
        setenv("GEMMA_CPU_ISA", isas[(threads - 1) / 2], 1);
        backend *b = backend_cpu_new(2 - threads % 2);
        weight_dtype dts[] = {DT_BF16, DT_F32, DT_F16};
        for (int i = 0; i < 3; i++)
            for (int n = 1; n <= 20; n += (n < 4 ? 1 : 5)) {
                fused_vs_unfused(b, dts[i], 257, 96, n, 0, 0);
                fused_vs_unfused(b, dts[i], 33, 104, n, 0, 0); /* 64 + 32 + a tail of 8 */
                fused_vs_unfused(b, dts[i], 257, 96, n, 15.0f, 0);
                fused_vs_unfused(b, dts[i], 64, 40, n, 30.0f, 1);
            }
        /* big enough to run threaded */
        fused_vs_unfused(b, DT_BF16, 4099, 256, 3, 30.0f, 0);
        b->destroy(b);
    }
    unsetenv("GEMMA_CPU_ISA");
    files();
    head_on_fixture();
    head_ppl_on_fixture();
    return test_exit("test_head");
}
