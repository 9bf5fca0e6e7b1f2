/* spec_serve.c: the speculation / keepset knobs wired into bench, ppl and generate (see
 * spec_serve.h). */
#include "spec_serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decoder.h"
#include "util.h"

int spec_serve_open(spec_serve *s, decoder *d, const char *model_dir, const char *assistant_dir,
                    const knobs *k, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    const int vocab = d->m->config.vocab;
    if (k->lm_head_keepset > 0) {
        s->keepset_path = xasprintf("%s/keepset.txt", model_dir);
        if (keepset_load(s->keepset_path, k->lm_head_keepset, vocab, &s->ks, err, errlen))
            return -1;
        s->has_keepset = 1;
    }
    if (k->num_speculative_tokens > 0) {
        if (k->num_speculative_tokens > SPEC_MAX_K) {
            snprintf(err, errlen, "NUM_SPECULATIVE_TOKENS=%d: at most %d are supported",
                     k->num_speculative_tokens, SPEC_MAX_K);
            return -1;
        }
        if (assistant_dir) {
            s->assistant_dir = xstrdup(assistant_dir);
        } else {
            /* MODEL_DIR-assistant, beside the model (a trailing slash dropped first) */
            size_t n = strlen(model_dir);
            while (n > 1 && model_dir[n - 1] == '/')
                n--;
            s->assistant_dir = xasprintf("%.*s-assistant", (int)n, model_dir);
        }
        struct stat st;
        if (stat(s->assistant_dir, &st) || !S_ISDIR(st.st_mode)) {
            snprintf(err, errlen,
                     "%s: no assistant folder (NUM_SPECULATIVE_TOKENS=%d needs a gemma4_assistant "
                     "drafter: --assistant DIR, or MODEL_DIR-assistant beside the model)",
                     s->assistant_dir, k->num_speculative_tokens);
            return -1;
        }
        if (!(s->a = assistant_load(s->assistant_dir, err, errlen))) return -1;
        char why[512];
        if (!(s->dr = drafter_new(s->a, d, k->centroid_top_k, why, sizeof why))) {
            snprintf(err, errlen, "%s: %s", s->assistant_dir, why);
            return -1;
        }
    }
    s->h = head_new(d, s->has_keepset ? &s->ks : NULL);
    speculator_init(&s->sp, d, s->h, s->dr, k->num_speculative_tokens);
    return 0;
}

void spec_serve_close(spec_serve *s) {
    head_free(s->h);
    drafter_free(s->dr);
    assistant_free(s->a);
    if (s->has_keepset) keepset_free(&s->ks);
    free(s->keepset_path);
    free(s->assistant_dir);
    memset(s, 0, sizeof *s);
}

int spec_serve_active(const spec_serve *s) {
    return s->has_keepset || s->sp.k > 0;
}

/* bench_server hooks: each request through spec_generate; the speculation figures describe the
 * timed set only, so they are cleared once the warm-up is done. */
static int spec_serve_request(void *ctx, const prompt *p, int max_new, uint64_t *hash,
                              double *first_at) {
    spec_serve *s = ctx;
    return spec_generate(&s->sp, p->tokens, p->n_tokens, max_new, -1, NULL, first_at, hash) < 0 ? -1
                                                                                                : 0;
}

static void spec_serve_warmed(void *ctx) {
    spec_serve *s = ctx;
    memset(&s->sp.stats, 0, sizeof s->sp.stats);
}

int spec_serve_bench(spec_serve *s, const prompt_set *ps, int warmup_prompts, int max_new_tokens,
                     bench_result *r, char *err, size_t errlen) {
    bench_server bs = {.serve = spec_serve_request, .warmed = spec_serve_warmed, .ctx = s};
    if (bench_run_with(&bs, ps, warmup_prompts, max_new_tokens, r, err, errlen)) return -1;
    s->decode_s = r->decode_s;
    return 0;
}

int spec_serve_ppl(spec_serve *s, decoder *d, int vocab, int max_len, const ppl_set *pp,
                   ppl_total *out, char *err, size_t errlen) {
    if (s->has_keepset) return head_ppl_score(s->h, max_len, pp, out, err, errlen);
    return ppl_score(d, vocab, max_len, pp, 0, out, err, errlen);
}

int spec_serve_generate(spec_serve *s, const int *prompt, int n, int max_new, int eos, int *out) {
    return spec_generate(&s->sp, prompt, n, max_new, eos, out, NULL, NULL);
}

void spec_serve_result(const spec_serve *s, cJSON *o, const ppl_set *pp) {
    const spec_stats *st = &s->sp.stats;
    if (s->sp.k > 0) {
        cJSON *j = cJSON_AddObjectToObject(o, "speculation");
        cJSON_AddStringToObject(j, "assistant", s->assistant_dir);
        cJSON_AddNumberToObject(j, "drafter_sliding_window", drafter_sliding_window(s->dr));
        cJSON_AddNumberToObject(j, "steps", (double)st->steps);
        cJSON_AddNumberToObject(j, "drafted", (double)st->drafted);
        cJSON_AddNumberToObject(j, "accepted", (double)st->accepted);
        cJSON_AddNumberToObject(j, "accept_rate",
                                st->drafted ? (double)st->accepted / st->drafted : 0.0);
        cJSON *hist = cJSON_AddArrayToObject(j, "accept_hist");
        for (int m = 0; m <= s->sp.k; m++)
            cJSON_AddItemToArray(hist, cJSON_CreateNumber((double)st->hist[m]));
        cJSON_AddNumberToObject(o, "accept_len", spec_mean_accept(st));
        cJSON_AddNumberToObject(o, "tokens_per_step",
                                st->steps ? (double)st->served / st->steps : 0.0);
        /* the clusters actually scored (CENTROID_TOP_K unset: the assistant's own value) */
        cJSON *kn = cJSON_GetObjectItemCaseSensitive(o, "knobs");
        if (kn && s->a->ordered)
            cJSON_ReplaceItemInObjectCaseSensitive(kn, "CENTROID_TOP_K",
                                                   cJSON_CreateNumber(drafter_top_k(s->dr)));
    }
    /* Where decode time goes: the drafter, the verify pass (target + head), the rest. */
    if (s->decode_s > 0) {
        double dec = s->decode_s, other = dec - st->draft_s - st->verify_s;
        cJSON *j = cJSON_AddObjectToObject(o, "decode_time_share");
        cJSON_AddNumberToObject(j, "draft", st->draft_s / dec);
        cJSON_AddNumberToObject(j, "verify", st->verify_s / dec);
        cJSON_AddNumberToObject(j, "other", other > 0 ? other / dec : 0.0);
    }
    if (s->has_keepset) {
        cJSON *j = cJSON_AddObjectToObject(o, "keepset");
        cJSON_AddStringToObject(j, "file", s->keepset_path);
        cJSON_AddNumberToObject(j, "kept", s->ks.n);
        cJSON_AddNumberToObject(j, "listed", s->ks.file_count);
        if (pp) {
            long outside;
            double cov = keepset_coverage(&s->ks, pp, &outside);
            cJSON_AddNumberToObject(j, "ppl_target_coverage", cov);
            cJSON_AddNumberToObject(j, "ppl_targets_outside", (double)outside);
        }
    }
}
