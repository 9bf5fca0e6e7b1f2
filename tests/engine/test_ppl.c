/* test_ppl.c: perplexity (engine/ppl.c) and greedy serving (engine/speculate.c with k = 0).
 *
 * First the arithmetic on its own: the stable log-softmax against a plain double computation,
 * logits far too large for a naive exp, the infinite and NaN cases, ppl from totals.
 * Then end to end on every fixture model (tests/engine/fixtures, made by transformers 5.17 with
 * tools/make_fixtures.py): ppl_score over the fixture's records must give transformers'
 * perplexity for the native window and for the overridden one, whatever the chunk size
 * (1 row, 7 rows, automatic); the serving loop without a drafter must give transformers'
 * greedy continuation. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "engine.h"
#include "head.h"
#include "ppl.h"
#include "speculate.h"
#include "util.h"
#include "../test_util.h"

/* Relative tolerance of a perplexity against transformers' fp32 figure: our fp32 forward pass
 * sums in a different order, which moves logits by about 1e-5 (the golden tests' scale). */
#define PPL_RTOL 1e-4

static double naive_nll(const float *x, int n, int t) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += exp((double)x[i]);
    return log(s) - x[t];
}

static void test_arithmetic(void) {
    enum { V = 1000 };
    float x[V];
    unsigned seed = 12345;
    for (int i = 0; i < V; i++) {
        seed = seed * 1103515245u + 12345u;
        x[i] = ((seed >> 8) % 6000) / 100.0f - 30.0f; /* -30 .. 30 */
    }
    for (int t = 0; t < V; t += 97) {
        double a = logits_nll(x, V, t), b = naive_nll(x, V, t);
        EXPECT(fabs(a - b) < 1e-5 * (1 + fabs(b)));
    }
    /* Shifting every logit changes nothing; a naive exp would overflow at +1000. */
    float y[V];
    for (int i = 0; i < V; i++)
        y[i] = x[i] + 1000.0f;
    EXPECT(isfinite(logits_nll(y, V, 5)));
    EXPECT(fabs(logits_nll(y, V, 5) - logits_nll(x, V, 5)) < 1e-3);
    /* Equal logits: -log(1/V). */
    float z[V] = {0};
    EXPECT(fabs(logits_nll(z, V, 3) - log((double)V)) < 1e-9);
    /* A target of probability zero, and a NaN. */
    z[3] = -INFINITY;
    EXPECT(isinf(logits_nll(z, V, 3)) && logits_nll(z, V, 3) > 0);
    EXPECT(isfinite(logits_nll(z, V, 4)));
    z[7] = NAN;
    EXPECT(isnan(logits_nll(z, V, 4)));

    ppl_total t = {.nll = 10 * log(2.0), .tokens = 10};
    EXPECT(fabs(ppl_value(&t) - 2.0) < 1e-12);
    t.nonfinite = 1;
    EXPECT(isinf(ppl_value(&t)));
    ppl_total none = {0};
    EXPECT(isinf(ppl_value(&none)));
}

/* The golden case of a window: cases[i] with "sliding_window" == window. */
static const cJSON *golden_case(const cJSON *golden, int index) {
    return cJSON_GetArrayItem(cJSON_GetObjectItem(golden, "cases"), index);
}

static void test_fixture(const char *dir) {
    char err[1024];
    char *golden_path = xasprintf("%s/golden.json", dir);
    char *ppl_path = xasprintf("%s/ppl.jsonl", dir);
    char *text = file_read_all(golden_path, NULL, err, sizeof err);
    if (!text) {
        fprintf(stderr, "%s\n", err);
        failures++;
        goto out;
    }
    cJSON *golden = cJSON_Parse(text);
    free(text);
    CHECK(golden);
    model *m = model_load(dir, err, sizeof err);
    if (!m) {
        fprintf(stderr, "%s: %s\n", dir, err);
        failures++;
        cJSON_Delete(golden);
        goto out;
    }
    ppl_set pp;
    CHECK(ppl_set_load(ppl_path, &pp, err, sizeof err) == 0);
    int vocab = model_vocab_size(m);
    float *logits = xmalloc((size_t)vocab * sizeof *logits);
    for (int c = 0; c < 2; c++) {
        const cJSON *gc = golden_case(golden, c);
        CHECK(gc);
        int window = cJSON_GetObjectItem(gc, "sliding_window")->valueint;
        double want_ppl = cJSON_GetObjectItem(gc, "ppl")->valuedouble;
        engine_options opt = {.sliding_window = window, .max_model_len = 128};
        decoder *d = decoder_new(m, &opt, err, sizeof err);
        if (!d) {
            fprintf(stderr, "%s: %s\n", dir, err);
            failures++;
            continue;
        }
        int rows_tried[3] = {0, 1, 7};
        for (int r = 0; r < 3; r++) {
            ppl_total t;
            EXPECT(ppl_score(d, vocab, 128, &pp, rows_tried[r], &t, err, sizeof err) == 0);
            double got = ppl_value(&t);
            printf("%s window %d rows %d: ppl %.6f (transformers %.6f)\n", dir, window,
                   rows_tried[r], got, want_ppl);
            EXPECT(t.tokens == cJSON_GetObjectItem(gc, "n_targets")->valueint);
            EXPECT(t.records == pp.n && t.nonfinite == 0);
            EXPECT(fabs(got - want_ppl) <= PPL_RTOL * want_ppl);
        }
        /* A cache too small for the longest record: an error naming the file and line. */
        ppl_total t;
        EXPECT(ppl_score(d, vocab, 10, &pp, 0, &t, err, sizeof err) == -1);
        EXPECT(strstr(err, ppl_path) && strstr(err, "more than MAX_MODEL_LEN = 10"));

        /* A token id outside the vocabulary, in the context or as the last target (scored but
         * never fed): an error naming the file, line and id, not a cache message. */
        int ctx_ids[2] = {1, 2}, tgt_ids[2] = {3, vocab};
        ppl_record rec = {
            .line = 3, .context = ctx_ids, .n_context = 2, .target = tgt_ids, .n_target = 2};
        ppl_set bad = {.path = "bad.jsonl", .items = &rec, .n = 1, .n_targets = 2};
        char want[128];
        snprintf(want, sizeof want, "bad.jsonl:3: token id %d is outside the model's vocabulary",
                 vocab);
        EXPECT(ppl_score(d, vocab, 128, &bad, 0, &t, err, sizeof err) == -1);
        EXPECT(strstr(err, want), "got \"%s\"", err);
        tgt_ids[1] = 4;
        ctx_ids[0] = vocab + 5;
        snprintf(want, sizeof want, "bad.jsonl:3: token id %d is outside", vocab + 5);
        EXPECT(ppl_score(d, vocab, 128, &bad, 0, &t, err, sizeof err) == -1);
        EXPECT(strstr(err, want), "got \"%s\"", err);
        /* The same set without the bad id scores. */
        ctx_ids[0] = 1;
        EXPECT(ppl_score(d, vocab, 128, &bad, 0, &t, err, sizeof err) == 0, "%s", err);
        EXPECT(t.tokens == 2 && t.records == 1);

        /* Greedy continuation, as bench and generate serve it. */
        const cJSON *g = cJSON_GetObjectItem(gc, "greedy");
        const cJSON *pj = cJSON_GetObjectItem(g, "prompt_ids");
        const cJSON *nj = cJSON_GetObjectItem(g, "new_tokens");
        int n = cJSON_GetArraySize(pj), n_new = cJSON_GetArraySize(nj);
        int *prompt_ids = xmalloc((size_t)n * sizeof *prompt_ids);
        int *out = xmalloc((size_t)n_new * sizeof *out);
        for (int i = 0; i < n; i++)
            prompt_ids[i] = cJSON_GetArrayItem(pj, i)->valueint;
        uint64_t hash = OUTPUT_HASH_SEED;
        double first_at;
        head *h = head_new(d, NULL);
        speculator sp;
        speculator_init(&sp, d, h, NULL, 0);
        EXPECT(spec_generate(&sp, prompt_ids, n, n_new, -1, out, &first_at, &hash) == n_new);
        head_free(h);
        int same = 0;
        while (same < n_new && out[same] == cJSON_GetArrayItem(nj, same)->valueint)
            same++;
        if (same != n_new)
            fprintf(stderr, "%s window %d: greedy differs from transformers at new token %d\n", dir,
                    window, same);
        EXPECT(same == n_new);
        free(prompt_ids);
        free(out);
        decoder_free(d);
    }
    free(logits);
    ppl_set_free(&pp);
    model_free(m);
    cJSON_Delete(golden);
out:
    free(golden_path);
    free(ppl_path);
}

int main(void) {
    test_arithmetic();
    const char *fixtures[] = {"fixtures/a_ple_kvshare", "fixtures/b_keqv_untied",
                              "fixtures/c_wrapped_f16"};
    for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++)
        test_fixture(fixtures[i]);
    if (failures) {
        fprintf(stderr, "test_ppl: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_ppl: all passed\n");
    return 0;
}
