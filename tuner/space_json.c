/* space_json.c: the canonical JSON form of a loaded space, and its hash.
 *
 * The study folder keeps this text as its snapshot of the space, and a resumed study compares
 * hashes to refuse a changed space. The form therefore holds every value that changes what a
 * study measures or decides, after defaults are applied, in a fixed key order, and nothing
 * else: comments, whitespace, key order in the file and spelling ("10m" vs 600) leave it
 * unchanged. The file's own path is not part of it (a moved file is the same space). Lists
 * whose order carries meaning (command arguments, parameters, constraints, levels) keep the
 * file's order; maps whose order does not (env, regex) are sorted by key. */
#include "space.h"
#include "slurm.h"
#include "util.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *op_text(cmp_op op) {
    switch (op) {
    case OP_LE:
        return "<=";
    case OP_LT:
        return "<";
    case OP_GE:
        return ">=";
    case OP_GT:
        return ">";
    }
    return "?";
}

static int cmp_env(const void *a, const void *b) {
    return strcmp(((const env_pair *)a)->key, ((const env_pair *)b)->key);
}

static int cmp_regex(const void *a, const void *b) {
    return strcmp((*(const metric_regex *const *)a)->metric,
                  (*(const metric_regex *const *)b)->metric);
}

static int cmp_bounds(const void *a, const void *b) {
    return strcmp((*(const bounds_def *const *)a)->metric, (*(const bounds_def *const *)b)->metric);
}

/* cJSON returns NULL only when out of memory. */
static cJSON *checked(cJSON *item) {
    if (!item) die("cJSON: out of memory");
    return item;
}

static cJSON *engine_json(const space *sp) {
    cJSON *e = checked(cJSON_CreateObject());
    cJSON *argv = checked(cJSON_AddArrayToObject(e, "command"));
    for (int i = 0; i < sp->argc; i++)
        cJSON_AddItemToArray(argv, checked(cJSON_CreateString(sp->argv[i])));
    if (sp->workdir)
        checked(cJSON_AddStringToObject(e, "workdir", sp->workdir));
    else
        checked(cJSON_AddNullToObject(e, "workdir"));
    env_pair *env = xmalloc((size_t)sp->n_env * sizeof *env + 1);
    if (sp->n_env) memcpy(env, sp->env, (size_t)sp->n_env * sizeof *env);
    qsort(env, (size_t)sp->n_env, sizeof *env, cmp_env);
    cJSON *envj = checked(cJSON_AddObjectToObject(e, "env"));
    for (int i = 0; i < sp->n_env; i++)
        checked(cJSON_AddStringToObject(envj, env[i].key, env[i].value));
    free(env);
    checked(cJSON_AddNumberToObject(e, "timeout_s", sp->timeout_s));
    if (sp->launcher)
        checked(cJSON_AddStringToObject(e, "launcher", sp->launcher));
    else if (sp->slurm)
        cJSON_AddItemToObject(e, "launcher", checked(slurm_launcher_json(sp->slurm)));
    else
        checked(cJSON_AddNullToObject(e, "launcher"));
    cJSON *result = checked(cJSON_AddObjectToObject(e, "result"));
    if (sp->n_regex == 0) {
        checked(cJSON_AddStringToObject(result, "format", "json"));
    } else {
        checked(cJSON_AddStringToObject(result, "format", "regex"));
        const metric_regex **sorted = xmalloc((size_t)sp->n_regex * sizeof *sorted);
        for (int i = 0; i < sp->n_regex; i++)
            sorted[i] = &sp->regex[i];
        qsort(sorted, (size_t)sp->n_regex, sizeof *sorted, cmp_regex);
        cJSON *re = checked(cJSON_AddObjectToObject(result, "regex"));
        for (int i = 0; i < sp->n_regex; i++)
            checked(cJSON_AddStringToObject(re, sorted[i]->metric, sorted[i]->pattern));
        free(sorted);
    }
    return e;
}

static cJSON *param_json(const param_def *p) {
    cJSON *o = checked(cJSON_CreateObject());
    checked(cJSON_AddStringToObject(o, "name", p->name));
    if (p->kind == PARAM_INT) {
        checked(cJSON_AddStringToObject(o, "type", "int"));
        checked(cJSON_AddNumberToObject(o, "min", (double)p->min));
        checked(cJSON_AddNumberToObject(o, "max", (double)p->max));
        checked(cJSON_AddNumberToObject(o, "step", (double)p->step));
        checked(cJSON_AddBoolToObject(o, "log", p->log_scale));
    } else {
        checked(cJSON_AddStringToObject(o, "type", "categorical"));
        cJSON *vals = checked(cJSON_AddArrayToObject(o, "values"));
        for (int i = 0; i < p->n_levels; i++)
            cJSON_AddItemToArray(vals, checked(cJSON_CreateString(p->values[i])));
    }
    if (p->default_level >= 0) {
        char buf[64];
        const char *v = buf;
        if (p->kind == PARAM_INT)
            space_param_value(p, p->default_level, buf, sizeof buf);
        else
            v = p->values[p->default_level];
        checked(cJSON_AddStringToObject(o, "default", v));
    } else {
        checked(cJSON_AddNullToObject(o, "default"));
    }
    return o;
}

char *space_to_json_text(const space *sp) {
    cJSON *root = checked(cJSON_CreateObject());
    if (sp->study)
        checked(cJSON_AddStringToObject(root, "study", sp->study));
    else
        checked(cJSON_AddNullToObject(root, "study"));
    cJSON_AddItemToObject(root, "engine", engine_json(sp));

    cJSON *obj = checked(cJSON_AddObjectToObject(root, "objective"));
    checked(cJSON_AddStringToObject(obj, "metric", sp->objective));
    checked(cJSON_AddStringToObject(obj, "direction", sp->maximize ? "maximize" : "minimize"));

    cJSON *cons = checked(cJSON_AddArrayToObject(root, "constraints"));
    for (int i = 0; i < sp->n_constraints; i++) {
        const constraint_def *c = &sp->constraints[i];
        cJSON *o = checked(cJSON_CreateObject());
        checked(cJSON_AddStringToObject(o, "metric", c->metric));
        checked(cJSON_AddStringToObject(o, "op", op_text(c->op)));
        checked(cJSON_AddNumberToObject(o, "value", c->value));
        checked(cJSON_AddBoolToObject(o, "relative", c->relative));
        cJSON_AddItemToArray(cons, o);
    }

    if (sp->baseline) {
        cJSON *b = checked(cJSON_AddObjectToObject(root, "baseline"));
        for (int i = 0; i < sp->n_params; i++) {
            char buf[64];
            const param_def *p = &sp->params[i];
            const char *v = buf;
            if (p->kind == PARAM_INT)
                space_param_value(p, sp->baseline[i], buf, sizeof buf);
            else
                v = p->values[sp->baseline[i]];
            checked(cJSON_AddStringToObject(b, p->name, v));
        }
    } else {
        checked(cJSON_AddNullToObject(root, "baseline"));
    }

    cJSON *params = checked(cJSON_AddArrayToObject(root, "parameters"));
    for (int i = 0; i < sp->n_params; i++)
        cJSON_AddItemToArray(params, param_json(&sp->params[i]));

    cJSON *st = checked(cJSON_AddObjectToObject(root, "strategy"));
    checked(cJSON_AddStringToObject(st, "name", sp->strategy));
    /* A uint64 seed does not fit a JSON number exactly: keep it as decimal text. */
    char seed[32];
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)sp->seed);
    checked(cJSON_AddStringToObject(st, "seed", seed));

    cJSON *budget = checked(cJSON_AddObjectToObject(root, "budget"));
    checked(cJSON_AddNumberToObject(budget, "evaluations", (double)sp->max_evaluations));
    checked(cJSON_AddNumberToObject(budget, "wall_time_s", sp->max_wall_s));
    checked(cJSON_AddNumberToObject(root, "repeats", sp->repeats));

    cJSON *ver = checked(cJSON_AddObjectToObject(root, "verify"));
    checked(cJSON_AddNumberToObject(ver, "top", sp->verify_top));
    checked(cJSON_AddNumberToObject(ver, "repeats", sp->verify_repeats));
    checked(cJSON_AddNumberToObject(ver, "max_repeats", sp->verify_max_repeats));
    checked(cJSON_AddNumberToObject(ver, "max_candidates", sp->verify_max_candidates));
    checked(cJSON_AddNumberToObject(ver, "confidence", sp->verify_confidence));
    checked(cJSON_AddNumberToObject(ver, "precision", sp->verify_precision));
    checked(cJSON_AddStringToObject(ver, "prompt_set", sp->verify_prompt_set));
    checked(cJSON_AddNumberToObject(ver, "tolerance", sp->verify_tolerance));

    /* The optional sections bounds and allow_env appear only when the file has them: a
     * space without them has the hash it would have if the keys did not exist. */
    if (sp->n_bounds > 0) {
        cJSON *bounds = checked(cJSON_AddObjectToObject(root, "bounds"));
        const bounds_def **sorted = xmalloc((size_t)sp->n_bounds * sizeof *sorted);
        for (int i = 0; i < sp->n_bounds; i++)
            sorted[i] = &sp->bounds[i];
        qsort(sorted, (size_t)sp->n_bounds, sizeof *sorted, cmp_bounds);
        for (int i = 0; i < sp->n_bounds; i++) {
            const bounds_def *b = sorted[i];
            cJSON *pair = checked(cJSON_AddArrayToObject(bounds, b->metric));
            cJSON_AddItemToArray(
                pair, checked(isfinite(b->lo) ? cJSON_CreateNumber(b->lo) : cJSON_CreateNull()));
            cJSON_AddItemToArray(
                pair, checked(isfinite(b->hi) ? cJSON_CreateNumber(b->hi) : cJSON_CreateNull()));
        }
        free(sorted);
    }
    if (sp->n_allow_env > 0) {
        cJSON *allow = checked(cJSON_AddArrayToObject(root, "allow_env"));
        for (int i = 0; i < sp->n_allow_env; i++)
            cJSON_AddItemToArray(allow, checked(cJSON_CreateString(sp->allow_env[i])));
    }

    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) die("cJSON: out of memory printing the space");
    /* cJSON allocates with malloc by default, so the caller's free() matches. */
    return text;
}

uint64_t space_hash_text(const char *text) {
    uint64_t h = 14695981039346656037ULL; /* FNV-1a 64-bit offset basis */
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        h ^= *c;
        h *= 1099511628211ULL; /* FNV prime */
    }
    return h;
}
