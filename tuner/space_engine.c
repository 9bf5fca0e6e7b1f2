/* space_engine.c: the engine section of a space file (engine: command, workdir, env, timeout,
 * launcher, result), read into the space by space_load (space.c).
 *
 * This section says how a trial is run and how its figures are read back, and nothing in it
 * touches the lattice or the objective, so it stands apart from the rest of the loader. Most
 * of its weight is the result patterns: each is checked for what makes glibc's regcomp blow
 * up (regex_problem) before it is compiled, since the space file is input the tuner does not
 * trust. The Slurm form of the launcher is read by space_slurm.c. */
#include "space_yaml.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

/* What makes a result pattern unsafe to compile, or NULL. glibc's regcomp copies a repeated
 * subexpression once per repetition, so stacked or nested repetitions grow it without bound
 * (the fuzzer found '+' repeated 100 times taking over 2 GB). Refused: over 1000 characters, two
 * repetition operators in a row (undefined in POSIX ERE), a count over 255 (POSIX's RE_DUP_MAX
 * floor), and counts whose product over the pattern exceeds 10000. */
static const char *regex_problem(const char *p) {
    if (strlen(p) > 1000) return "is longer than 1000 characters";
    double product = 1;
    int prev_rep = 0; /* the last token was a repetition operator */
    for (size_t i = 0; p[i]; i++) {
        const char c = p[i];
        if (c == '\\' && p[i + 1]) {
            i++;
            prev_rep = 0;
        } else if (c == '[') { /* a bracket expression: skip to its ']' */
            size_t j = i + 1;
            if (p[j] == '^') j++;
            if (p[j] == ']') j++;
            while (p[j] && p[j] != ']') {
                if (p[j] == '[' && (p[j + 1] == ':' || p[j + 1] == '.' || p[j + 1] == '=')) {
                    const char close = p[j + 1];
                    j += 2;
                    while (p[j] && !(p[j] == close && p[j + 1] == ']'))
                        j++;
                    if (p[j]) j++;
                }
                if (p[j]) j++;
            }
            i = p[j] ? j : j - 1;
            prev_rep = 0;
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (prev_rep) return "has two repetition operators in a row";
            if (c == '{') {
                char *end = NULL;
                const long lo = strtol(p + i + 1, &end, 10);
                long hi = lo;
                if (end && *end == ',') hi = end[1] == '}' ? lo : strtol(end + 1, &end, 10);
                if (lo > 255 || hi > 255) return "has a repetition count over 255";
                product *= hi > 1 ? (double)hi : 1;
                if (product > 10000) return "has repetition counts whose product exceeds 10000";
                while (p[i] && p[i] != '}')
                    i++;
                if (!p[i]) break;
            }
            prev_rep = 1;
        } else {
            prev_rep = 0;
        }
    }
    return NULL;
}

static void add_regex(loader *ld, const yaml_node_t *key_node, const yaml_node_t *val) {
    space *sp = ld->sp;
    char key[256];
    ld_keyf(key, sizeof key, "engine.result.regex.%s", ld_text(key_node));
    if (!ld_is_identifier(ld_text(key_node)))
        ld_fail(ld, key_node, key, "metric names are letters, digits and '_'");
    const char *pattern = ld_string(ld, val, key);
    const char *unsafe = regex_problem(pattern);
    if (unsafe) ld_fail(ld, val, key, "regular expression '%.80s' %s", pattern, unsafe);
    sp->regex = xrealloc(sp->regex, (size_t)(sp->n_regex + 1) * sizeof *sp->regex);
    metric_regex *r = &sp->regex[sp->n_regex];
    int rc = regcomp(&r->re, pattern, REG_EXTENDED);
    if (rc != 0) {
        char why[256];
        regerror(rc, &r->re, why, sizeof why); /* a failed regcomp holds nothing to free */
        ld_fail(ld, val, key, "bad regular expression '%s': %s", pattern, why);
    }
    r->metric = xstrdup(ld_text(key_node));
    r->pattern = xstrdup(pattern);
    sp->n_regex++; /* owned by the space from here on, including the compiled form */
    if (r->re.re_nsub < 1)
        ld_fail(ld, val, key, "the pattern '%s' needs a capture group ( ) around the value",
                pattern);
}

static void load_result(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n) {
    if (n->type == YAML_SCALAR_NODE && !ld_is_null(n)) {
        if (strcmp(ld_text(n), "json") != 0)
            ld_fail(ld, n, "engine.result", "expected 'json' or a map {regex: {metric: pattern}}");
        return;
    }
    ld_expect(ld, n, "engine.result", YAML_MAPPING_NODE, "'json' or a map {regex: ...}");
    static const char *const known[] = {"regex", NULL};
    ld_map_check(ld, n, "engine.result", known);
    yaml_node_t *re = ld_map_need(ld, n, key_node, "engine.result", "regex");
    ld_expect(ld, re, "engine.result.regex", YAML_MAPPING_NODE, "a map {metric: pattern}");
    if (ld_map_size(re) == 0) ld_fail(ld, re, "engine.result.regex", "no metric patterns given");
    ld_map_check(ld, re, "engine.result.regex", NULL);
    for (yaml_node_pair_t *p = re->data.mapping.pairs.start; p < re->data.mapping.pairs.top; p++)
        add_regex(ld, ld_node(ld, p->key), ld_node(ld, p->value));
}

static void load_command(loader *ld, const yaml_node_t *n) {
    space *sp = ld->sp;
    const char *key = "engine.command";
    if (n->type == YAML_SCALAR_NODE && !ld_is_null(n)) {
        /* One string: split on whitespace, no shell quoting (use a list for that). */
        const char *s = ld_string(ld, n, key);
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
        ld_expect(ld, n, key, YAML_SEQUENCE_NODE, "a list of arguments or a string");
        int count = (int)(n->data.sequence.items.top - n->data.sequence.items.start);
        sp->argv = xcalloc((size_t)count + 1, sizeof *sp->argv);
        for (int i = 0; i < count; i++) {
            char k[64];
            ld_keyf(k, sizeof k, "engine.command[%d]", i);
            const char *arg = ld_string(ld, ld_node(ld, n->data.sequence.items.start[i]), k);
            sp->argv[sp->argc++] = xstrdup(arg);
        }
    }
    if (sp->argc == 0 || !sp->argv[0][0]) ld_fail(ld, n, key, "the command is empty");
}

void space_load_engine(loader *ld, const yaml_node_t *key_node, const yaml_node_t *n) {
    space *sp = ld->sp;
    static const char *const known[] = {"command",  "workdir", "env", "timeout",
                                        "launcher", "result",  NULL};
    ld_expect(ld, n, "engine", YAML_MAPPING_NODE, "a map");
    ld_map_check(ld, n, "engine", known);
    yaml_node_t *k, *v;

    load_command(ld, ld_map_need(ld, n, key_node, "engine", "command"));
    if ((v = ld_map_get(ld, n, "workdir", NULL))) {
        sp->workdir = xstrdup(ld_string(ld, v, "engine.workdir"));
        if (!sp->workdir[0]) ld_fail(ld, v, "engine.workdir", "empty path");
    }
    if ((v = ld_map_get(ld, n, "env", NULL))) {
        ld_expect(ld, v, "engine.env", YAML_MAPPING_NODE, "a map {NAME: value}");
        ld_map_check(ld, v, "engine.env", NULL);
        sp->env = xcalloc((size_t)ld_map_size(v) + 1, sizeof *sp->env);
        for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top;
             p++) {
            yaml_node_t *ek = ld_node(ld, p->key);
            char key[256];
            ld_keyf(key, sizeof key, "engine.env.%s", ld_text(ek));
            if (!ld_is_identifier(ld_text(ek)))
                ld_fail(ld, ek, key, "not a valid environment variable name");
            space_check_env_name(ld, ek, key, ld_text(ek));
            const char *val = ld_string(ld, ld_node(ld, p->value), key);
            sp->env[sp->n_env].key = xstrdup(ld_text(ek));
            sp->env[sp->n_env].value = xstrdup(val);
            sp->n_env++;
        }
    }
    sp->timeout_s = 600;
    if ((v = ld_map_get(ld, n, "timeout", NULL)))
        sp->timeout_s = ld_duration(ld, v, "engine.timeout");
    if ((v = ld_map_get(ld, n, "launcher", NULL)) && v->type == YAML_MAPPING_NODE) {
        space_load_slurm(ld, v); /* {slurm: {...}}: space_slurm.c */
    } else if (v) {
        sp->launcher = xstrdup(ld_string(ld, v, "engine.launcher"));
        if (!strstr(sp->launcher, "{cmd}"))
            ld_fail(ld, v, "engine.launcher", "the template must contain {cmd}");
    }
    if ((v = ld_map_get(ld, n, "result", &k))) load_result(ld, k, v);
}
