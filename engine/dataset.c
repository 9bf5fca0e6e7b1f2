/* dataset.c: JSONL prompt sets and perplexity records (see dataset.h).
 *
 * The file is read whole, cut into lines, and each non-blank line parsed on its own by cJSON, so
 * an error can name its line and column. One walker (jsonl_each) does the cutting and parsing;
 * the two readers only say what an object must hold. */
#include "dataset.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef int (*jsonl_fn)(void *ctx, const cJSON *obj, int line, char *err, size_t errlen);

static int is_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
    return 1;
}

/* Call fn on the object of every non-blank line. Returns the number of objects, or -1 with err. */
static int jsonl_each(const char *path, jsonl_fn fn, void *ctx, char *err, size_t errlen) {
    size_t len;
    char *buf = file_read_all(path, &len, err, errlen);
    if (!buf) return -1;
    int count = 0, line = 0;
    for (size_t at = 0; at < len;) {
        line++;
        const char *s = buf + at;
        const char *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl ? 1 : 0);
        if (is_blank(s, n)) continue;
        if (memchr(s, '\0', n)) {
            snprintf(err, errlen, "%s:%d: line contains a NUL byte", path, line);
            goto fail;
        }
        const char *end = NULL;
        cJSON *obj = cJSON_ParseWithLengthOpts(s, n, &end, 0);
        if (!obj) {
            const char *at_err = cJSON_GetErrorPtr();
            long col = at_err && at_err >= s && at_err <= s + n ? (long)(at_err - s) + 1 : 1;
            snprintf(err, errlen, "%s:%d: not valid JSON (near column %ld)", path, line, col);
            goto fail;
        }
        if (end && !is_blank(end, n - (size_t)(end - s))) {
            snprintf(err, errlen, "%s:%d: unexpected text after the JSON object (column %ld)", path,
                     line, (long)(end - s) + 1);
            cJSON_Delete(obj);
            goto fail;
        }
        if (!cJSON_IsObject(obj)) {
            snprintf(err, errlen, "%s:%d: expected a JSON object, found another JSON value", path,
                     line);
            cJSON_Delete(obj);
            goto fail;
        }
        int rc = fn(ctx, obj, line, err, errlen);
        cJSON_Delete(obj);
        if (rc) goto fail;
        count++;
    }
    free(buf);
    if (count == 0) {
        snprintf(err, errlen, "%s: no records (the file is empty or has only blank lines)", path);
        return -1;
    }
    return count;
fail:
    free(buf);
    return -1;
}

/* A non-empty array of token ids (integers in 0..INT_MAX) under key. Returns 0, 1 when the key is
 * absent or null, or -1 with err. */
static int ids_parse(const cJSON *obj, const char *key, const char *path, int line, int **out,
                     int *n_out, char *err, size_t errlen) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!arr || cJSON_IsNull(arr)) return 1;
    if (!cJSON_IsArray(arr)) {
        snprintf(err, errlen, "%s:%d: \"%s\" must be an array of token ids", path, line, key);
        return -1;
    }
    int n = cJSON_GetArraySize(arr);
    if (n == 0) {
        snprintf(err, errlen, "%s:%d: \"%s\" is empty", path, line, key);
        return -1;
    }
    int *ids = xmalloc((size_t)n * sizeof *ids);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, arr) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : -1;
        if (!cJSON_IsNumber(e) || v < 0 || v > INT_MAX || v != floor(v)) {
            snprintf(err, errlen, "%s:%d: \"%s\"[%d] is not a token id (a non-negative integer)",
                     path, line, key, i);
            free(ids);
            return -1;
        }
        ids[i++] = (int)v;
    }
    *out = ids;
    *n_out = n;
    return 0;
}

static int prompt_add(void *ctx, const cJSON *obj, int line, char *err, size_t errlen) {
    prompt_set *ps = ctx;
    prompt p = {.line = line};
    int rc =
        ids_parse(obj, "prompt_token_ids", ps->path, line, &p.tokens, &p.n_tokens, err, errlen);
    if (rc < 0) return -1;
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(obj, "prompt");
    const char *text_key = "prompt";
    if (!text) text = cJSON_GetObjectItemCaseSensitive(obj, text_key = "text");
    if (text && !cJSON_IsNull(text)) {
        if (!cJSON_IsString(text)) {
            snprintf(err, errlen, "%s:%d: \"%s\" must be a string", ps->path, line, text_key);
            goto fail;
        }
        if (!p.tokens && !text->valuestring[0]) {
            snprintf(err, errlen, "%s:%d: \"%s\" is empty", ps->path, line, text_key);
            goto fail;
        }
        p.text = xstrdup(text->valuestring);
    }
    if (!p.tokens && !p.text) {
        snprintf(err, errlen,
                 "%s:%d: a prompt needs \"prompt_token_ids\" or a \"prompt\"/\"text\" string",
                 ps->path, line);
        goto fail;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(obj, "id");
    if (cJSON_IsString(id))
        p.id = xstrdup(id->valuestring);
    else if (cJSON_IsNumber(id))
        p.id = xasprintf("%.17g", id->valuedouble);
    else if (id && !cJSON_IsNull(id)) {
        snprintf(err, errlen, "%s:%d: \"id\" must be a string or a number", ps->path, line);
        goto fail;
    } else
        p.id = xasprintf("line %d", line);
    ps->items = xrealloc(ps->items, (size_t)(ps->n + 1) * sizeof *ps->items);
    ps->items[ps->n++] = p;
    return 0;
fail:
    free(p.tokens);
    free(p.text);
    return -1;
}

int prompt_set_load(const char *path, prompt_set *ps, char *err, size_t errlen) {
    memset(ps, 0, sizeof *ps);
    ps->path = xstrdup(path);
    if (jsonl_each(path, prompt_add, ps, err, errlen) < 0) {
        prompt_set_free(ps);
        return -1;
    }
    return 0;
}

void prompt_set_free(prompt_set *ps) {
    for (int i = 0; i < ps->n; i++) {
        free(ps->items[i].id);
        free(ps->items[i].tokens);
        free(ps->items[i].text);
    }
    free(ps->items);
    free(ps->path);
    memset(ps, 0, sizeof *ps);
}

static int record_add(void *ctx, const cJSON *obj, int line, char *err, size_t errlen) {
    ppl_set *pp = ctx;
    ppl_record r = {.line = line};
    static const char *keys[2] = {"context_token_ids", "target_token_ids"};
    int *parts[2] = {NULL, NULL}, lens[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        int rc = ids_parse(obj, keys[k], pp->path, line, &parts[k], &lens[k], err, errlen);
        if (rc == 1) snprintf(err, errlen, "%s:%d: missing \"%s\"", pp->path, line, keys[k]);
        if (rc) {
            free(parts[0]);
            return -1;
        }
    }
    r.context = parts[0], r.n_context = lens[0];
    r.target = parts[1], r.n_target = lens[1];
    pp->items = xrealloc(pp->items, (size_t)(pp->n + 1) * sizeof *pp->items);
    pp->items[pp->n++] = r;
    pp->n_targets += r.n_target;
    return 0;
}

int ppl_set_load(const char *path, ppl_set *pp, char *err, size_t errlen) {
    memset(pp, 0, sizeof *pp);
    pp->path = xstrdup(path);
    if (jsonl_each(path, record_add, pp, err, errlen) < 0) {
        ppl_set_free(pp);
        return -1;
    }
    return 0;
}

void ppl_set_free(ppl_set *pp) {
    for (int i = 0; i < pp->n; i++) {
        free(pp->items[i].context);
        free(pp->items[i].target);
    }
    free(pp->items);
    free(pp->path);
    memset(pp, 0, sizeof *pp);
}

static int ids_check(const int *ids, int n, int vocab, const char *path, int line, const char *what,
                     char *err, size_t errlen) {
    for (int i = 0; i < n; i++)
        if (ids[i] >= vocab) {
            snprintf(err, errlen, "%s:%d: %s[%d] = %d is outside the model's vocabulary of %d",
                     path, line, what, i, ids[i], vocab);
            return -1;
        }
    return 0;
}

int prompt_set_check_vocab(const prompt_set *ps, int vocab, char *err, size_t errlen) {
    for (int i = 0; i < ps->n; i++) {
        const prompt *p = &ps->items[i];
        if (ids_check(p->tokens, p->n_tokens, vocab, ps->path, p->line, "prompt_token_ids", err,
                      errlen))
            return -1;
    }
    return 0;
}

int ppl_set_check_vocab(const ppl_set *pp, int vocab, char *err, size_t errlen) {
    for (int i = 0; i < pp->n; i++) {
        const ppl_record *r = &pp->items[i];
        if (ids_check(r->context, r->n_context, vocab, pp->path, r->line, "context_token_ids", err,
                      errlen) ||
            ids_check(r->target, r->n_target, vocab, pp->path, r->line, "target_token_ids", err,
                      errlen))
            return -1;
    }
    return 0;
}
