/* serve.c: the knobs opened into a decoder, a head, a drafter and the serving loop (see
 * serve.h), perplexity through them, and their fields of the result JSON. */
#include "serve.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "decoder.h"
#include "util.h"

/* The drafter's folder: --assistant DIR, or MODEL_DIR-assistant beside the model (a trailing
 * slash dropped first). Returns 0, or -1 with err when it is not a folder. */
static int open_drafter(server *s, const knobs *k, const char *model_dir, const char *assistant_dir,
                        char *err, size_t errlen) {
    if (assistant_dir) {
        s->assistant_dir = xstrdup(assistant_dir);
    } else {
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
    if (!(s->dr = drafter_new(s->a, s->d, k->centroid_top_k, why, sizeof why))) {
        snprintf(err, errlen, "%s: %s", s->assistant_dir, why);
        return -1;
    }
    return 0;
}

int serve_open(server *s, const model *m, const knobs *k, const char *model_dir,
               const char *assistant_dir, int need, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    engine_options o = knobs_options(k);
    if (!o.max_model_len) o.max_model_len = need;
    if (!(s->d = decoder_new(m, &o, err, errlen))) return -1;
    s->capacity = o.max_model_len;
    if (k->lm_head_keepset > 0) {
        s->keepset_path = xasprintf("%s/keepset.txt", model_dir);
        if (keepset_load(s->keepset_path, k->lm_head_keepset, model_vocab_size(m), &s->ks, err,
                         errlen))
            return -1;
        s->has_keepset = 1;
    }
    if (k->num_speculative_tokens > SPEC_MAX_K) {
        snprintf(err, errlen, "NUM_SPECULATIVE_TOKENS=%d: at most %d are supported",
                 k->num_speculative_tokens, SPEC_MAX_K);
        return -1;
    }
    if (k->num_speculative_tokens > 0 && open_drafter(s, k, model_dir, assistant_dir, err, errlen))
        return -1;
    if (!(s->h = head_new_prec(s->d, s->has_keepset ? &s->ks : NULL, k->head_dtype,
                               knobs_weight_group(k), err, errlen)))
        return -1;
    s->h_group = knobs_weight_group(k);
    speculator_init(&s->sp, s->d, s->h, s->dr, k->num_speculative_tokens);
    return 0;
}

void serve_close(server *s) {
    head_free(s->h);
    drafter_free(s->dr);
    assistant_free(s->a);
    if (s->has_keepset) keepset_free(&s->ks);
    if (s->d) decoder_free(s->d);
    free(s->keepset_path);
    free(s->assistant_dir);
    memset(s, 0, sizeof *s);
}

/* The keepset head (or a quantized one) scores its own rows; the full head scores through the
 * decoder's own logits (ppl_score, in as many rows per chunk as fit its buffer). */
int serve_ppl(server *s, const ppl_set *pp, ppl_total *out, char *err, size_t errlen) {
    if (s->has_keepset || head_quantized(s->h))
        return head_ppl_score(s->h, s->capacity, pp, out, err, errlen);
    return ppl_score(s->d, s->d->m->config.vocab, s->capacity, pp, 0, out, err, errlen);
}

size_t serve_weight_bytes_per_token(const server *s) {
    const model *m = s->d->m;
    return model_bytes_per_token(m) - tensor_bytes(&m->weights.lm_head) + head_bytes(s->h);
}

void serve_result(const server *s, cJSON *o, const ppl_set *pp, double decode_s) {
    const spec_stats *st = &s->sp.stats;
    /* The precision served and the weight bytes one greedy step of the target reads. */
    const model *m = s->d->m;
    cJSON *pr = cJSON_AddObjectToObject(o, "precision");
    cJSON_AddStringToObject(pr, "weights", quant_dtype_name(m->weight_dtype));
    cJSON_AddNumberToObject(pr, "weight_group", m->weight_group);
    cJSON_AddBoolToObject(pr, "prequantized", m->prequantized);
    cJSON_AddStringToObject(pr, "head", quant_dtype_name(head_dtype(s->h)));
    cJSON_AddNumberToObject(pr, "head_group", head_quantized(s->h) ? s->h_group : 0);
    cJSON_AddNumberToObject(pr, "head_bytes", (double)head_bytes(s->h));
    cJSON_AddNumberToObject(o, "weight_bytes_per_token", (double)serve_weight_bytes_per_token(s));
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
    /* Where decode time goes: the drafter, the verify pass (target + head), the rest. Plain
     * greedy with the full head has only verify passes, so it reports no shares. */
    if ((s->sp.k > 0 || s->has_keepset) && decode_s > 0) {
        double other = decode_s - st->draft_s - st->verify_s;
        cJSON *j = cJSON_AddObjectToObject(o, "decode_time_share");
        cJSON_AddNumberToObject(j, "draft", st->draft_s / decode_s);
        cJSON_AddNumberToObject(j, "verify", st->verify_s / decode_s);
        cJSON_AddNumberToObject(j, "other", other > 0 ? other / decode_s : 0.0);
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
