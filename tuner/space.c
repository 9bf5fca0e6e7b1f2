/* space.c: load and validate a search-space file (format: the comment at the top of space.h).
 *
 * The file is parsed with libyaml's document API, which keeps the start line of every node,
 * so each error can name the line of the offending key or value. Validation is strict and
 * happens here, once: everything downstream (strategies, runner, journal) may trust a loaded
 * space. Sections are read in dependency order, not file order (parameters before the
 * baseline, the baseline before the constraints), so the keys may appear in any order.
 *
 * Error handling: the first problem ends the load. fail() formats the message into the
 * caller's buffer and longjmps back to space_load, which frees the partly built space; every
 * allocation is therefore attached to the space (or the YAML document) as soon as it is made,
 * and temporaries live in fixed stack buffers. Lattice helpers live in space_lattice.c and the
 * canonical JSON form in space_json.c. */
#include "space.h"
#include "strategy.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Int parameters are kept within +-2^53 so that every level is exact as a JSON number. */
#define INT_PARAM_LIMIT 9007199254740992L
/* GSL's Sobol generator supports at most this many dimensions. */
#define SOBOL_MAX_DIM 40

typedef struct {
    const char *path;
    yaml_document_t doc;
    space *sp;
    char *err; /* [errlen] the caller's message buffer */
    size_t errlen;
    jmp_buf on_error;
} loader;

/* ---------------------------------------------------------------- errors */

static int node_line(const yaml_node_t *n) {
    return n ? (int)n->start_mark.line + 1 : 1;
}

/* "FILE:LINE: key 'KEY': problem", then back to space_load. */
NORETURN PRINTF_LIKE(4, 5) static void fail(loader *ld, const yaml_node_t *at, const char *key,
                                            const char *fmt, ...) {
    int off = key ? snprintf(ld->err, ld->errlen, "%s:%d: key '%s': ", ld->path, node_line(at), key)
                  : snprintf(ld->err, ld->errlen, "%s:%d: ", ld->path, node_line(at));
    if (off >= 0 && (size_t)off < ld->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ld->err + off, ld->errlen - (size_t)off, fmt, ap);
        va_end(ap);
    }
    longjmp(ld->on_error, 1);
}

/* Build a key path such as "parameters.X.min" for messages (truncated if absurdly long). */
PRINTF_LIKE(3, 4) static void keyf(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- YAML node access */

static yaml_node_t *node_at(loader *ld, int index) {
    return yaml_document_get_node(&ld->doc, index);
}

static const char *node_kind(const yaml_node_t *n) {
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a map";
    default:
        return "nothing";
    }
}

static const char *scalar_text(const yaml_node_t *n) {
    return (const char *)n->data.scalar.value;
}

static bool scalar_is_plain(const yaml_node_t *n) {
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* A plain empty scalar, "~" or "null": YAML's null. No key of a space accepts it. */
static bool scalar_is_null(const yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE || !scalar_is_plain(n)) return false;
    const char *s = scalar_text(n);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static void expect_kind(loader *ld, const yaml_node_t *n, const char *key, yaml_node_type_t type,
                        const char *what) {
    if (n->type == YAML_SCALAR_NODE && scalar_is_null(n))
        fail(ld, n, key, "expected %s, got no value", what);
    if (n->type != type) fail(ld, n, key, "expected %s, got %s", what, node_kind(n));
}

/* Any non-null scalar, as a string (numbers and booleans keep their spelling). */
static const char *get_string(loader *ld, const yaml_node_t *n, const char *key) {
    expect_kind(ld, n, key, YAML_SCALAR_NODE, "a string");
    if (strlen(scalar_text(n)) != n->data.scalar.length)
        fail(ld, n, key, "contains a NUL character");
    return scalar_text(n);
}

static long get_long(loader *ld, const yaml_node_t *n, const char *key) {
    expect_kind(ld, n, key, YAML_SCALAR_NODE, "an integer");
    const char *s = scalar_text(n);
    if (!scalar_is_plain(n)) fail(ld, n, key, "expected an integer, got the string \"%s\"", s);
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || isspace((unsigned char)*s))
        fail(ld, n, key, "expected an integer, got '%s'", s);
    if (errno == ERANGE) fail(ld, n, key, "integer '%s' is out of range", s);
    return v;
}

static double get_double(loader *ld, const yaml_node_t *n, const char *key) {
    expect_kind(ld, n, key, YAML_SCALAR_NODE, "a number");
    const char *s = scalar_text(n);
    if (!scalar_is_plain(n)) fail(ld, n, key, "expected a number, got the string \"%s\"", s);
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || isspace((unsigned char)*s))
        fail(ld, n, key, "expected a number, got '%s'", s);
    if (errno == ERANGE || !isfinite(v)) fail(ld, n, key, "number '%s' is out of range", s);
    return v;
}

static bool get_bool(loader *ld, const yaml_node_t *n, const char *key) {
    expect_kind(ld, n, key, YAML_SCALAR_NODE, "true or false");
    const char *s = scalar_text(n);
    if (scalar_is_plain(n)) {
        if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return true;
        if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return false;
    }
    fail(ld, n, key, "expected true or false, got '%s'", s);
}

static double get_duration(loader *ld, const yaml_node_t *n, const char *key) {
    expect_kind(ld, n, key, YAML_SCALAR_NODE, "a duration");
    double s;
    if (!space_parse_duration(scalar_text(n), &s))
        fail(ld, n, key, "bad duration '%s' (use seconds, or e.g. 90s, 10m, 8h, 1h30m; > 0)",
             scalar_text(n));
    return s;
}

/* Names that become environment variables, metrics and map keys: [A-Za-z_][A-Za-z0-9_]*. */
static bool is_identifier(const char *s) {
    if (!(isalpha((unsigned char)*s) || *s == '_')) return false;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return false;
    return true;
}

/* The pairs of a mapping node, after checking that every key is a string, known (when known
 * is non-NULL, a NULL-terminated list) and not repeated. path names the map in messages. */
static void map_check(loader *ld, const yaml_node_t *map, const char *path,
                      const char *const *known) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node_at(ld, p->key);
        char key[256];
        if (k->type != YAML_SCALAR_NODE || scalar_is_null(k))
            fail(ld, k, path, "a key must be a name, got %s", node_kind(k));
        keyf(key, sizeof key, "%s%s%s", path ? path : "", path ? "." : "", scalar_text(k));
        if (known) {
            bool ok = false;
            for (const char *const *kn = known; *kn && !ok; kn++)
                ok = !strcmp(*kn, scalar_text(k));
            if (!ok) fail(ld, k, key, "unknown key");
        }
        for (yaml_node_pair_t *q = map->data.mapping.pairs.start; q < p; q++)
            if (!strcmp(scalar_text(node_at(ld, q->key)), scalar_text(k)))
                fail(ld, k, key, "duplicate key (first at line %d)",
                     node_line(node_at(ld, q->key)));
    }
}

/* The value under key in a (checked) mapping, or NULL; *key_node gets the key's node. */
static yaml_node_t *map_get(loader *ld, const yaml_node_t *map, const char *key,
                            yaml_node_t **key_node) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = node_at(ld, p->key);
        if (!strcmp(scalar_text(k), key)) {
            if (key_node) *key_node = k;
            return node_at(ld, p->value);
        }
    }
    return NULL;
}

static int map_size(const yaml_node_t *map) {
    return (int)(map->data.mapping.pairs.top - map->data.mapping.pairs.start);
}

/* The value under key, which must be there: a missing key is reported at the line of at. */
static yaml_node_t *map_need(loader *ld, const yaml_node_t *map, const yaml_node_t *at,
                             const char *path, const char *key) {
    yaml_node_t *v = map_get(ld, map, key, NULL);
    if (!v) {
        char full[256];
        keyf(full, sizeof full, "%s%s%s", path ? path : "", path ? "." : "", key);
        fail(ld, at, full, "missing (required)");
    }
    return v;
}

/* ---------------------------------------------------------------- durations */

int space_parse_duration(const char *s, double *seconds) {
    static const struct {
        char unit;
        double seconds;
    } units[] = {{'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};
    char *end;
    if (!*s || isspace((unsigned char)*s)) return 0;
    double plain = strtod(s, &end);
    if (end != s && !*end) { /* a bare number: seconds */
        if (!isfinite(plain) || plain <= 0) return 0;
        *seconds = plain;
        return 1;
    }
    double total = 0;
    size_t next_unit = 0; /* units must come in decreasing order, each at most once */
    while (*s) {
        if (!isdigit((unsigned char)*s) && *s != '.') return 0;
        double v = strtod(s, &end);
        if (end == s || !isfinite(v)) return 0;
        size_t u = next_unit;
        while (u < sizeof units / sizeof units[0] && units[u].unit != *end)
            u++;
        if (u == sizeof units / sizeof units[0]) return 0;
        total += v * units[u].seconds;
        next_unit = u + 1;
        s = end + 1;
    }
    if (!isfinite(total) || total <= 0) return 0;
    *seconds = total;
    return 1;
}

/* ---------------------------------------------------------------- engine */

static void add_regex(loader *ld, const yaml_node_t *key_node, const yaml_node_t *val) {
    space *sp = ld->sp;
    char key[256];
    keyf(key, sizeof key, "engine.result.regex.%s", scalar_text(key_node));
    if (!is_identifier(scalar_text(key_node)))
        fail(ld, key_node, key, "metric names are letters, digits and '_'");
    const char *pattern = get_string(ld, val, key);
    sp->regex = xrealloc(sp->regex, (size_t)(sp->n_regex + 1) * sizeof *sp->regex);
    metric_regex *r = &sp->regex[sp->n_regex];
    int rc = regcomp(&r->re, pattern, REG_EXTENDED);
    if (rc != 0) {
        char why[256];
        regerror(rc, &r->re, why, sizeof why); /* a failed regcomp holds nothing to free */
        fail(ld, val, key, "bad regular expression '%s': %s", pattern, why);
    }
    r->metric = xstrdup(scalar_text(key_node));
    r->pattern = xstrdup(pattern);
    sp->n_regex++; /* owned by the space from here on, including the compiled form */
    if (r->re.re_nsub < 1)
        fail(ld, val, key, "the pattern '%s' needs a capture group ( ) around the value", pattern);
}

static void load_result(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n) {
    if (n->type == YAML_SCALAR_NODE && !scalar_is_null(n)) {
        if (strcmp(scalar_text(n), "json") != 0)
            fail(ld, n, "engine.result", "expected 'json' or a map {regex: {metric: pattern}}");
        return;
    }
    expect_kind(ld, n, "engine.result", YAML_MAPPING_NODE, "'json' or a map {regex: ...}");
    static const char *const known[] = {"regex", NULL};
    map_check(ld, n, "engine.result", known);
    yaml_node_t *re = map_need(ld, n, key_node, "engine.result", "regex");
    expect_kind(ld, re, "engine.result.regex", YAML_MAPPING_NODE, "a map {metric: pattern}");
    if (map_size(re) == 0) fail(ld, re, "engine.result.regex", "no metric patterns given");
    map_check(ld, re, "engine.result.regex", NULL);
    for (yaml_node_pair_t *p = re->data.mapping.pairs.start; p < re->data.mapping.pairs.top; p++)
        add_regex(ld, node_at(ld, p->key), node_at(ld, p->value));
}

static void load_command(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    const char *key = "engine.command";
    if (n->type == YAML_SCALAR_NODE && !scalar_is_null(n)) {
        /* One string: split on whitespace, no shell quoting (use a list for that). */
        const char *s = get_string(ld, n, key);
        sp->argv = xcalloc(strlen(s) / 2 + 2, sizeof *sp->argv);
        for (;;) {
            while (isspace((unsigned char)*s))
                s++;
            if (!*s) break;
            const char *e = s;
            while (*e && !isspace((unsigned char)*e))
                e++;
            char *word = xmalloc((size_t)(e - s) + 1);
            memcpy(word, s, (size_t)(e - s));
            word[e - s] = '\0';
            sp->argv[sp->argc++] = word;
            s = e;
        }
    } else {
        expect_kind(ld, n, key, YAML_SEQUENCE_NODE, "a list of arguments or a string");
        int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
        sp->argv = xcalloc((size_t)count + 1, sizeof *sp->argv);
        for (int i = 0; i < count; i++) {
            char k[64];
            keyf(k, sizeof k, "engine.command[%d]", i);
            const char *arg = get_string(ld, node_at(ld, n->data.sequence.items.start[i]), k);
            sp->argv[sp->argc++] = xstrdup(arg);
        }
    }
    if (sp->argc == 0 || !sp->argv[0][0]) fail(ld, n, key, "the command is empty");
}

static void load_engine(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const known[] = {"command",  "workdir", "env", "timeout",
                                        "launcher", "result",  NULL};
    expect_kind(ld, n, "engine", YAML_MAPPING_NODE, "a map");
    map_check(ld, n, "engine", known);
    yaml_node_t *k, *v;

    load_command(ld, map_need(ld, n, key_node, "engine", "command"));
    if ((v = map_get(ld, n, "workdir", NULL))) {
        sp->workdir = xstrdup(get_string(ld, v, "engine.workdir"));
        if (!sp->workdir[0]) fail(ld, v, "engine.workdir", "empty path");
    }
    if ((v = map_get(ld, n, "env", NULL))) {
        expect_kind(ld, v, "engine.env", YAML_MAPPING_NODE, "a map {NAME: value}");
        map_check(ld, v, "engine.env", NULL);
        sp->env = xcalloc((size_t)map_size(v) + 1, sizeof *sp->env);
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top;
             p++) {
            yaml_node_t *ek = node_at(ld, p->key);
            char key[256];
            keyf(key, sizeof key, "engine.env.%s", scalar_text(ek));
            if (!is_identifier(scalar_text(ek)))
                fail(ld, ek, key, "not a valid environment variable name");
            const char *val = get_string(ld, node_at(ld, p->value), key);
            sp->env[sp->n_env].key = xstrdup(scalar_text(ek));
            sp->env[sp->n_env].value = xstrdup(val);
            sp->n_env++;
        }
    }
    sp->timeout_s = 600;
    if ((v = map_get(ld, n, "timeout", NULL)))
        sp->timeout_s = get_duration(ld, v, "engine.timeout");
    if ((v = map_get(ld, n, "launcher", NULL))) {
        sp->launcher = xstrdup(get_string(ld, v, "engine.launcher"));
        if (!strstr(sp->launcher, "{cmd}"))
            fail(ld, v, "engine.launcher", "the template must contain {cmd}");
    }
    if ((v = map_get(ld, n, "result", &k))) load_result(ld, k, v);
}

/* ---------------------------------------------------------------- objective, strategy, budget */

static void load_objective(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const known[] = {"metric", "direction", NULL};
    expect_kind(ld, n, "objective", YAML_MAPPING_NODE, "a map {metric: M, direction: D}");
    map_check(ld, n, "objective", known);
    yaml_node_t *v = map_need(ld, n, key_node, "objective", "metric");
    const char *metric = get_string(ld, v, "objective.metric");
    if (!is_identifier(metric))
        fail(ld, v, "objective.metric", "'%s' is not a metric name (letters, digits, '_')", metric);
    sp->objective = xstrdup(metric);
    sp->maximize = true;
    if ((v = map_get(ld, n, "direction", NULL))) {
        const char *d = get_string(ld, v, "objective.direction");
        if (!strcmp(d, "maximize") || !strcmp(d, "maximise") || !strcmp(d, "max"))
            sp->maximize = true;
        else if (!strcmp(d, "minimize") || !strcmp(d, "minimise") || !strcmp(d, "min"))
            sp->maximize = false;
        else
            fail(ld, v, "objective.direction", "expected maximize or minimize, got '%s'", d);
    }
}

static void load_strategy(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    const yaml_node_t *name_node = n;
    if (n->type == YAML_MAPPING_NODE) {
        static const char *const known[] = {"name", "seed", NULL};
        map_check(ld, n, "strategy", known);
        yaml_node_t *v = map_get(ld, n, "seed", NULL);
        if (v) {
            long seed = get_long(ld, v, "strategy.seed");
            if (seed < 0) fail(ld, v, "strategy.seed", "must be >= 0, got %ld", seed);
            sp->seed = (uint64_t)seed;
        }
        name_node = map_get(ld, n, "name", NULL);
        if (!name_node) fail(ld, n, "strategy.name", "missing (required)");
    } else {
        expect_kind(ld, n, "strategy", YAML_SCALAR_NODE, "a name or a map {name: N, seed: S}");
    }
    const char *key = n == name_node ? "strategy" : "strategy.name";
    const char *name = get_string(ld, name_node, key);
    if (!strategy_find(name)) fail(ld, name_node, key, "unknown strategy '%s'", name);
    free(sp->strategy);
    sp->strategy = xstrdup(name);
}

static void load_budget(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const known[] = {"evaluations", "wall_time", NULL};
    expect_kind(ld, n, "budget", YAML_MAPPING_NODE, "a map {evaluations: N, wall_time: T}");
    map_check(ld, n, "budget", known);
    yaml_node_t *v;
    if ((v = map_get(ld, n, "evaluations", NULL))) {
        sp->max_evaluations = get_long(ld, v, "budget.evaluations");
        if (sp->max_evaluations < 1)
            fail(ld, v, "budget.evaluations", "must be >= 1, got %ld", sp->max_evaluations);
    }
    if ((v = map_get(ld, n, "wall_time", NULL)))
        sp->max_wall_s = get_duration(ld, v, "budget.wall_time");
}

static void load_verify(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const known[] = {"top", "repeats", "prompt_set", "tolerance", NULL};
    expect_kind(ld, n, "verify", YAML_MAPPING_NODE, "a map");
    map_check(ld, n, "verify", known);
    yaml_node_t *v;
    if ((v = map_get(ld, n, "top", NULL))) {
        long top = get_long(ld, v, "verify.top");
        if (top < 1 || top > 1000) fail(ld, v, "verify.top", "must be 1..1000, got %ld", top);
        sp->verify_top = (int)top;
    }
    if ((v = map_get(ld, n, "repeats", NULL))) {
        long r = get_long(ld, v, "verify.repeats");
        if (r < 1 || r > 1000) fail(ld, v, "verify.repeats", "must be 1..1000, got %ld", r);
        sp->verify_repeats = (int)r;
    }
    if ((v = map_get(ld, n, "prompt_set", NULL))) {
        const char *set = get_string(ld, v, "verify.prompt_set");
        if (strcmp(set, "tune") != 0 && strcmp(set, "holdout") != 0)
            fail(ld, v, "verify.prompt_set", "expected tune or holdout, got '%s'", set);
        free(sp->verify_prompt_set);
        sp->verify_prompt_set = xstrdup(set);
    }
    if ((v = map_get(ld, n, "tolerance", NULL))) {
        sp->verify_tolerance = get_double(ld, v, "verify.tolerance");
        if (sp->verify_tolerance < 0 || sp->verify_tolerance >= 1)
            fail(ld, v, "verify.tolerance", "must be in [0, 1), got %g", sp->verify_tolerance);
    }
}

/* ---------------------------------------------------------------- parameters */

static void load_int_param(loader *ld, param_def *p, const yaml_node_t *key_node,
                           const yaml_node_t *n, const char *path) {
    char key[256];
    static const char *const known[] = {"type", "min", "max", "step", "default", "log", NULL};
    map_check(ld, n, path, known);
    yaml_node_t *vmin = map_need(ld, n, key_node, path, "min");
    yaml_node_t *vmax = map_need(ld, n, key_node, path, "max");
    yaml_node_t *v;
    keyf(key, sizeof key, "%s.min", path);
    p->min = get_long(ld, vmin, key);
    if (p->min < -INT_PARAM_LIMIT || p->min > INT_PARAM_LIMIT)
        fail(ld, vmin, key, "out of range (|value| <= 2^53)");
    keyf(key, sizeof key, "%s.max", path);
    p->max = get_long(ld, vmax, key);
    if (p->max < -INT_PARAM_LIMIT || p->max > INT_PARAM_LIMIT)
        fail(ld, vmax, key, "out of range (|value| <= 2^53)");
    if (p->min > p->max) fail(ld, vmax, key, "empty range: min %ld > max %ld", p->min, p->max);
    p->step = 1;
    if ((v = map_get(ld, n, "step", NULL))) {
        keyf(key, sizeof key, "%s.step", path);
        p->step = get_long(ld, v, key);
        if (p->step <= 0) fail(ld, v, key, "step must be > 0, got %ld", p->step);
    }
    if ((p->max - p->min) % p->step != 0) {
        keyf(key, sizeof key, "%s.max", path);
        fail(ld, vmax, key, "max %ld is not on the lattice min + k*step (min %ld, step %ld)",
             p->max, p->min, p->step);
    }
    long levels = (p->max - p->min) / p->step + 1;
    if (levels > INT_MAX) fail(ld, n, path, "%ld levels is too many", levels);
    p->n_levels = (int)levels;
    if ((v = map_get(ld, n, "log", NULL))) {
        keyf(key, sizeof key, "%s.log", path);
        p->log_scale = get_bool(ld, v, key);
        if (p->log_scale && p->min <= 0)
            fail(ld, v, key, "a log scale needs min > 0 (min is %ld)", p->min);
    }
    if ((v = map_get(ld, n, "default", NULL))) {
        keyf(key, sizeof key, "%s.default", path);
        long d = get_long(ld, v, key);
        if (d < p->min || d > p->max)
            fail(ld, v, key, "default %ld is outside [%ld, %ld]", d, p->min, p->max);
        if ((d - p->min) % p->step != 0)
            fail(ld, v, key, "default %ld is not on the lattice min + k*step (min %ld, step %ld)",
                 d, p->min, p->step);
        p->default_level = (int)((d - p->min) / p->step);
    }
}

static void load_categorical_param(loader *ld, param_def *p, const yaml_node_t *key_node,
                                   const yaml_node_t *n, const char *path) {
    char key[256];
    static const char *const known[] = {"type", "values", "default", NULL};
    map_check(ld, n, path, known);
    yaml_node_t *vals = map_need(ld, n, key_node, path, "values");
    keyf(key, sizeof key, "%s.values", path);
    expect_kind(ld, vals, key, YAML_SEQUENCE_NODE, "a list of values");
    int count = (int)(vals->data.sequence.items.top - vals->data.sequence.items.start);
    if (count == 0) fail(ld, vals, key, "empty list of values");
    p->values = xcalloc((size_t)count, sizeof *p->values);
    for (int i = 0; i < count; i++) {
        yaml_node_t *item = node_at(ld, vals->data.sequence.items.start[i]);
        keyf(key, sizeof key, "%s.values[%d]", path, i);
        const char *s = get_string(ld, item, key);
        /* Values appear in point keys "K=V,K=V": keep those unambiguous. */
        for (const char *c = s; *c; c++)
            if (*c == ',' || *c == '=' || iscntrl((unsigned char)*c))
                fail(ld, item, key, "value '%s' may not contain ',', '=' or control characters", s);
        for (int j = 0; j < p->n_levels; j++)
            if (!strcmp(p->values[j], s)) fail(ld, item, key, "duplicate value '%s'", s);
        p->values[p->n_levels++] = xstrdup(s);
    }
    yaml_node_t *v;
    if ((v = map_get(ld, n, "default", NULL))) {
        keyf(key, sizeof key, "%s.default", path);
        const char *d = get_string(ld, v, key);
        p->default_level = space_param_find(p, d);
        if (p->default_level < 0) fail(ld, v, key, "default '%s' is not one of the values", d);
    }
}

static void load_parameters(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    expect_kind(ld, n, "parameters", YAML_MAPPING_NODE, "a map {NAME: {type: ...}}");
    if (map_size(n) == 0) fail(ld, n, "parameters", "no parameters given");
    map_check(ld, n, "parameters", NULL); /* also rejects duplicate parameter names */
    sp->params = xcalloc((size_t)map_size(n), sizeof *sp->params);
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(ld, pr->key), *v = node_at(ld, pr->value);
        char path[256], key[256];
        keyf(path, sizeof path, "parameters.%s", scalar_text(k));
        if (!is_identifier(scalar_text(k)))
            fail(ld, k, path, "not a valid environment variable name");
        param_def *p = &sp->params[sp->n_params++];
        p->name = xstrdup(scalar_text(k));
        p->default_level = -1;
        p->line = node_line(k);
        expect_kind(ld, v, path, YAML_MAPPING_NODE, "a map {type: int|categorical, ...}");
        yaml_node_t *t = map_get(ld, v, "type", NULL);
        keyf(key, sizeof key, "%s.type", path);
        if (!t) fail(ld, k, key, "missing (required: int or categorical)");
        const char *type = get_string(ld, t, key);
        if (!strcmp(type, "int")) {
            p->kind = PARAM_INT;
            load_int_param(ld, p, k, v, path);
        } else if (!strcmp(type, "categorical")) {
            p->kind = PARAM_CATEGORICAL;
            load_categorical_param(ld, p, k, v, path);
        } else {
            fail(ld, t, key, "expected int or categorical, got '%s'", type);
        }
    }
}

/* ---------------------------------------------------------------- baseline, constraints */

static int param_index(const space *sp, const char *name) {
    for (int i = 0; i < sp->n_params; i++)
        if (!strcmp(sp->params[i].name, name)) return i;
    return -1;
}

static void load_baseline(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n) {
    space *sp = ld->sp;
    expect_kind(ld, n, "baseline", YAML_MAPPING_NODE, "a map {PARAMETER: value}");
    map_check(ld, n, "baseline", NULL);
    sp->baseline = xcalloc((size_t)sp->n_params, sizeof *sp->baseline);
    for (int i = 0; i < sp->n_params; i++)
        sp->baseline[i] = -1;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node_at(ld, pr->key), *v = node_at(ld, pr->value);
        char key[256];
        keyf(key, sizeof key, "baseline.%s", scalar_text(k));
        int i = param_index(sp, scalar_text(k));
        if (i < 0) fail(ld, k, key, "unknown parameter '%s'", scalar_text(k));
        const char *val = get_string(ld, v, key);
        sp->baseline[i] = space_param_find(&sp->params[i], val);
        if (sp->baseline[i] < 0)
            fail(ld, v, key, "value '%s' is not a level of parameter %s", val, sp->params[i].name);
    }
    for (int i = 0; i < sp->n_params; i++) {
        if (sp->baseline[i] >= 0) continue;
        if (sp->params[i].default_level < 0)
            fail(ld, key_node, "baseline",
                 "parameter %s is not named and has no default (line %d) to fall back on",
                 sp->params[i].name, sp->params[i].line);
        sp->baseline[i] = sp->params[i].default_level;
    }
}

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
    expect_kind(ld, n, "constraints", YAML_SEQUENCE_NODE, "a list of 'metric op bound'");
    int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
    sp->constraints = xcalloc((size_t)count + 1, sizeof *sp->constraints);
    for (int i = 0; i < count; i++) {
        yaml_node_t *item = node_at(ld, n->data.sequence.items.start[i]);
        char key[64], metric[128];
        keyf(key, sizeof key, "constraints[%d]", i);
        const char *text = get_string(ld, item, key);
        constraint_def *c = &sp->constraints[sp->n_constraints];
        const char *why = parse_constraint(text, c, metric, sizeof metric);
        if (why) fail(ld, item, key, "'%s': %s", text, why);
        c->metric = xstrdup(metric);
        c->text = xstrdup(text);
        c->line = node_line(item);
        sp->n_constraints++;
        if (c->relative && c->value <= 0)
            fail(ld, item, key, "'%s': the baseline factor must be > 0", text);
        if (c->relative && !has_baseline)
            fail(ld, item, key,
                 "'%s' is relative to a baseline, but the space has no baseline point", text);
        /* Relative bounds are compared as factors: metrics with a factor are positive. */
        for (int j = 0; j < sp->n_constraints - 1; j++) {
            const constraint_def *o = &sp->constraints[j];
            if (strcmp(o->metric, c->metric) != 0 || o->relative != c->relative) continue;
            if (bounds_conflict(o->op, o->value, c->op, c->value))
                fail(ld, item, key, "'%s' cannot hold together with '%s' (line %d)", text, o->text,
                     o->line);
        }
    }
}

/* ---------------------------------------------------------------- the whole file */

static void load_root(loader *ld, const yaml_node_t *root) {
    space *sp = ld->sp;
    static const char *const known[] = {"study",    "engine",     "objective", "constraints",
                                        "baseline", "parameters", "strategy",  "budget",
                                        "repeats",  "verify",     NULL};
    if (root->type != YAML_MAPPING_NODE)
        fail(ld, root, NULL, "a space file is a map of sections, got %s", node_kind(root));
    map_check(ld, root, NULL, known);
    yaml_node_t *k, *v;

    sp->strategy = xstrdup("sobol");
    sp->repeats = 1;
    sp->verify_top = 3;
    sp->verify_repeats = 3;
    sp->verify_prompt_set = xstrdup("holdout");
    sp->verify_tolerance = 0.05;

    if ((v = map_get(ld, root, "study", NULL))) {
        const char *s = get_string(ld, v, "study");
        bool ok = *s && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
        for (const char *c = s; *c && ok; c++)
            ok = isalnum((unsigned char)*c) || *c == '_' || *c == '-' || *c == '.';
        if (!ok)
            fail(ld, v, "study", "'%s' is not a folder name (letters, digits, '.', '_', '-')", s);
        sp->study = xstrdup(s);
    }
    v = map_get(ld, root, "engine", &k);
    if (!v) fail(ld, root, "engine", "missing (required)");
    load_engine(ld, k, v);
    v = map_get(ld, root, "objective", &k);
    if (!v) fail(ld, root, "objective", "missing (required)");
    load_objective(ld, k, v);
    v = map_get(ld, root, "parameters", &k);
    if (!v) fail(ld, root, "parameters", "missing (required)");
    load_parameters(ld, v);
    if ((v = map_get(ld, root, "baseline", &k))) load_baseline(ld, k, v);
    if ((v = map_get(ld, root, "constraints", &k))) load_constraints(ld, v, sp->baseline != NULL);
    if ((v = map_get(ld, root, "strategy", &k))) load_strategy(ld, v);
    if (!strcmp(sp->strategy, "sobol") && sp->n_params > SOBOL_MAX_DIM)
        fail(ld, v ? v : root, "strategy", "sobol supports at most %d parameters, the space has %d",
             SOBOL_MAX_DIM, sp->n_params);
    if ((v = map_get(ld, root, "budget", NULL))) load_budget(ld, v);
    if ((v = map_get(ld, root, "repeats", NULL))) {
        long r = get_long(ld, v, "repeats");
        if (r < 1 || r > 1000) fail(ld, v, "repeats", "must be 1..1000, got %ld", r);
        sp->repeats = (int)r;
    }
    if ((v = map_get(ld, root, "verify", NULL))) load_verify(ld, v);

    /* With regex results every metric the study needs must have a pattern. */
    if (sp->n_regex > 0) {
        yaml_node_t *engine = map_get(ld, root, "engine", NULL);
        yaml_node_t *result = map_get(ld, engine, "result", NULL);
        yaml_node_t *at = NULL;
        map_get(ld, result, "regex", &at);
        for (int i = -1; i < sp->n_constraints; i++) {
            const char *m = i < 0 ? sp->objective : sp->constraints[i].metric;
            bool found = false;
            for (int j = 0; j < sp->n_regex && !found; j++)
                found = !strcmp(sp->regex[j].metric, m);
            if (!found)
                fail(ld, at, "engine.result.regex", "no pattern for metric '%s' (used by the %s)",
                     m, i < 0 ? "objective" : "constraints");
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
    char *text = file_read_all(path, &len, err, errlen);
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
    int extra_line = more ? node_line(yaml_document_get_root_node(&extra)) : 0;
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
    free(sp);
}
