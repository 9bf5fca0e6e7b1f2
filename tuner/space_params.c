/* space_params.c: the parameters section of a space file (the knobs and their lattices) and
 * the baseline point given in their levels, read into the space by space_load (space.c).
 *
 * These are the checks that make a knob a finite lattice every later stage can trust: an int
 * range on min + k*step within +-2^53, a log scale only above zero, categorical values that
 * keep point keys ("K=V,K=V") unambiguous, defaults and baseline values that are levels. The
 * baseline stands here because it is read through the knobs (a value is a level of a named
 * parameter, an unnamed one falls back on its default). */
#include "space_yaml.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

/* Int parameters are kept within +-2^53 so that every level is exact as a JSON number. */
#define INT_PARAM_LIMIT 9007199254740992L

static void load_int_param(loader *ld, param_def *p, const yaml_node_t *key_node,
                           const yaml_node_t *n, const char *path) {
    char key[256];
    static const char *const known[] = {"type", "min", "max", "step", "default", "log", NULL};
    ld_map_check(ld, n, path, known);
    yaml_node_t *vmin = ld_map_need(ld, n, key_node, path, "min");
    yaml_node_t *vmax = ld_map_need(ld, n, key_node, path, "max");
    yaml_node_t *v;
    ld_keyf(key, sizeof key, "%s.min", path);
    p->min = ld_long(ld, vmin, key);
    if (p->min < -INT_PARAM_LIMIT || p->min > INT_PARAM_LIMIT)
        ld_fail(ld, vmin, key, "out of range (|value| <= 2^53)");
    ld_keyf(key, sizeof key, "%s.max", path);
    p->max = ld_long(ld, vmax, key);
    if (p->max < -INT_PARAM_LIMIT || p->max > INT_PARAM_LIMIT)
        ld_fail(ld, vmax, key, "out of range (|value| <= 2^53)");
    if (p->min > p->max) ld_fail(ld, vmax, key, "empty range: min %ld > max %ld", p->min, p->max);
    p->step = 1;
    if ((v = ld_map_get(ld, n, "step", NULL))) {
        ld_keyf(key, sizeof key, "%s.step", path);
        p->step = ld_long(ld, v, key);
        if (p->step <= 0) ld_fail(ld, v, key, "step must be > 0, got %ld", p->step);
    }
    if ((p->max - p->min) % p->step != 0) {
        ld_keyf(key, sizeof key, "%s.max", path);
        ld_fail(ld, vmax, key, "max %ld is not on the lattice min + k*step (min %ld, step %ld)",
                p->max, p->min, p->step);
    }
    long levels = (p->max - p->min) / p->step + 1;
    if (levels > INT_MAX) ld_fail(ld, n, path, "%ld levels is too many", levels);
    p->n_levels = (int)levels;
    if ((v = ld_map_get(ld, n, "log", NULL))) {
        ld_keyf(key, sizeof key, "%s.log", path);
        p->log_scale = ld_bool(ld, v, key);
        if (p->log_scale && p->min <= 0)
            ld_fail(ld, v, key, "a log scale needs min > 0 (min is %ld)", p->min);
    }
    if ((v = ld_map_get(ld, n, "default", NULL))) {
        ld_keyf(key, sizeof key, "%s.default", path);
        long d = ld_long(ld, v, key);
        if (d < p->min || d > p->max)
            ld_fail(ld, v, key, "default %ld is outside [%ld, %ld]", d, p->min, p->max);
        if ((d - p->min) % p->step != 0)
            ld_fail(ld, v, key,
                    "default %ld is not on the lattice min + k*step (min %ld, step %ld)", d, p->min,
                    p->step);
        p->default_level = (int)((d - p->min) / p->step);
    }
}

static void load_categorical_param(loader *ld, param_def *p, const yaml_node_t *key_node,
                                   const yaml_node_t *n, const char *path) {
    char key[256];
    static const char *const known[] = {"type", "values", "default", NULL};
    ld_map_check(ld, n, path, known);
    yaml_node_t *vals = ld_map_need(ld, n, key_node, path, "values");
    ld_keyf(key, sizeof key, "%s.values", path);
    ld_expect(ld, vals, key, YAML_SEQUENCE_NODE, "a list of values");
    int count = (int)(vals->data.sequence.items.top - vals->data.sequence.items.start);
    if (count == 0) ld_fail(ld, vals, key, "empty list of values");
    p->values = xcalloc((size_t)count, sizeof *p->values);
    for (int i = 0; i < count; i++) {
        yaml_node_t *item = ld_node(ld, vals->data.sequence.items.start[i]);
        ld_keyf(key, sizeof key, "%s.values[%d]", path, i);
        const char *s = ld_string(ld, item, key);
        /* Values appear in point keys "K=V,K=V": keep those unambiguous. */
        for (const char *c = s; *c; c++)
            if (*c == ',' || *c == '=' || iscntrl((unsigned char)*c))
                ld_fail(ld, item, key, "value '%s' may not contain ',', '=' or control characters",
                        s);
        for (int j = 0; j < p->n_levels; j++)
            if (!strcmp(p->values[j], s)) ld_fail(ld, item, key, "duplicate value '%s'", s);
        p->values[p->n_levels++] = xstrdup(s);
    }
    yaml_node_t *v;
    if ((v = ld_map_get(ld, n, "default", NULL))) {
        ld_keyf(key, sizeof key, "%s.default", path);
        const char *d = ld_string(ld, v, key);
        p->default_level = space_param_find(p, d);
        if (p->default_level < 0) ld_fail(ld, v, key, "default '%s' is not one of the values", d);
    }
}

void space_load_parameters(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    ld_expect(ld, n, "parameters", YAML_MAPPING_NODE, "a map {NAME: {type: ...}}");
    if (ld_map_size(n) == 0) ld_fail(ld, n, "parameters", "no parameters given");
    ld_map_check(ld, n, "parameters", NULL); /* also rejects duplicate parameter names */
    sp->params = xcalloc((size_t)ld_map_size(n), sizeof *sp->params);
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = ld_node(ld, pr->key), *v = ld_node(ld, pr->value);
        char path[256], key[256];
        ld_keyf(path, sizeof path, "parameters.%s", ld_text(k));
        if (!ld_is_identifier(ld_text(k)))
            ld_fail(ld, k, path, "not a valid environment variable name");
        space_check_env_name(ld, k, path, ld_text(k));
        param_def *p = &sp->params[sp->n_params++];
        p->name = xstrdup(ld_text(k));
        p->default_level = -1;
        p->line = ld_line(k);
        ld_expect(ld, v, path, YAML_MAPPING_NODE, "a map {type: int|categorical, ...}");
        yaml_node_t *t = ld_map_get(ld, v, "type", NULL);
        ld_keyf(key, sizeof key, "%s.type", path);
        if (!t) ld_fail(ld, k, key, "missing (required: int or categorical)");
        const char *type = ld_string(ld, t, key);
        if (!strcmp(type, "int")) {
            p->kind = PARAM_INT;
            load_int_param(ld, p, k, v, path);
        } else if (!strcmp(type, "categorical")) {
            p->kind = PARAM_CATEGORICAL;
            load_categorical_param(ld, p, k, v, path);
        } else {
            ld_fail(ld, t, key, "expected int or categorical, got '%s'", type);
        }
    }
}

/* ---------------------------------------------------------------- baseline */

static int param_index(const space *sp, const char *name) {
    for (int i = 0; i < sp->n_params; i++)
        if (!strcmp(sp->params[i].name, name)) return i;
    return -1;
}

void space_load_baseline(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n) {
    space *sp = ld->sp;
    ld_expect(ld, n, "baseline", YAML_MAPPING_NODE, "a map {PARAMETER: value}");
    ld_map_check(ld, n, "baseline", NULL);
    sp->baseline = xcalloc((size_t)sp->n_params, sizeof *sp->baseline);
    for (int i = 0; i < sp->n_params; i++)
        sp->baseline[i] = -1;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = ld_node(ld, pr->key), *v = ld_node(ld, pr->value);
        char key[256];
        ld_keyf(key, sizeof key, "baseline.%s", ld_text(k));
        int i = param_index(sp, ld_text(k));
        if (i < 0) ld_fail(ld, k, key, "unknown parameter '%s'", ld_text(k));
        const char *val = ld_string(ld, v, key);
        sp->baseline[i] = space_param_find(&sp->params[i], val);
        if (sp->baseline[i] < 0)
            ld_fail(ld, v, key, "value '%s' is not a level of parameter %s", val,
                    sp->params[i].name);
    }
    for (int i = 0; i < sp->n_params; i++) {
        if (sp->baseline[i] >= 0) continue;
        if (sp->params[i].default_level < 0)
            ld_fail(ld, key_node, "baseline",
                    "parameter %s is not named and has no default (line %d) to fall back on",
                    sp->params[i].name, sp->params[i].line);
        sp->baseline[i] = sp->params[i].default_level;
    }
}
