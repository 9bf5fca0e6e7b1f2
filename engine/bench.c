/* bench.c: the bench protocol (see bench.h).
 *
 * Prompts are tokenized before the timed window: tokenizing a prompt costs microseconds against
 * the hundreds of forward steps that follow it, and keeping it out makes the figure the
 * decoder's. Everything else a request costs (cache reset, prefill, every decode step, the
 * argmax) is inside. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int prompt_encode(const tokenizer *t, const char *text, int **ids) {
    int bos = tokenizer_bos_id(t);
    int n = tokenizer_encode(t, text, strlen(text), bos >= 0, ids);
    if (n >= 2 && (*ids)[0] == bos && (*ids)[1] == bos)
        memmove(*ids, *ids + 1, (size_t)--n * sizeof **ids);
    return n;
}

int bench_tokenize(prompt_set *ps, const tokenizer *t, char *err, size_t errlen) {
    for (int i = 0; i < ps->n; i++) {
        prompt *p = &ps->items[i];
        if (p->tokens) continue;
        int *ids = NULL;
        int n = prompt_encode(t, p->text, &ids);
        if (n < 0) {
            snprintf(err, errlen, "%s:%d: the prompt text is not valid UTF-8", ps->path, p->line);
            return -1;
        }
        if (n == 0) {
            free(ids);
            snprintf(err, errlen, "%s:%d: the prompt text tokenizes to nothing", ps->path, p->line);
            return -1;
        }
        p->tokens = ids;
        p->n_tokens = n;
    }
    return 0;
}

int bench_check_lengths(const prompt_set *ps, int max_len, int max_new_tokens, char *err,
                        size_t errlen) {
    for (int i = 0; i < ps->n; i++) {
        const prompt *p = &ps->items[i];
        if (p->n_tokens > max_len - max_new_tokens) {
            snprintf(err, errlen,
                     "%s:%d: prompt \"%s\" has %d tokens, more than MAX_MODEL_LEN - MAX_NEW_TOKENS "
                     "= %d - %d = %d",
                     ps->path, p->line, p->id, p->n_tokens, max_len, max_new_tokens,
                     max_len - max_new_tokens);
            return -1;
        }
    }
    return 0;
}

/* One timed request: adds its prefill and decode times to r. Returns 0 or -1 (cache full). */
static int request_run(speculator *s, const prompt *p, int max_new, bench_result *r) {
    double t0 = now_seconds(), t1 = t0;
    if (spec_generate(s, p->tokens, p->n_tokens, max_new, -1, NULL, &t1, &r->out_hash) < 0)
        return -1;
    double t2 = now_seconds();
    r->prefill_s += t1 - t0;
    r->decode_s += t2 - t1;
    return 0;
}

int bench_run(speculator *s, const prompt_set *ps, int warmup_prompts, int max_new_tokens,
              bench_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    bench_result scratch = {0};
    const prompt *p = NULL;
    double t0 = now_seconds();
    for (int i = 0; i < warmup_prompts; i++) {
        p = &ps->items[i % ps->n];
        fprintf(stderr, "engine: warm-up %d/%d (%s)\n", i + 1, warmup_prompts, p->id);
        if (request_run(s, p, max_new_tokens, &scratch)) goto full;
    }
    r->warmup_s = now_seconds() - t0;
    memset(&s->stats, 0, sizeof s->stats);

    r->out_hash = OUTPUT_HASH_SEED;
    double start = now_seconds();
    for (int i = 0; i < ps->n; i++) {
        p = &ps->items[i];
        if (request_run(s, p, max_new_tokens, r)) goto full;
        r->prompts++;
        r->prompt_tokens += p->n_tokens;
        r->tokens += max_new_tokens;
        double so_far = now_seconds() - start;
        fprintf(stderr, "engine: prompt %d/%d (%s): %d + %d tokens, %.1f tokens/s so far\n", i + 1,
                ps->n, p->id, p->n_tokens, max_new_tokens, r->tokens / so_far);
    }
    r->wall_s = now_seconds() - start;
    return 0;
full:
    snprintf(err, errlen, "%s:%d: prompt \"%s\" does not fit the decoder's cache", ps->path,
             p->line, p->id);
    return -1;
}
