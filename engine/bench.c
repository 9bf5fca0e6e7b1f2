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

int logits_argmax(const float *logits, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

uint64_t bench_hash_token(uint64_t h, int id) {
    for (int b = 0; b < 4; b++) {
        h ^= (uint64_t)((unsigned)id >> (8 * b) & 0xff);
        h *= 0x100000001b3ULL;
    }
    return h;
}

int bench_greedy(decoder *d, int vocab, const int *prompt, int n, int max_new, float *logits,
                 int *out, uint64_t *hash, double *first_at) {
    decoder_begin(d, n + max_new);
    if (decoder_forward(d, prompt, n, logits, n - 1)) return -1;
    int tok = logits_argmax(logits, vocab);
    *first_at = now_seconds();
    for (int i = 0;;) {
        *hash = bench_hash_token(*hash, tok);
        if (out) out[i] = tok;
        if (++i == max_new) break;
        /* The argmax where the logits are (on a GPU only the id comes back); same rule. */
        if (decoder_forward_argmax(d, &tok, 1, &tok)) return -1;
    }
    return 0;
}

/* One timed request: adds its prefill and decode times to r. Returns 0 or -1 (cache full). */
static int request_run(const bench_server *s, const prompt *p, int max_new, bench_result *r) {
    double t0 = now_seconds(), t1 = t0;
    if (s->serve(s->ctx, p, max_new, &r->out_hash, &t1)) return -1;
    double t2 = now_seconds();
    r->prefill_s += t1 - t0;
    r->decode_s += t2 - t1;
    return 0;
}

int bench_run_with(const bench_server *s, const prompt_set *ps, int warmup_prompts,
                   int max_new_tokens, bench_result *r, char *err, size_t errlen) {
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
    if (s->warmed) s->warmed(s->ctx);

    r->out_hash = BENCH_HASH_SEED;
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

/* bench_run's server: bench_greedy on one decoder with a one-row logits buffer. */
typedef struct {
    decoder *d;
    int vocab;
    float *logits; /* [vocab] */
} greedy_server;

static int greedy_serve(void *ctx, const prompt *p, int max_new, uint64_t *hash, double *first_at) {
    greedy_server *g = ctx;
    return bench_greedy(g->d, g->vocab, p->tokens, p->n_tokens, max_new, g->logits, NULL, hash,
                        first_at);
}

int bench_run(decoder *d, int vocab, const prompt_set *ps, int warmup_prompts, int max_new_tokens,
              bench_result *r, char *err, size_t errlen) {
    greedy_server g = {d, vocab, xmalloc((size_t)vocab * sizeof(float))};
    bench_server s = {.serve = greedy_serve, .ctx = &g};
    int rc = bench_run_with(&s, ps, warmup_prompts, max_new_tokens, r, err, errlen);
    free(g.logits);
    return rc;
}
