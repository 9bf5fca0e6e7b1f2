/* test_speculate.c: speculative decoding is lossless - the tokens served equal plain greedy
 * decoding of the same configured model - for every k in 1..8, with and without an lm-head
 * keepset, with native and small sliding windows, on many prompts; the served hook and the output
 * hash see every served token once, in order, and a stop id ends the continuation before it.
 *
 * The reference here is written independently of speculate.c and head.c: one decoder_forward
 * per token with full logits, and the argmax taken over the kept ids only (the first maximum in
 * id order, as torch.argmax over a masked vocabulary). Equality is exact (the CPU backend's
 * few-row matmul is row-for-row the one-row kernel, so verify rows equal decode steps).
 *
 * Drafters:
 *   - the random assistant fixture (tests/engine/fixtures/assistant_a, made by transformers)
 *     over fixture target a: real drafter code, proposals mostly wrong - the rollback path;
 *   - an oracle that proposes the reference continuation with seeded corruptions: every
 *     accepted length 0..k occurs, so acceptance, bonus tokens and rollback are all exercised,
 *     and the stats are checked against what the oracle did;
 *   - the shipped small model with its trained assistant (models/gemma4-tiny*), when present:
 *     lossless, and the drafter must actually be accepted a good part of the time; and again
 *     with its linear layers and head quantized (WEIGHT_DTYPE / HEAD_DTYPE int8 and int4), where
 *     a quantized head's reference is plain greedy through that head, one step per token. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "assistant.h"
#include "dataset.h"
#include "decoder.h"
#include "engine.h"
#include "head.h"
#include "speculate.h"
#include "util.h"
#include "../test_util.h"
#include "fixture_util.h"

static double t_start;

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* HEAD_DTYPE / WEIGHT_GROUP of the head check_prompt builds (tiny_quant sets them). */
static quant_dtype head_dtype_used = QUANT_BF16;
static int head_group_used = 32;

/* Plain greedy through a quantized head h (its scores are not the decoder's logits): one
 * single-token step per token, each its own pass - what a verify pass must reproduce. */
static void reference_greedy_head(decoder *d, head *h, const int *prompt, int n, int max_new,
                                  int *out) {
    decoder_reset(d);
    CHECK(head_forward_argmax(h, prompt, n, 1, &out[0]) == 0);
    for (int i = 0; i + 1 < max_new; i++)
        CHECK(head_forward_argmax(h, &out[i], 1, 1, &out[i + 1]) == 0);
}

/* Plain greedy: one token per forward, full logits, argmax over kept ids (all when ks NULL). */
static void reference_greedy(decoder *d, const keepset *ks, const int *prompt, int n, int max_new,
                             int *out) {
    const int V = d->m->config.vocab;
    float *logits = xmalloc((size_t)V * sizeof(float));
    decoder_reset(d);
    CHECK(decoder_forward(d, prompt, n, logits, n - 1) == 0);
    for (int i = 0; i < max_new; i++) {
        int best = -1;
        for (int t = 0; t < V; t++)
            if ((!ks || ks->index[t] >= 0) && (best < 0 || logits[t] > logits[best])) best = t;
        out[i] = best;
        if (i + 1 < max_new) CHECK(decoder_forward(d, &out[i], 1, logits, 0) == 0);
    }
    free(logits);
}

/* A keepset of the n ids with the highest (seeded) random rank, through a keepset file. */
static void random_keepset(int vocab, int n, const int *must, int n_must, keepset *ks) {
    int *order = xmalloc((size_t)vocab * sizeof(int));
    for (int i = 0; i < vocab; i++)
        order[i] = i;
    for (int i = vocab - 1; i > 0; i--) {
        int j = (int)(rnd() % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    /* put the must-keep ids first */
    for (int m = 0; m < n_must; m++)
        for (int i = 0; i < vocab; i++)
            if (order[i] == must[m]) {
                order[i] = order[m];
                order[m] = must[m];
                break;
            }
    char path[] = "/tmp/test_speculate_keepset_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fprintf(f, "# random keepset for test_speculate\n");
    for (int i = 0; i < vocab; i++)
        fprintf(f, "%d\n", order[i]);
    fclose(f);
    char err[512];
    if (keepset_load(path, n, vocab, ks, err, sizeof err)) die("%s", err);
    unlink(path);
    free(order);
}

/* The oracle: proposes the reference continuation, corrupting each draft with probability 1/3. */
typedef struct {
    const int *ref; /* the reference served tokens */
    int n_prompt;   /* positions before the first served token */
    int vocab;
    long proposed;
} oracle;

static int oracle_propose(void *ctx, int row, int x, int pos, int k, int *out) {
    oracle *o = ctx;
    (void)row;
    /* x is served token number pos - n_prompt; the drafts continue the reference after it. */
    int at = pos - o->n_prompt;
    CHECK(o->ref[at] == x);
    for (int i = 0; i < k; i++) {
        out[i] = o->ref[at + 1 + i];
        if (rnd() % 3 == 0) out[i] = (out[i] + 1 + (int)(rnd() % 7)) % o->vocab;
    }
    o->proposed += k;
    return k;
}

/* The served hook's record: every token in the order it was handed out. */
typedef struct {
    int *ids;
    int n;
} served_log;

static void log_served(void *ctx, int id) {
    served_log *l = ctx;
    l->ids[l->n++] = id;
}

typedef struct {
    const char *name;
    decoder *d;
    const assistant *a; /* NULL: oracle only */
    const keepset *ks;
    int top_k;
} setup;

/* Every k in 1..8 on one prompt: the served tokens equal the reference. Returns the drafter's
 * accepted / drafted over all k. */
static double check_prompt(const setup *s, const int *prompt, int n, int max_new) {
    int *ref = xmalloc((size_t)max_new * sizeof(int)),
        *got = xmalloc((size_t)max_new * sizeof(int));
    char err[512];
    head *h = head_new_prec(s->d, s->ks, head_dtype_used, head_group_used, err, sizeof err);
    if (!h) die("%s", err);
    if (head_quantized(h))
        reference_greedy_head(s->d, h, prompt, n, max_new, ref);
    else
        reference_greedy(s->d, s->ks, prompt, n, max_new, ref);
    long drafted = 0, accepted = 0;
    for (int k = 0; k <= 8; k++) {
        /* the drafter, or plain greedy through the speculator when k == 0 */
        drafter *dr = NULL;
        if (s->a && k > 0) {
            dr = drafter_new(s->a, s->d, s->top_k, err, sizeof err);
            if (!dr) die("%s", err);
        }
        if (k == 0 || dr) {
            speculator sp;
            speculator_init(&sp, s->d, h, dr, k);
            memset(got, 0xff, (size_t)max_new * sizeof(int));
            EXPECT(spec_generate(&sp, prompt, n, max_new, -1, got, NULL, NULL) == max_new,
                   "%s k=%d", s->name, k);
            int same = !memcmp(got, ref, (size_t)max_new * sizeof(int)), at = 0;
            while (at < max_new && got[at] == ref[at])
                at++;
            EXPECT(same,
                   "%s: drafter k=%d: served tokens differ from plain greedy at %d (%d vs %d)",
                   s->name, k, at, at < max_new ? got[at] : -1, at < max_new ? ref[at] : -1);
            const spec_stats *st = &sp.stats;
            long hist_steps = 0, hist_acc = 0;
            for (int m = 0; m <= k; m++) {
                hist_steps += st->hist[m];
                hist_acc += (long)m * st->hist[m];
            }
            EXPECT(hist_steps == st->steps && hist_acc == st->accepted &&
                       st->served + 1 == max_new && st->accepted <= st->drafted,
                   "%s k=%d: stats inconsistent (steps %ld/%ld acc %ld/%ld served %ld)", s->name, k,
                   hist_steps, st->steps, hist_acc, st->accepted, st->served);
            drafted += st->drafted;
            accepted += st->accepted;
        }
        drafter_free(dr);
        if (k == 0) continue;

        /* the oracle: corrupted reference drafts */
        oracle o = {ref, n, s->d->m->config.vocab, 0};
        speculator sp;
        speculator_init(&sp, s->d, h, NULL, 0);
        sp.k = k;
        sp.propose = oracle_propose;
        sp.propose_ctx = &o;
        EXPECT(spec_generate(&sp, prompt, n, max_new, -1, got, NULL, NULL) == max_new,
               "%s oracle k=%d", s->name, k);
        EXPECT(!memcmp(got, ref, (size_t)max_new * sizeof(int)),
               "%s: oracle k=%d: served tokens differ from plain greedy", s->name, k);
        EXPECT(sp.stats.drafted == o.proposed && sp.stats.accepted > 0 &&
                   sp.stats.steps < max_new - 1,
               "%s: oracle k=%d: drafted %ld (proposed %ld), accepted %ld in %ld steps", s->name, k,
               sp.stats.drafted, o.proposed, sp.stats.accepted, sp.stats.steps);

        /* The hook and the hash see every served token once, in order; a stop id ends the
         * continuation before its first occurrence, even inside an accepted run of drafts. */
        served_log lg = {xmalloc((size_t)max_new * sizeof(int)), 0};
        uint64_t hash = OUTPUT_HASH_SEED, want = OUTPUT_HASH_SEED;
        for (int i = 0; i < max_new; i++)
            want = output_hash_token(want, ref[i]);
        sp.served = log_served;
        sp.served_ctx = &lg;
        EXPECT(spec_generate(&sp, prompt, n, max_new, -1, NULL, NULL, &hash) == max_new &&
                   lg.n == max_new && !memcmp(lg.ids, ref, (size_t)max_new * sizeof(int)) &&
                   hash == want,
               "%s: oracle k=%d: the served hook or the hash missed tokens", s->name, k);
        int stop = ref[max_new / 2], first = 0;
        while (ref[first] != stop)
            first++;
        lg.n = 0;
        EXPECT(spec_generate(&sp, prompt, n, max_new, stop, got, NULL, NULL) == first &&
                   lg.n == first && !memcmp(got, ref, (size_t)first * sizeof(int)),
               "%s: oracle k=%d: stop id %d should end the continuation after %d tokens", s->name,
               k, stop, first);
        free(lg.ids);
    }
    head_free(h);
    free(ref);
    free(got);
    fprintf(stderr, "test_speculate: %s: lossless for k = 1..8 (%.1f s so far)\n", s->name,
            now_seconds() - t_start);
    return drafted ? (double)accepted / (double)drafted : 0.0;
}

static void fixture_a(void) {
    model *m = fixture_model("fixtures/a_ple_kvshare");
    assistant *a = fixture_assistant("fixtures/assistant_a");
    const int V = m->config.vocab, max_new = 40;
    int windows[] = {0, 5, 3};
    for (int w = 0; w < 3; w++) {
        decoder *d = fixture_decoder(m, windows[w], 128);
        for (int p = 0; p < 4; p++) {
            int n = 3 + (int)(rnd() % 30), prompt[40];
            prompt[0] = 2;
            for (int i = 1; i < n; i++)
                prompt[i] = 3 + (int)(rnd() % (unsigned)(V - 3));
            keepset ks;
            int use_ks = p % 2;
            if (use_ks) random_keepset(V, 120 + (int)(rnd() % 200), NULL, 0, &ks);
            char name[96];
            snprintf(name, sizeof name, "fixture a, window %d, prompt %d%s", windows[w], p,
                     use_ks ? ", keepset" : "");
            for (int top_k = 1; top_k <= 16; top_k *= 4) {
                setup s = {name, d, a, use_ks ? &ks : NULL, top_k};
                check_prompt(&s, prompt, n, max_new);
                if (use_ks || w) break; /* all top-k values once, native window, no keepset */
            }
            if (use_ks) keepset_free(&ks);
        }
        decoder_free(d);
    }
    assistant_free(a);
    model_free(m);
}

static void tiny_model(void) {
    struct stat sb;
    const char *tdir = "../../models/gemma4-tiny", *adir = "../../models/gemma4-tiny-assistant";
    if (stat(tdir, &sb) || stat(adir, &sb)) {
        printf("test_speculate: no shipped small model: skipping that part\n");
        return;
    }
    char err[512];
    model *m = fixture_model(tdir);
    assistant *a = fixture_assistant(adir);
    prompt_set ps;
    if (prompt_set_load("../../models/gemma4-tiny/eval/prompts_tune.jsonl", &ps, err, sizeof err))
        die("%s", err);
    keepset ks;
    if (keepset_load("../../models/gemma4-tiny/keepset.txt", 2048, m->config.vocab, &ks, err,
                     sizeof err))
        die("%s", err);
    const int max_new = 40, n_prompts = 2;
    int windows[] = {0, 24};
    double rate = 0;
    int runs = 0;
    for (int w = 0; w < 2; w++) {
        decoder *d = fixture_decoder(m, windows[w], 256);
        for (int p = 0; p < n_prompts && p < ps.n; p++) {
            int n = ps.items[p].n_tokens < 96 ? ps.items[p].n_tokens : 96;
            for (int use_ks = w; use_ks < 2; use_ks++) { /* the small window with keepset only */
                char name[128];
                snprintf(name, sizeof name, "gemma4-tiny, window %d, %s%s", windows[w],
                         ps.items[p].id, use_ks ? ", keepset 2048" : "");
                setup s = {name, d, a, use_ks ? &ks : NULL, 0};
                rate += check_prompt(&s, ps.items[p].tokens, n, max_new);
                runs++;
            }
        }
        decoder_free(d);
    }
    rate /= runs;
    printf("test_speculate: gemma4-tiny drafter acceptance %.3f of drafts over k = 1..8\n", rate);
    /* A trained drafter is right far more often than chance (1 / vocab). */
    EXPECT(rate > 0.2, "gemma4-tiny: drafter acceptance %.3f is implausibly low", rate);
    keepset_free(&ks);
    prompt_set_free(&ps);
    assistant_free(a);
    model_free(m);
}

/* The shipped small model at WEIGHT_DTYPE int8 / int4 and HEAD_DTYPE bf16 / int8 / int4, with
 * and without a keepset: speculation stays lossless (quantized rows are computed one by one,
 * so a verify pass reproduces the decode steps). */
static void tiny_quant(void) {
    struct stat sb;
    const char *tdir = "../../models/gemma4-tiny", *adir = "../../models/gemma4-tiny-assistant";
    if (stat(tdir, &sb) || stat(adir, &sb)) {
        printf("test_speculate: no shipped small model: skipping the quantized part\n");
        return;
    }
    static const struct {
        quant_dtype w, h;
        int group;
    } cases[] = {
        {QUANT_INT8, QUANT_INT8, 128}, {QUANT_INT4, QUANT_BF16, 32}, {QUANT_INT4, QUANT_INT4, 32}};
    char err[1024];
    assistant *a = fixture_assistant(adir);
    prompt_set ps;
    if (prompt_set_load("../../models/gemma4-tiny/eval/prompts_tune.jsonl", &ps, err, sizeof err))
        die("%s", err);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        model *m = model_load_prec(tdir, cases[c].w, cases[c].group, err, sizeof err);
        if (!m) die("%s", err);
        keepset ks;
        if (keepset_load("../../models/gemma4-tiny/keepset.txt", 2048, m->config.vocab, &ks, err,
                         sizeof err))
            die("%s", err);
        head_dtype_used = cases[c].h;
        head_group_used = cases[c].group;
        decoder *d = fixture_decoder(m, 0, 256);
        const int n = ps.items[1].n_tokens < 64 ? ps.items[1].n_tokens : 64;
        for (int use_ks = 0; use_ks < 2; use_ks++) {
            char name[128];
            snprintf(name, sizeof name, "gemma4-tiny WEIGHT_DTYPE=%s HEAD_DTYPE=%s g%d%s",
                     quant_dtype_name(cases[c].w), quant_dtype_name(cases[c].h), cases[c].group,
                     use_ks ? ", keepset 2048" : "");
            setup s = {name, d, a, use_ks ? &ks : NULL, 0};
            check_prompt(&s, ps.items[1].tokens, n, 32);
        }
        decoder_free(d);
        keepset_free(&ks);
        model_free(m);
    }
    head_dtype_used = QUANT_BF16;
    prompt_set_free(&ps);
    assistant_free(a);
}

int main(void) {
    t_start = now_seconds();
    fixture_a();
    tiny_model();
    tiny_quant();
    return test_exit("test_speculate");
}
