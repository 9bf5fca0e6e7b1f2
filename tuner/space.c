/* space.c: load and validate a search-space file (format: the comment at the top of space.h).
 *
 * The file is parsed with libyaml's document API, which keeps the start line of every node,
 * so each error can name the line of the offending key or value. Validation is strict and
 * happens here, once: everything downstream (strategies, runner, journal) may trust a loaded
 * space. Sections are read in dependency order, not file order (parameters before the
 * baseline, the baseline before the constraints), so the keys may appear in any order.
 *
 * Error handling: the first problem ends the load. ld_fail() formats the message into the
 * caller's buffer and longjmps back to space_load, which frees the partly built space; every
 * allocation is therefore attached to the space (or the YAML document) as soon as it is made,
 * and temporaries live in fixed stack buffers.
 *
 * This file holds the whole-file walk (load_root, space_load, space_free) and the sections
 * that say what to optimise and how to search: objective, constraints, bounds, strategy,
 * budget, repeats, verify, allow_env, with the environment-name rules they share. The
 * other sections and helpers live in their own files: the engine section in space_engine.c,
 * the parameters and the baseline in space_params.c, the Slurm launcher in space_slurm.c,
 * the typed node access (ld_*) in space_yaml.c, the lattice helpers in space_lattice.c, the
 * canonical JSON in space_json.c. */
#include "space.h"
#include "input.h"
#include "slurm.h"
#include "space_yaml.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* GSL's Sobol generator supports at most this many dimensions. */
#define SOBOL_MAX_DIM 40

/* ---------------------------------------------------------------- names */

bool space_env_reserved(const char *name) {
    return !strcmp(name, "TUNER_RESULT") || !strcmp(name, "TUNER_TRIAL") ||
           !strcmp(name, "TUNER_PROMPT_SET");
}

bool space_env_risky(const char *name) {
    static const char *const exact[] = {
        "PATH",       "IFS",     "ENV",     "BASH_ENV",    "SHELLOPTS",
        "BASHOPTS",   "PS4",     "CDPATH",  "GLOBIGNORE",  "PROMPT_COMMAND",
        "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", NULL};
    for (int i = 0; exact[i]; i++)
        if (!strcmp(name, exact[i])) return true;
    return !strncmp(name, "LD_", 3) || !strncmp(name, "BASH_FUNC_", 10);
}

const char *space_study_name_problem(const char *s) {
    if (!*s) return "a study name may not be empty";
    if (strlen(s) > 100) return "a study name has at most 100 characters";
    if (*s == '-' || *s == '.') return "a study name may not start with '-' or '.'";
    for (const char *c = s; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
            return "a study name is made of letters, digits, '.', '_' and '-'";
    return NULL;
}

static bool env_allowed(const space *sp, const char *name) {
    for (int i = 0; i < sp->n_allow_env; i++)
        if (!strcmp(sp->allow_env[i], name)) return true;
    return false;
}

void space_check_env_name(loader *ld, const yaml_node_t *at, const char *key, const char *name) {
    if (space_env_reserved(name))
        ld_fail(ld, at, key, "%s is set by the tuner for every run and cannot be used here", name);
    if (space_env_risky(name) && !env_allowed(ld->sp, name))
        ld_fail(ld, at, key,
                "%s is acted on by the dynamic loader or shells; list it in allow_env to use "
                "it anyway",
                name);
}

void space_metric_bounds(const space *sp, const char *metric, metric_bound *b) {
    for (int i = 0; i < sp->n_bounds; i++)
        if (!strcmp(sp->bounds[i].metric, metric)) {
            *b = (metric_bound){sp->bounds[i].lo, sp->bounds[i].hi, false, true};
            return;
        }
    size_t n = strlen(metric);
    bool positive = !strcmp(metric, "tps") || !strcmp(metric, "ppl") ||
                    (n > 4 && (!strcmp(metric + n - 4, "_tps") || !strcmp(metric + n - 4, "_ppl")));
    for (int c = 0; c < sp->n_constraints && !positive; c++)
        positive = sp->constraints[c].relative && !strcmp(sp->constraints[c].metric, metric);
    *b = (metric_bound){positive ? 0 : -INFINITY, INFINITY, positive, false};
}

static void load_bounds(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    ld_expect(ld, n, "bounds", YAML_MAPPING_NODE, "a map {metric: [lo, hi]}");
    ld_map_check(ld, n, "bounds", NULL);
    sp->bounds = xcalloc((size_t)ld_map_size(n) + 1, sizeof *sp->bounds);
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = ld_node(ld, pr->key), *v = ld_node(ld, pr->value);
        char key[256], item[280];
        ld_keyf(key, sizeof key, "bounds.%s", ld_text(k));
        if (!ld_is_identifier(ld_text(k)))
            ld_fail(ld, k, key, "'%s' is not a metric name (letters, digits, '_')", ld_text(k));
        ld_expect(ld, v, key, YAML_SEQUENCE_NODE, "a list [lo, hi] (null: no bound)");
        if (v->data.sequence.items.top - v->data.sequence.items.start != 2)
            ld_fail(ld, v, key, "expected two numbers [lo, hi] (null: no bound on that side)");
        double b[2];
        for (int i = 0; i < 2; i++) {
            yaml_node_t *x = ld_node(ld, v->data.sequence.items.start[i]);
            ld_keyf(item, sizeof item, "%s[%d]", key, i);
            b[i] = ld_is_null(x) ? (i == 0 ? -INFINITY : INFINITY) : ld_double(ld, x, item);
        }
        if (b[0] > b[1]) ld_fail(ld, v, key, "empty bounds: lo %g > hi %g", b[0], b[1]);
        bounds_def *d = &sp->bounds[sp->n_bounds++];
        d->metric = xstrdup(ld_text(k));
        d->lo = b[0];
        d->hi = b[1];
        d->line = ld_line(k);
    }
}

static void load_allow_env(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    ld_expect(ld, n, "allow_env", YAML_SEQUENCE_NODE, "a list of environment variable names");
    int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    sp->allow_env = xcalloc((size_t)count + 1, sizeof *sp->allow_env);
    for (int i = 0; i < count; i++) {
        yaml_node_t *item = ld_node(ld, n->data.sequence.items.start[i]);
        char key[64];
        ld_keyf(key, sizeof key, "allow_env[%d]", i);
        const char *name = ld_string(ld, item, key);
        if (!ld_is_identifier(name))
            ld_fail(ld, item, key, "'%s' is not a valid environment variable name", name);
        if (space_env_reserved(name))
            ld_fail(ld, item, key, "%s is set by the tuner for every run and cannot be allowed",
                    name);
        if (env_allowed(sp, name)) ld_fail(ld, item, key, "%s is listed twice", name);
        sp->allow_env[sp->n_allow_env++] = xstrdup(name);
    }
}

/* ---------------------------------------------------------------- objective, strategy, budget */

static void load_objective(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const known[] = {"metric", "direction", NULL};
    ld_expect(ld, n, "objective", YAML_MAPPING_NODE, "a map {metric: M, direction: D}");
    ld_map_check(ld, n, "objective", known);
    yaml_node_t *v = ld_map_need(ld, n, key_node, "objective", "metric");
    const char *metric = ld_string(ld, v, "objective.metric");
    if (!ld_is_identifier(metric))
        ld_fail(ld, v, "objective.metric", "'%s' is not a metric name (letters, digits, '_')",
                metric);
    sp->objective = xstrdup(metric);
    sp->maximize = true;
    if ((v = ld_map_get(ld, n, "direction", NULL))) {
        const char *d = ld_string(ld, v, "objective.direction");
        if (!strcmp(d, "maximize") || !strcmp(d, "maximise") || !strcmp(d, "max"))
            sp->maximize = true;
        else if (!strcmp(d, "minimize") || !strcmp(d, "minimise") || !strcmp(d, "min"))
            sp->maximize = false;
        else
            ld_fail(ld, v, "objective.direction", "expected maximize or minimize, got '%s'", d);
    }
}

const char *const space_strategy_names[] = {"grid", "sobol", "bayes", NULL};

bool space_strategy_known(const char *name) {
    for (int i = 0; space_strategy_names[i]; i++)
        if (!strcmp(space_strategy_names[i], name)) return true;
    return false;
}

static void load_strategy(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    const yaml_node_t *name_node = n;
    if (n->type == YAML_MAPPING_NODE) {
        static const char *const known[] = {"name", "seed", NULL};
        ld_map_check(ld, n, "strategy", known);
        yaml_node_t *v = ld_map_get(ld, n, "seed", NULL);
        if (v) {
            long seed = ld_long(ld, v, "strategy.seed");
            if (seed < 0) ld_fail(ld, v, "strategy.seed", "must be >= 0, got %ld", seed);
            sp->seed = (uint64_t)seed;
        }
        name_node = ld_map_get(ld, n, "name", NULL);
        if (!name_node) ld_fail(ld, n, "strategy.name", "missing (required)");
    } else {
        ld_expect(ld, n, "strategy", YAML_SCALAR_NODE, "a name or a map {name: N, seed: S}");
    }
    const char *key = n == name_node ? "strategy" : "strategy.name";
    const char *name = ld_string(ld, name_node, key);
    if (!space_strategy_known(name))
        ld_fail(ld, name_node, key, "unknown strategy '%s' (grid, sobol or bayes)", name);
    free(sp->strategy);
    sp->strategy = xstrdup(name);
}

static void load_budget(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const known[] = {"evaluations", "wall_time", NULL};
    ld_expect(ld, n, "budget", YAML_MAPPING_NODE, "a map {evaluations: N, wall_time: T}");
    ld_map_check(ld, n, "budget", known);
    yaml_node_t *v;
    if ((v = ld_map_get(ld, n, "evaluations", NULL))) {
        sp->max_evaluations = ld_long(ld, v, "budget.evaluations");
        if (sp->max_evaluations < 1)
            ld_fail(ld, v, "budget.evaluations", "must be >= 1, got %ld", sp->max_evaluations);
    }
    if ((v = ld_map_get(ld, n, "wall_time", NULL)))
        sp->max_wall_s = ld_duration(ld, v, "budget.wall_time");
}

/* The paired comparison with the baseline (verify.h): interval confidence, the half-width
 * that ends a candidate's pairs, the cap on its pairs, and how far down the ranking to go. */
static void load_verify_pairs(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    yaml_node_t *v, *mr = ld_map_get(ld, n, "max_repeats", NULL);
    if (mr) {
        long r = ld_long(ld, mr, "verify.max_repeats");
        if (r < 1 || r > 1000) ld_fail(ld, mr, "verify.max_repeats", "must be 1..1000, got %ld", r);
        sp->verify_max_repeats = (int)r;
    } else if (sp->verify_max_repeats < sp->verify_repeats) {
        sp->verify_max_repeats = sp->verify_repeats; /* the default cap follows the minimum */
    }
    if (sp->verify_max_repeats < sp->verify_repeats)
        ld_fail(ld, mr ? mr : n, "verify.max_repeats",
                "must be >= verify.repeats (%d), got %d: the cap on a candidate's pairs cannot "
                "be below their minimum",
                sp->verify_repeats, sp->verify_max_repeats);
    if ((v = ld_map_get(ld, n, "confidence", NULL))) {
        sp->verify_confidence = ld_double(ld, v, "verify.confidence");
        if (!(sp->verify_confidence > 0 && sp->verify_confidence < 1))
            ld_fail(ld, v, "verify.confidence", "must be in (0, 1), e.g. 0.95, got %g",
                    sp->verify_confidence);
    }
    if ((v = ld_map_get(ld, n, "precision", NULL))) {
        sp->verify_precision = ld_double(ld, v, "verify.precision");
        if (!(sp->verify_precision > 0 && sp->verify_precision < 1))
            ld_fail(ld, v, "verify.precision",
                    "must be in (0, 1) (the half-width of the speed-up's interval, e.g. 0.02), "
                    "got %g",
                    sp->verify_precision);
    }
    sp->verify_max_candidates = 3 * sp->verify_top;
    if ((v = ld_map_get(ld, n, "max_candidates", NULL))) {
        long c = ld_long(ld, v, "verify.max_candidates");
        if (c < sp->verify_top || c > 100000)
            ld_fail(ld, v, "verify.max_candidates", "must be verify.top (%d) .. 100000, got %ld",
                    sp->verify_top, c);
        sp->verify_max_candidates = (int)c;
    }
}

static void load_verify(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const known[] = {"top",        "repeats",   "max_repeats",
                                        "confidence", "precision", "max_candidates",
                                        "prompt_set", "tolerance", NULL};
    ld_expect(ld, n, "verify", YAML_MAPPING_NODE, "a map");
    ld_map_check(ld, n, "verify", known);
    yaml_node_t *v;
    if ((v = ld_map_get(ld, n, "top", NULL))) {
        long top = ld_long(ld, v, "verify.top");
        if (top < 1 || top > 1000) ld_fail(ld, v, "verify.top", "must be 1..1000, got %ld", top);
        sp->verify_top = (int)top;
    }
    if ((v = ld_map_get(ld, n, "repeats", NULL))) {
        long r = ld_long(ld, v, "verify.repeats");
        if (r < 1 || r > 1000) ld_fail(ld, v, "verify.repeats", "must be 1..1000, got %ld", r);
        sp->verify_repeats = (int)r;
    }
    if ((v = ld_map_get(ld, n, "prompt_set", NULL))) {
        const char *set = ld_string(ld, v, "verify.prompt_set");
        if (strcmp(set, "tune") != 0 && strcmp(set, "holdout") != 0)
            ld_fail(ld, v, "verify.prompt_set", "expected tune or holdout, got '%s'", set);
        free(sp->verify_prompt_set);
        sp->verify_prompt_set = xstrdup(set);
    }
    if ((v = ld_map_get(ld, n, "tolerance", NULL))) {
        sp->verify_tolerance = ld_double(ld, v, "verify.tolerance");
        if (sp->verify_tolerance < 0 || sp->verify_tolerance >= 1)
            ld_fail(ld, v, "verify.tolerance", "must be in [0, 1), got %g", sp->verify_tolerance);
    }
    load_verify_pairs(ld, n);
}

/* ---------------------------------------------------------------- constraints */

/* Parse "metric op rhs" (rhs: a number, "baseline", or "F * baseline"). Returns NULL on
 * success or a description of what is wrong. */
static const char *parse_constraint(const char *s, constraint_def *c, char *metric, size_t mlen) {
    while (isspace((unsigned char)*s))
        s++;
    const char *m = s;
    while (isalnum((unsigned char)*s) || *s == '_')
        s++;
    if (s == m || isdigit((unsigned char)*m))
        return "expected 'metric op bound', e.g. 'ppl <= 2.42'";
    if ((size_t)(s - m) >= mlen) return "metric name too long";
    memcpy(metric, m, (size_t)(s - m));
    metric[s - m] = '\0';
    while (isspace((unsigned char)*s))
        s++;
    char op[4] = {0};
    for (int i = 0; i < 3 && *s && strchr("<>=!", *s); i++)
        op[i] = *s++;
    if (!op[0]) return "expected an operator (<=, <, >=, >) after the metric";
    if (!strcmp(op, "<="))
        c->op = OP_LE;
    else if (!strcmp(op, "<"))
        c->op = OP_LT;
    else if (!strcmp(op, ">="))
        c->op = OP_GE;
    else if (!strcmp(op, ">"))
        c->op = OP_GT;
    else
        return "unknown operator (use <=, <, >= or >)";
    while (isspace((unsigned char)*s))
        s++;
    if (!strncmp(s, "baseline", 8)) {
        c->relative = true;
        c->value = 1;
        s += 8;
    } else {
        char *end;
        errno = 0;
        c->value = strtod(s, &end);
        if (end == s || errno == ERANGE || !isfinite(c->value))
            return "the bound must be a number, 'baseline' or 'F * baseline'";
        s = end;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '*') {
            s++;
            while (isspace((unsigned char)*s))
                s++;
            if (strncmp(s, "baseline", 8) != 0) return "expected 'baseline' after '*'";
            c->relative = true;
            s += 8;
        }
    }
    while (isspace((unsigned char)*s))
        s++;
    if (*s) return "unexpected text after the bound";
    return NULL;
}

/* Do two bounds on the same quantity leave an empty interval? (a: op a_v, b: op b_v) */
static bool bounds_conflict(cmp_op a_op, double a_v, cmp_op b_op, double b_v) {
    bool a_upper = a_op == OP_LE || a_op == OP_LT, b_upper = b_op == OP_LE || b_op == OP_LT;
    if (a_upper == b_upper) return false;
    double hi = a_upper ? a_v : b_v, lo = a_upper ? b_v : a_v;
    bool strict = a_op == OP_LT || a_op == OP_GT || b_op == OP_LT || b_op == OP_GT;
    return lo > hi || (lo == hi && strict);
}

static void load_constraints(loader *ld, const yaml_node_t *n, bool has_baseline) {
    space *sp = ld->sp;
    ld_expect(ld, n, "constraints", YAML_SEQUENCE_NODE, "a list of 'metric op bound'");
    int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    sp->constraints = xcalloc((size_t)count + 1, sizeof *sp->constraints);
    for (int i = 0; i < count; i++) {
        yaml_node_t *item = ld_node(ld, n->data.sequence.items.start[i]);
        char key[64], metric[128];
        ld_keyf(key, sizeof key, "constraints[%d]", i);
        const char *text = ld_string(ld, item, key);
        constraint_def *c = &sp->constraints[sp->n_constraints];
        const char *why = parse_constraint(text, c, metric, sizeof metric);
        if (why) ld_fail(ld, item, key, "'%s': %s", text, why);
        c->metric = xstrdup(metric);
        c->text = xstrdup(text);
        c->line = ld_line(item);
        sp->n_constraints++;
        if (c->relative && c->value <= 0)
            ld_fail(ld, item, key, "'%s': the baseline factor must be > 0", text);
        if (c->relative && !has_baseline)
            ld_fail(ld, item, key,
                    "'%s' is relative to a baseline, but the space has no baseline point", text);
        /* Relative bounds are compared as factors: metrics with a factor are positive. */
        for (int j = 0; j < sp->n_constraints - 1; j++) {
            const constraint_def *o = &sp->constraints[j];
            if (strcmp(o->metric, c->metric) != 0 || o->relative != c->relative) continue;
            if (bounds_conflict(o->op, o->value, c->op, c->value))
                ld_fail(ld, item, key, "'%s' cannot hold together with '%s' (line %d)", text,
                        o->text, o->line);
        }
    }
}

/* ---------------------------------------------------------------- the whole file */

static void load_root(loader *ld, const yaml_node_t *root) {
    space *sp = ld->sp;
    static const char *const known[] = {
        "study",  "engine",  "objective", "constraints", "baseline",  "parameters", "strategy",
        "budget", "repeats", "verify",    "bounds",      "allow_env", NULL};
    if (root->type != YAML_MAPPING_NODE)
        ld_fail(ld, root, NULL, "a space file is a map of sections, got %s", ld_kind(root));
    ld_map_check(ld, root, NULL, known);
    yaml_node_t *k, *v;

    sp->strategy = xstrdup("sobol");
    sp->repeats = 1;
    sp->verify_top = 3;
    sp->verify_repeats = 3;
    sp->verify_max_repeats = 10;
    sp->verify_max_candidates = 9;
    sp->verify_confidence = 0.95;
    sp->verify_precision = 0.02;
    sp->verify_prompt_set = xstrdup("holdout");
    sp->verify_tolerance = 0.05;

    if ((v = ld_map_get(ld, root, "study", NULL))) {
        const char *s = ld_string(ld, v, "study");
        const char *why = space_study_name_problem(s);
        if (why) ld_fail(ld, v, "study", "'%s' is not a folder name: %s", s, why);
        sp->study = xstrdup(s);
    }
    if ((v = ld_map_get(ld, root, "allow_env", NULL))) load_allow_env(ld, v);
    v = ld_map_get(ld, root, "engine", &k);
    if (!v) ld_fail(ld, root, "engine", "missing (required)");
    space_load_engine(ld, k, v);
    v = ld_map_get(ld, root, "objective", &k);
    if (!v) ld_fail(ld, root, "objective", "missing (required)");
    load_objective(ld, k, v);
    v = ld_map_get(ld, root, "parameters", &k);
    if (!v) ld_fail(ld, root, "parameters", "missing (required)");
    space_load_parameters(ld, v);
    if ((v = ld_map_get(ld, root, "baseline", &k))) space_load_baseline(ld, k, v);
    if ((v = ld_map_get(ld, root, "constraints", &k)))
        load_constraints(ld, v, sp->baseline != NULL);
    if ((v = ld_map_get(ld, root, "strategy", &k))) load_strategy(ld, v);
    if (!strcmp(sp->strategy, "sobol") && sp->n_params > SOBOL_MAX_DIM)
        ld_fail(ld, v ? v : root, "strategy",
                "sobol supports at most %d parameters, the space has %d (use grid or bayes)",
                SOBOL_MAX_DIM, sp->n_params);
    if ((v = ld_map_get(ld, root, "budget", NULL))) load_budget(ld, v);
    if ((v = ld_map_get(ld, root, "repeats", NULL))) {
        long r = ld_long(ld, v, "repeats");
        if (r < 1 || r > 1000) ld_fail(ld, v, "repeats", "must be 1..1000, got %ld", r);
        sp->repeats = (int)r;
    }
    if ((v = ld_map_get(ld, root, "verify", NULL))) load_verify(ld, v);
    if ((v = ld_map_get(ld, root, "bounds", NULL))) load_bounds(ld, v);

    /* With regex results every metric the study needs must have a pattern. */
    if (sp->n_regex > 0) {
        yaml_node_t *engine = ld_map_get(ld, root, "engine", NULL);
        yaml_node_t *result = ld_map_get(ld, engine, "result", NULL);
        yaml_node_t *at = NULL;
        ld_map_get(ld, result, "regex", &at);
        for (int i = -1; i < sp->n_constraints; i++) {
            const char *m = i < 0 ? sp->objective : sp->constraints[i].metric;
            bool found = false;
            for (int j = 0; j < sp->n_regex && !found; j++)
                found = !strcmp(sp->regex[j].metric, m);
            if (!found)
                ld_fail(ld, at, "engine.result.regex",
                        "no pattern for metric '%s' (used by the %s)", m,
                        i < 0 ? "objective" : "constraints");
        }
    }
}

static char *dir_of(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return xstrdup(".");
    if (slash == path) return xstrdup("/");
    char *d = xmalloc((size_t)(slash - path) + 1);
    memcpy(d, path, (size_t)(slash - path));
    d[slash - path] = '\0';
    return d;
}

space *space_load(const char *path, char *err, size_t errlen) {
    size_t len;
    char *text = input_read(path, INPUT_MAX_SPACE, &len, err, errlen);
    if (!text) return NULL;

    loader *ld = xcalloc(1, sizeof *ld);
    ld->path = path;
    ld->err = err;
    ld->errlen = errlen;
    ld->sp = xcalloc(1, sizeof *ld->sp);
    ld->sp->path = xstrdup(path);
    ld->sp->dir = dir_of(path);

    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) die("libyaml: cannot initialise a parser");
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    bool have_doc = false;
    space *result = NULL;
    if (!yaml_parser_load(&parser, &ld->doc)) {
        snprintf(err, errlen, "%s:%d: YAML syntax error: %s%s%s", path,
                 (int)parser.problem_mark.line + 1, parser.problem ? parser.problem : "unknown",
                 parser.context ? " " : "", parser.context ? parser.context : "");
        goto done;
    }
    have_doc = true;
    yaml_node_t *root = yaml_document_get_root_node(&ld->doc);
    if (!root) {
        snprintf(err, errlen,
                 "%s:1: the file is empty (a space needs engine, objective and "
                 "parameters)",
                 path);
        goto done;
    }
    yaml_document_t extra;
    if (!yaml_parser_load(&parser, &extra)) {
        snprintf(err, errlen, "%s:%d: YAML syntax error: %s", path,
                 (int)parser.problem_mark.line + 1, parser.problem ? parser.problem : "unknown");
        goto done;
    }
    bool more = yaml_document_get_root_node(&extra) != NULL;
    int extra_line = more ? ld_line(yaml_document_get_root_node(&extra)) : 0;
    yaml_document_delete(&extra);
    if (more) {
        snprintf(err, errlen, "%s:%d: a space file holds one YAML document, found another", path,
                 extra_line);
        goto done;
    }
    if (setjmp(ld->on_error) == 0) {
        load_root(ld, root);
        result = ld->sp;
        ld->sp = NULL;
        char *json = space_to_json_text(result);
        result->hash = space_hash_text(json);
        free(json);
    }
done:
    if (have_doc) yaml_document_delete(&ld->doc);
    yaml_parser_delete(&parser);
    space_free(ld->sp);
    free(ld);
    free(text);
    return result;
}

void space_free(space *sp) {
    if (!sp) return;
    free(sp->path);
    free(sp->dir);
    free(sp->study);
    for (int i = 0; i < sp->argc; i++)
        free(sp->argv[i]);
    free(sp->argv);
    free(sp->workdir);
    for (int i = 0; i < sp->n_env; i++) {
        free(sp->env[i].key);
        free(sp->env[i].value);
    }
    free(sp->env);
    free(sp->launcher);
    slurm_launcher_free(sp->slurm);
    for (int i = 0; i < sp->n_regex; i++) {
        free(sp->regex[i].metric);
        free(sp->regex[i].pattern);
        regfree(&sp->regex[i].re);
    }
    free(sp->regex);
    free(sp->objective);
    for (int i = 0; i < sp->n_constraints; i++) {
        free(sp->constraints[i].metric);
        free(sp->constraints[i].text);
    }
    free(sp->constraints);
    free(sp->baseline);
    for (int i = 0; i < sp->n_params; i++) {
        param_def *p = &sp->params[i];
        free(p->name);
        for (int j = 0; p->values && j < p->n_levels; j++)
            free(p->values[j]);
        free(p->values);
    }
    free(sp->params);
    free(sp->strategy);
    free(sp->verify_prompt_set);
    for (int i = 0; i < sp->n_bounds; i++)
        free(sp->bounds[i].metric);
    free(sp->bounds);
    for (int i = 0; i < sp->n_allow_env; i++)
        free(sp->allow_env[i]);
    free(sp->allow_env);
    free(sp);
}
