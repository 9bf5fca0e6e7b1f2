/* test_assistant.c: our drafter against transformers 5.17's (goldens by
 * tools/make_assistant_fixtures.py), and the loader's refusals.
 *
 * Goldens: fixtures/assistant_a (a random-init gemma4_assistant over fixture target a, sliding
 * window 8 so the drafter's own window matters on the longer prompts) and
 * fixtures/assistant_tiny (the shipped small model's trained assistant). Each case is the
 * candidate generator's first round after a prefill: the target's hidden state, then 8 chained
 * draft steps; per step the scored tokens with their logits (every scored token, or the best
 * 256 on the small model's larger heads), the projected hidden state carried to the next step,
 * and the proposal. Cases cover several CENTROID_TOP_K values and the plain tied head.
 *
 * Chaining: each step is fed the golden's token of the step before (teacher forcing), so one
 * near-tie cannot derail the comparison of all later steps.
 *
 * Tolerances, as in test_golden.c (both sides do fp32 math on the same bf16 weights, differing
 * in summation order only): logits and hidden states within 2e-3 + 1e-3 |ref|; the proposal
 * must be identical whenever the golden's top-2 margin exceeds 1e-2 (5x the logit tolerance);
 * the set of scored tokens (which clusters were chosen) must be identical when every scored
 * token is listed. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "assistant.h"
#include "decoder.h"
#include "engine.h"
#include "safetensors.h"
#include "util.h"
#include "../test_util.h"
#include "fixture_util.h"

#define ATOL   2e-3
#define RTOL   1e-3
#define MARGIN 1e-2

static int close_to(double x, double ref) {
    return fabs(x - ref) <= ATOL + RTOL * fabs(ref);
}

static int *int_array(const cJSON *a, int *n) {
    *n = cJSON_GetArraySize(a);
    int *v = xmalloc((size_t)(*n ? *n : 1) * sizeof(int));
    for (int i = 0; i < *n; i++)
        v[i] = cJSON_GetArrayItem(a, i)->valueint;
    return v;
}

/* One golden case: prefill, then 8 steps compared. Returns the steps whose tokens matched. */
static void check_case(const char *name, const model *m, const assistant *a, const cJSON *c,
                       int *tokens_checked) {
    char err[512];
    int n;
    int *prompt = int_array(cJSON_GetObjectItem(c, "prompt"), &n);
    const int top_k = cJSON_GetObjectItem(c, "top_k")->valueint;
    const int ordered = cJSON_IsTrue(cJSON_GetObjectItem(c, "ordered"));
    const int V = m->config.vocab, H = m->config.hidden;
    decoder *d = fixture_decoder(m, 0, n + 8);
    float *logits = xmalloc((size_t)V * sizeof(float)), *hid = xmalloc((size_t)H * sizeof(float));
    CHECK(decoder_forward(d, prompt, n, logits, n - 1) == 0);
    int first = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[first]) first = i;
    EXPECT(first == cJSON_GetObjectItem(c, "first_token")->valueint, "%s: target's first token",
           name);
    /* the target hidden state the drafter starts from (after the final norm) */
    CHECK(decoder_last_hidden(d, hid, 1) == 0);
    const cJSON *th = cJSON_GetObjectItem(c, "target_hidden");
    double worst = 0;
    for (int i = 0; i < H; i++) {
        double ref = cJSON_GetArrayItem(th, i)->valuedouble;
        if (!close_to(hid[i], ref)) worst = fmax(worst, fabs(hid[i] - ref));
    }
    EXPECT(worst == 0, "%s: target hidden state off by %g", name, worst);

    assistant view = *a; /* the plain-head cases: same weights, use_ordered_embeddings off */
    view.ordered = ordered;
    drafter *dr = drafter_new(&view, d, ordered ? top_k : 0, err, sizeof err);
    if (!dr) die("%s", err);
    drafter_begin(dr, d->hidden_rows - 1);
    int *ids = xmalloc((size_t)V * sizeof(int));
    float *scores = xmalloc((size_t)V * sizeof(float)), *proj = xmalloc((size_t)H * sizeof(float));
    float *by_id = xmalloc((size_t)V * sizeof(float));
    int x = first;
    const cJSON *steps = cJSON_GetObjectItem(c, "steps");
    for (int s = 0; s < cJSON_GetArraySize(steps); s++) {
        const cJSON *st = cJSON_GetArrayItem(steps, s);
        int n_scored, n_ref;
        int tok = drafter_step(dr, x, n, ids, scores, &n_scored);
        const int gold = cJSON_GetObjectItem(st, "token")->valueint;
        const double margin = cJSON_GetObjectItem(st, "margin")->valuedouble;
        /* The golden counts scores above the masked fill; with every cluster chosen there is
         * no fill and its count misses the smallest logit. */
        const int want = ordered ? top_k * a->per_centroid : V;
        const int n_sel = cJSON_GetObjectItem(st, "n_selected")->valueint;
        EXPECT(n_scored == want && (n_sel == want || (want == V && n_sel == V - 1)),
               "%s step %d: %d tokens scored, transformers scored %d", name, s, n_scored, n_sel);
        if (margin > MARGIN) {
            EXPECT(tok == gold, "%s step %d: proposal %d, transformers %d (margin %.4f)", name, s,
                   tok, gold, margin);
            ++*tokens_checked;
        }
        for (int i = 0; i < V; i++)
            by_id[i] = NAN;
        for (int i = 0; i < n_scored; i++)
            by_id[ids[i]] = scores[i];
        int *rid = int_array(cJSON_GetObjectItem(st, "ids"), &n_ref);
        const cJSON *rl = cJSON_GetObjectItem(st, "logits");
        int missing = 0, off = 0;
        double worst_l = 0;
        for (int i = 0; i < n_ref; i++) {
            double ref = cJSON_GetArrayItem(rl, i)->valuedouble;
            if (isnan(by_id[rid[i]]))
                missing++;
            else if (!close_to(by_id[rid[i]], ref)) {
                off++;
                worst_l = fmax(worst_l, fabs(by_id[rid[i]] - ref));
            }
        }
        EXPECT(!missing, "%s step %d: %d of transformers' scored tokens not scored here", name, s,
               missing);
        EXPECT(!off, "%s step %d: %d logits off (worst by %g)", name, s, off, worst_l);
        free(rid);
        drafter_projected(dr, proj);
        const cJSON *rp = cJSON_GetObjectItem(st, "projected");
        double worst_p = 0;
        for (int i = 0; i < H; i++) {
            double ref = cJSON_GetArrayItem(rp, i)->valuedouble;
            if (!close_to(proj[i], ref)) worst_p = fmax(worst_p, fabs(proj[i] - ref));
        }
        EXPECT(worst_p == 0, "%s step %d: projected hidden state off by %g", name, s, worst_p);
        x = gold;
    }
    free(ids);
    free(scores);
    free(proj);
    free(by_id);
    drafter_free(dr);
    free(logits);
    free(hid);
    free(prompt);
    decoder_free(d);
}

static void golden(const char *dir) {
    char path[512];
    struct stat sb;
    snprintf(path, sizeof path, "%s/golden.json", dir);
    if (stat(path, &sb)) die("%s: missing", path);
    cJSON *g = test_read_json(path);
    const cJSON *t = cJSON_GetObjectItem(g, "target"), *ad = cJSON_GetObjectItem(g, "assistant");
    char tdir[512], adir[512];
    snprintf(tdir, sizeof tdir, "%s/%s", dir, t->valuestring);
    if (ad)
        snprintf(adir, sizeof adir, "%s/%s", dir, ad->valuestring);
    else
        snprintf(adir, sizeof adir, "%s", dir);
    if (stat(tdir, &sb) || stat(adir, &sb)) {
        printf("test_assistant: %s: model folders not present, skipped\n", dir);
        cJSON_Delete(g);
        return;
    }
    model *m = fixture_model(tdir);
    assistant *a = fixture_assistant(adir);
    const cJSON *cases = cJSON_GetObjectItem(g, "cases");
    int tokens = 0, n_cases = cJSON_GetArraySize(cases);
    for (int i = 0; i < n_cases; i++) {
        const cJSON *c = cJSON_GetArrayItem(cases, i);
        char name[128];
        snprintf(name, sizeof name, "%s case %d (top_k %d%s)", dir, i,
                 cJSON_GetObjectItem(c, "top_k")->valueint,
                 cJSON_IsTrue(cJSON_GetObjectItem(c, "ordered")) ? "" : ", plain head");
        check_case(name, m, a, c, &tokens);
    }
    printf("test_assistant: %s: %d cases, %d proposals compared\n", dir, n_cases, tokens);
    EXPECT(tokens >= n_cases * 4, "%s: too few robust proposals (%d)", dir, tokens);
    assistant_free(a);
    model_free(m);
    cJSON_Delete(g);
}

/* ---- refusals -------------------------------------------------------------------------- */

/* A scratch assistant folder: assistant_a's config.json with one edit and its weights (a
 * copy, optionally with bytes changed at a tensor's offset). */
static char scratch[] = "/tmp/test_assistant_XXXXXX";

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(data, 1, n, f) == n && fclose(f) == 0);
}

static void make_scratch(const char *config_from, const char *config_to, const char *tensor,
                         long long value) {
    char err[512], path[600];
    size_t len;
    char *cfg = file_read_all("fixtures/assistant_a/config.json", &len, err, sizeof err);
    CHECK(cfg);
    char *at = config_from ? strstr(cfg, config_from) : NULL;
    if (config_from) CHECK(at);
    char *out =
        at ? xasprintf("%.*s%s%s", (int)(at - cfg), cfg, config_to, at + strlen(config_from))
           : xstrdup(cfg);
    snprintf(path, sizeof path, "%s/config.json", scratch);
    write_file(path, out, strlen(out));
    char *w = file_read_all("fixtures/assistant_a/model.safetensors", &len, err, sizeof err);
    CHECK(w);
    if (tensor) {
        safetensors st = {0};
        CHECK(safetensors_open_dir(&st, "fixtures/assistant_a", err, sizeof err) == 0);
        const st_tensor *t = safetensors_find(&st, tensor);
        CHECK(t);
        size_t off = (size_t)((const char *)t->data - (const char *)st.files[t->file].map);
        int64_t v = value;
        memcpy(w + off + 8, &v, 8); /* entry 1 */
        safetensors_close(&st);
    }
    snprintf(path, sizeof path, "%s/model.safetensors", scratch);
    write_file(path, w, len);
    free(w);
    free(out);
    free(cfg);
}

static void expect_refusal(const char *what, const char *needle) {
    char err[1024] = "";
    assistant *a = assistant_load(scratch, err, sizeof err);
    EXPECT(!a && strstr(err, needle), "%s: expected an error naming \"%s\", got \"%s\"", what,
           needle, a ? "(loaded)" : err);
    assistant_free(a);
}

static void refusals(void) {
    CHECK(mkdtemp(scratch));
    make_scratch(NULL, NULL, NULL, 0);
    char err[1024];
    assistant *a = assistant_load(scratch, err, sizeof err);
    EXPECT(a != NULL, "unchanged copy must load: %s", err);
    assistant_free(a);

    make_scratch("\"model_type\": \"gemma4_assistant\"", "\"model_type\": \"gemma4_text\"", NULL,
                 0);
    expect_refusal("model_type", "model_type");
    make_scratch("\"num_centroids\": 16", "\"num_centroids\": 5", NULL, 0);
    expect_refusal("num_centroids not dividing the vocabulary", "num_centroids");
    make_scratch("\"centroid_intermediate_top_k\": 4", "\"centroid_intermediate_top_k\": 17", NULL,
                 0);
    expect_refusal("top_k above num_centroids", "centroid_intermediate_top_k");
    make_scratch("\"num_kv_shared_layers\": 3", "\"num_kv_shared_layers\": 1", NULL, 0);
    expect_refusal("not every layer shared", "num_kv_shared_layers");
    make_scratch("\"hidden_size_per_layer_input\": 0", "\"hidden_size_per_layer_input\": 8", NULL,
                 0);
    expect_refusal("per-layer embeddings", "hidden_size_per_layer_input");
    make_scratch("\"intermediate_size\": 96", "\"intermediate_size\": 97", NULL, 0);
    expect_refusal("shape mismatch", "gate_proj");
    make_scratch("\"backbone_hidden_size\": 64", "\"backbone_hidden_size\": 65", NULL, 0);
    expect_refusal("backbone width vs pre_projection", "pre_projection");
    make_scratch("\"use_ordered_embeddings\": true", "\"use_ordered_embeddings\": false", NULL, 0);
    expect_refusal("ordering present but unused", "unexpected tensor masked_embedding");
    make_scratch(NULL, NULL, "masked_embedding.token_ordering", 384);
    expect_refusal("ordering outside the vocabulary", "outside the vocabulary");
    make_scratch(NULL, NULL, "masked_embedding.token_ordering", -1);
    expect_refusal("negative ordering", "token_ordering");

    /* the target must fit */
    make_scratch(NULL, NULL, NULL, 0);
    a = assistant_load(scratch, err, sizeof err);
    CHECK(a);
    model *m = model_load("fixtures/b_keqv_untied", err, sizeof err);
    CHECK(m);
    EXPECT(assistant_check_target(a, m, err, sizeof err) && strstr(err, "backbone_hidden_size"),
           "assistant over the wrong target: %s", err);
    model_free(m);
    m = model_load("fixtures/a_ple_kvshare", err, sizeof err);
    CHECK(m);
    engine_options o = {0};
    o.max_model_len = 32;
    decoder *d = decoder_new(m, &o, err, sizeof err);
    CHECK(d);
    EXPECT(!drafter_new(a, d, 17, err, sizeof err) && strstr(err, "CENTROID_TOP_K"),
           "top-k above num_centroids: %s", err);
    drafter *dr = drafter_new(a, d, 0, err, sizeof err);
    EXPECT(dr && drafter_sliding_window(dr) == 9, "drafter window: sliding_window + 1");
    drafter_free(dr);
    decoder_free(d);
    o.sliding_window = 5;
    d = decoder_new(m, &o, err, sizeof err);
    dr = drafter_new(a, d, 0, err, sizeof err);
    EXPECT(dr && drafter_sliding_window(dr) == 5, "drafter window capped by the target's");
    drafter_free(dr);
    decoder_free(d);
    model_free(m);
    assistant_free(a);

    char path[600];
    snprintf(path, sizeof path, "%s/config.json", scratch);
    unlink(path);
    snprintf(path, sizeof path, "%s/model.safetensors", scratch);
    unlink(path);
    rmdir(scratch);
}

int main(void) {
    golden("fixtures/assistant_a");
    golden("fixtures/assistant_tiny");
    refusals();
    return test_exit("test_assistant");
}
