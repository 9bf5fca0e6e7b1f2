/* test_space.c: the search-space loader and the lattice helpers.
 *
 * Good files load with every value (and every default) as written; each bad fixture in
 * spaces/ fails with a message that starts with the exact "FILE:LINE: key 'K': " and names the
 * problem; the canonical JSON hash ignores comments, layout and spelling but sees every
 * semantic change; the lattice helpers agree with each other. Runs in tests/tuner. */
#include "space.h"
#include "util.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../test_util.h"

static space *load_ok(const char *path) {
    char err[1024];
    space *sp = space_load(path, err, sizeof err);
    if (!sp) {
        fprintf(stderr, "unexpected load failure: %s\n", err);
        exit(1);
    }
    return sp;
}

/* A space file written from text, for the cases built by the test itself. */
static char *write_temp(const char *text) {
    char *path = xstrdup("/tmp/test_space_XXXXXX.yaml");
    int fd = mkstemps(path, 5);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "w");
    CHECK(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static uint64_t hash_of_text(const char *text) {
    char *path = write_temp(text);
    space *sp = load_ok(path);
    uint64_t h = sp->hash;
    space_free(sp);
    unlink(path);
    free(path);
    return h;
}

static void test_good_full(void) {
    space *sp = load_ok("spaces/good_full.yaml");
    EXPECT(!strcmp(sp->path, "spaces/good_full.yaml"));
    EXPECT(!strcmp(sp->dir, "spaces"));
    EXPECT(!strcmp(sp->study, "demo-full"));
    EXPECT(sp->argc == 3 && sp->argv[3] == NULL);
    EXPECT(!strcmp(sp->argv[0], "./synth_engine") && !strcmp(sp->argv[2], "bench run"));
    EXPECT(!strcmp(sp->workdir, "work"));
    EXPECT(sp->n_env == 2);
    EXPECT(!strcmp(sp->env[0].key, "WARMUP_NUM_PROMPTS") && !strcmp(sp->env[0].value, "2"));
    EXPECT(!strcmp(sp->env[1].key, "MAX_NEW_TOKENS") && !strcmp(sp->env[1].value, "512"));
    EXPECT(sp->timeout_s == 5400);
    EXPECT(!strcmp(sp->launcher, "srun -N1 {cmd}"));
    EXPECT(sp->n_regex == 2 && !strcmp(sp->regex[1].metric, "ppl"));
    EXPECT(!strcmp(sp->regex[0].pattern, "tok/s: ([0-9.]+)"));
    regmatch_t m[2];
    EXPECT(regexec(&sp->regex[0].re, "speed tok/s: 12.5 done", 2, m, 0) == 0 && m[1].rm_so == 13);
    EXPECT(!strcmp(sp->objective, "tps") && sp->maximize);
    EXPECT(sp->n_constraints == 3);
    const constraint_def *c = sp->constraints;
    EXPECT(!strcmp(c[0].metric, "ppl") && c[0].op == OP_LE && c[0].value == 2.42 && !c[0].relative);
    EXPECT(c[0].line == 17 && !strcmp(c[0].text, "ppl <= 2.42"));
    EXPECT(c[1].relative && c[1].value == 1.05 && c[1].op == OP_LE && c[1].line == 18);
    EXPECT(!strcmp(c[2].metric, "tps") && c[2].op == OP_GT && c[2].value == 10);
    EXPECT(sp->n_params == 3);
    const param_def *sw = &sp->params[0], *keep = &sp->params[1], *spec = &sp->params[2];
    EXPECT(!strcmp(sw->name, "SLIDING_WINDOW") && sw->kind == PARAM_INT && sw->line == 22);
    EXPECT(sw->min == 128 && sw->max == 512 && sw->step == 8 && sw->n_levels == 49);
    EXPECT(sw->default_level == 48 && !sw->log_scale);
    EXPECT(keep->kind == PARAM_CATEGORICAL && keep->n_levels == 3 && keep->default_level == 0);
    EXPECT(!strcmp(keep->values[2], "8192") && keep->line == 23);
    EXPECT(spec->log_scale && spec->n_levels == 16 && spec->default_level == 3);
    EXPECT(sp->baseline && sp->baseline[0] == 16 && sp->baseline[1] == 0 && sp->baseline[2] == 3);
    EXPECT(!strcmp(sp->strategy, "grid") && sp->seed == 7);
    EXPECT(sp->max_evaluations == 40 && sp->max_wall_s == 8 * 3600);
    EXPECT(sp->repeats == 3);
    EXPECT(sp->verify_top == 2 && sp->verify_repeats == 5 && sp->verify_tolerance == 0.1);
    EXPECT(!strcmp(sp->verify_prompt_set, "tune"));
    EXPECT(space_n_points(sp) == 49 * 3 * 16);
    int levels[3] = {16, 2, 0};
    char *key = space_point_key(sp, levels);
    EXPECT(!strcmp(key, "SLIDING_WINDOW=256,LM_HEAD_KEEPSET=8192,NUM_SPECULATIVE_TOKENS=1"));
    free(key);
    space_free(sp);
}

static void test_good_minimal_defaults(void) {
    space *sp = load_ok("spaces/good_minimal.yaml");
    EXPECT(sp->study == NULL && sp->workdir == NULL && sp->launcher == NULL);
    EXPECT(sp->argc == 3 && !strcmp(sp->argv[2], "--quiet") && sp->argv[3] == NULL);
    EXPECT(sp->n_env == 0 && sp->n_regex == 0 && sp->n_constraints == 0 && !sp->baseline);
    EXPECT(sp->timeout_s == 600 && sp->repeats == 1);
    EXPECT(!strcmp(sp->strategy, "sobol") && sp->seed == 0);
    EXPECT(sp->max_evaluations == 0 && sp->max_wall_s == 0);
    EXPECT(sp->verify_top == 3 && sp->verify_repeats == 3 && sp->verify_tolerance == 0.05);
    EXPECT(sp->verify_max_repeats == 10 && sp->verify_max_candidates == 9);
    EXPECT(sp->verify_confidence == 0.95 && sp->verify_precision == 0.02);
    EXPECT(!strcmp(sp->verify_prompt_set, "holdout"));
    EXPECT(sp->params[0].step == 1 && sp->params[0].n_levels == 4);
    EXPECT(sp->params[0].default_level == -1);
    space_free(sp);
}

/* Each bad fixture: the exact message prefix, then a phrase that must follow it. */
static const struct {
    const char *file;
    int line;
    const char *key; /* NULL: the message names no key */
    const char *problem;
} bad_cases[] = {
    {"bad_yaml_syntax", 3, NULL, "YAML syntax error: did not find expected ',' or ']'"},
    {"bad_unknown_key", 5, "repeat", "unknown key"},
    {"bad_unknown_nested_key", 3, "engine.timout", "unknown key"},
    {"bad_missing_command", 1, "engine.command", "missing (required)"},
    {"bad_missing_objective", 1, "objective", "missing (required)"},
    {"bad_missing_parameters", 1, "parameters", "missing (required)"},
    {"bad_int_type", 6, "parameters.SLIDING_WINDOW.min", "expected an integer, got 'abc'"},
    {"bad_map_for_list", 6, "parameters.KEEP.values", "expected a list of values, got a map"},
    {"bad_min_gt_max", 4, "parameters.X.max", "empty range: min 10 > max 3"},
    {"bad_step_zero", 8, "parameters.X.step", "step must be > 0, got 0"},
    {"bad_empty_values", 4, "parameters.KEEP.values", "empty list of values"},
    {"bad_duplicate_value", 9, "parameters.KEEP.values[2]", "duplicate value '0'"},
    {"bad_duration", 3, "engine.timeout", "bad duration '10x'"},
    {"bad_default_range", 4, "parameters.X.default", "default 4 is outside [0, 3]"},
    {"bad_default_lattice", 9, "parameters.SLIDING_WINDOW.default", "not on the lattice"},
    {"bad_duplicate_param", 6, "parameters.X", "duplicate key (first at line 4)"},
    {"bad_constraint_syntax", 4, "constraints[0]", "'ppl 2.42': expected an operator"},
    {"bad_constraint_op", 5, "constraints[1]", "'ppl == 2.42': unknown operator"},
    {"bad_relative_no_baseline", 4, "constraints[0]", "but the space has no baseline point"},
    {"bad_baseline_unknown", 5, "baseline.SLIDING_WINDOW", "unknown parameter 'SLIDING_WINDOW'"},
    {"bad_baseline_value", 4, "baseline.SLIDING_WINDOW", "value '130' is not a level"},
    {"bad_baseline_no_default", 3, "baseline", "parameter Y is not named and has no default"},
    {"bad_impossible", 6, "constraints[2]", "cannot hold together with 'ppl <= 2.4' (line 4)"},
    {"bad_factor", 5, "constraints[0]", "the baseline factor must be > 0"},
    {"bad_repeats", 5, "repeats", "must be 1..1000, got 0"},
    {"bad_repeats_string", 5, "repeats", "expected an integer, got the string \"3\""},
    {"bad_strategy", 6, "strategy.name", "unknown strategy 'annealing'"},
    {"bad_regex", 6, "engine.result.regex.ppl", "bad regular expression 'ppl: ([0-9.]+'"},
    {"bad_regex_missing_metric", 4, "engine.result.regex", "no pattern for metric 'ppl'"},
    {"bad_log_min", 8, "parameters.X.log", "a log scale needs min > 0"},
    {"bad_max_off_lattice", 7, "parameters.X.max", "max 10 is not on the lattice"},
    {"bad_empty_file", 1, NULL, "the file is empty"},
    {"bad_not_map", 2, NULL, "a space file is a map of sections, got a list"},
    {"bad_launcher", 3, "engine.launcher", "must contain {cmd}"},
    {"bad_env_name", 4, "engine.env.MAX-NEW-TOKENS", "not a valid environment variable name"},
    {"bad_verify", 7, "verify.prompt_set", "expected tune or holdout, got 'test'"},
    {"bad_verify_confidence", 7, "verify.confidence", "must be in (0, 1), e.g. 0.95, got 1.5"},
    {"bad_verify_precision", 6, "verify.precision", "must be in (0, 1)"},
    {"bad_verify_max_repeats", 6, "verify.max_repeats", "must be 1..1000, got 0"},
    {"bad_verify_max_below", 7, "verify.max_repeats", "must be >= verify.repeats (5), got 4"},
    {"bad_param_type", 4, "parameters.X.type", "expected int or categorical, got 'float'"},
    {"bad_direction", 4, "objective.direction", "expected maximize or minimize, got 'fastest'"},
    {"bad_budget", 7, "budget.wall_time", "bad duration 'soon'"},
    {"bad_categorical_key", 7, "parameters.KEEP.step", "unknown key"},
    {"bad_empty_command", 2, "engine.command", "the command is empty"},
};

static void expect_error(const char *path, int line, const char *key, const char *problem) {
    char err[1024], want[512];
    space *sp = space_load(path, err, sizeof err);
    if (sp) {
        fprintf(stderr, "%s: loaded, but should fail with \"%s\"\n", path, problem);
        failures++;
        space_free(sp);
        return;
    }
    if (key)
        snprintf(want, sizeof want, "%s:%d: key '%s': ", path, line, key);
    else
        snprintf(want, sizeof want, "%s:%d: ", path, line);
    if (strncmp(err, want, strlen(want)) != 0 || !strstr(err + strlen(want), problem)) {
        fprintf(stderr, "%s:\n  got:  %s\n  want: %s...%s\n", path, err, want, problem);
        failures++;
    }
}

static void test_bad_fixtures(void) {
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        char path[256];
        snprintf(path, sizeof path, "spaces/%s.yaml", bad_cases[i].file);
        expect_error(path, bad_cases[i].line, bad_cases[i].key, bad_cases[i].problem);
    }
    char err[512];
    EXPECT(space_load("spaces/no_such_file.yaml", err, sizeof err) == NULL);
    EXPECT(strstr(err, "spaces/no_such_file.yaml: cannot open") == err);
}

/* More bad cases, written from text: (head, line, key, problem). The head replaces the first
 * lines of a valid space; the parameters section always follows. */
static const char *valid_tail = "parameters:\n  X: {type: int, min: 1, max: 4, default: 2}\n";
static const struct {
    const char *head;
    int line;
    const char *key, *problem;
} text_cases[] = {
    {"engine: ./e\nobjective: {metric: tps}\n", 1, "engine", "expected a map, got a scalar"},
    {"engine: {command: ./e}\nobjective: tps\n", 2, "objective", "expected a map"},
    {"engine: {command: ./e, env: {A: [1, 2]}}\nobjective: {metric: tps}\n", 1, "engine.env.A",
     "expected a string, got a list"},
    {"engine: {command: ./e, result: xml}\nobjective: {metric: tps}\n", 1, "engine.result",
     "expected 'json'"},
    {"engine: {command: ./e, result: {regex: {tps: 'tps=[0-9]+'}}}\nobjective: {metric: tps}\n", 1,
     "engine.result.regex.tps", "needs a capture group"},
    {"engine: {command: ./e, result: {regex: {ppl: 'p=([0-9]+)'}}}\nobjective: {metric: tps}\n", 1,
     "engine.result.regex", "no pattern for metric 'tps' (used by the objective)"},
    {"engine: {command: [./e, {a: 1}]}\nobjective: {metric: tps}\n", 1, "engine.command[1]",
     "expected a string, got a map"},
    {"engine: {command: ./e}\nobjective: {metric: tps, metric: ppl}\n", 2, "objective.metric",
     "duplicate key (first at line 2)"},
    {"engine: {command: ./e}\nobjective: {metric: 9tps}\n", 2, "objective.metric",
     "not a metric name"},
    {"engine: {command: ./e}\nobjective: {direction: minimize}\n", 2, "objective.metric",
     "missing (required)"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\n"
     "baseline: {}\nconstraints:\n  - ppl <= 1.05 * baseline\n  - ppl >= 1.1*baseline\n",
     6, "constraints[1]", "cannot hold together with 'ppl <= 1.05 * baseline' (line 5)"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nconstraints: ppl <= 2\n", 3, "constraints",
     "expected a list of 'metric op bound', got a scalar"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nconstraints: [ppl <= 2 * base]\n", 3,
     "constraints[0]", "expected 'baseline' after '*'"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nconstraints: [ppl <= 2.4 tokens]\n", 3,
     "constraints[0]", "unexpected text after the bound"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nconstraints: [ppl <= two]\n", 3,
     "constraints[0]", "the bound must be a number"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nconstraints: [ppl <= 0 * baseline]\n", 3,
     "constraints[0]", "the baseline factor must be > 0"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nstrategy: {seed: 1}\n", 3, "strategy.name",
     "missing (required)"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nstrategy: {name: grid, seed: -1}\n", 3,
     "strategy.seed", "must be >= 0"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nverify: {tolerance: 1}\n", 3,
     "verify.tolerance", "must be in [0, 1)"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nverify: {top: 0}\n", 3, "verify.top",
     "must be 1..1000"},
    {"study: ../up\nengine: {command: ./e}\nobjective: {metric: tps}\n", 1, "study",
     "is not a folder name"},
    {"engine: {command: ./e, timeout: -5}\nobjective: {metric: tps}\n", 1, "engine.timeout",
     "bad duration '-5'"},
    {"engine: {command: ./e, timeout: 0s}\nobjective: {metric: tps}\n", 1, "engine.timeout",
     "bad duration '0s'"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbudget: {evaluations: 0}\n", 3,
     "budget.evaluations", "must be >= 1"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbudget: [10]\n", 3, "budget",
     "expected a map"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nrepeats: 2.5\n", 3, "repeats",
     "expected an integer, got '2.5'"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nrepeats:\n", 3, "repeats",
     "expected an integer, got no value"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\n[a]: 1\n", 3, NULL,
     "a key must be a name, got a list"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\n"
     "parameters:\n  Y: {type: int, min: 0, max: 9007199254740993}\n",
     4, "parameters.Y.max", "out of range"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\n"
     "parameters:\n  Y: {type: int, min: 0, max: 99999999999}\n",
     4, "parameters.Y", "levels is too many"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\n"
     "parameters:\n  Y: {type: int, min: 1, max: 2, log: yes}\n",
     4, "parameters.Y.log", "expected true or false, got 'yes'"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\n"
     "parameters:\n  Y: {type: categorical, values: ['a,b']}\n",
     4, "parameters.Y.values[0]", "may not contain ','"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\n"
     "parameters:\n  Y: {type: categorical, values: [a, b], default: c}\n",
     4, "parameters.Y.default", "default 'c' is not one of the values"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nparameters:\n  Y: {min: 0, max: 1}\n", 4,
     "parameters.Y.type", "missing (required: int or categorical)"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nparameters:\n  Y: {type: int, max: 1}\n", 4,
     "parameters.Y.min", "missing (required)"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nparameters: {}\n", 3, "parameters",
     "no parameters given"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nparameters:\n  bad-name: {type: int, "
     "min: 0, max: 1}\n",
     4, "parameters.bad-name", "not a valid environment variable name"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbaseline: {X: '5'}\n", 3, "baseline.X",
     "value '5' is not a level of parameter X"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbounds: {tps: [5, 1]}\n", 3, "bounds.tps",
     "empty bounds: lo 5 > hi 1"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbounds: {tps: [1, 2, 3]}\n", 3,
     "bounds.tps", "expected two numbers [lo, hi]"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbounds: {tps: 5}\n", 3, "bounds.tps",
     "expected a list [lo, hi]"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbounds: {tps: [0, '9']}\n", 3,
     "bounds.tps[1]", "expected a number"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbounds: {tps: [0, .inf]}\n", 3,
     "bounds.tps[1]", "expected a number"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nbounds: {bad-name: [0, 1]}\n", 3,
     "bounds.bad-name", "is not a metric name"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nparameters:\n  TUNER_TRIAL: {type: int, "
     "min: 0, max: 1}\n",
     4, "parameters.TUNER_TRIAL", "TUNER_TRIAL is set by the tuner"},
    {"engine: {command: ./e, env: {TUNER_RESULT: x}}\nobjective: {metric: tps}\n", 1,
     "engine.env.TUNER_RESULT", "TUNER_RESULT is set by the tuner"},
    {"engine: {command: ./e, env: {TUNER_PROMPT_SET: x}}\nobjective: {metric: tps}\n", 1,
     "engine.env.TUNER_PROMPT_SET", "TUNER_PROMPT_SET is set by the tuner"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nparameters:\n  PATH: {type: int, min: 0, "
     "max: 1}\n",
     4, "parameters.PATH",
     "PATH is acted on by the dynamic loader or shells; list it in allow_env"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nparameters:\n  LD_PRELOAD: {type: int, "
     "min: 0, max: 1}\n",
     4, "parameters.LD_PRELOAD", "list it in allow_env"},
    {"engine: {command: ./e, env: {BASH_ENV: x}}\nobjective: {metric: tps}\n", 1,
     "engine.env.BASH_ENV", "list it in allow_env"},
    {"engine: {command: ./e, env: {IFS: x}}\nobjective: {metric: tps}\nallow_env: [PATH]\n", 1,
     "engine.env.IFS", "list it in allow_env"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nallow_env: [TUNER_TRIAL]\n", 3,
     "allow_env[0]", "cannot be allowed"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\nallow_env: [PATH, PATH]\n", 3,
     "allow_env[1]", "PATH is listed twice"},
    {"study: -x\nengine: {command: ./e}\nobjective: {metric: tps}\n", 1, "study",
     "may not start with '-' or '.'"},
    {"study: .hidden\nengine: {command: ./e}\nobjective: {metric: tps}\n", 1, "study",
     "may not start with '-' or '.'"},
    {"study: a b\nengine: {command: ./e}\nobjective: {metric: tps}\n", 1, "study",
     "letters, digits, '.', '_' and '-'"},
    {"study: "
     "x1234567890123456789012345678901234567890123456789012345678901234567890123456789012345678901"
     "234567890\nengine: {command: ./e}\nobjective: {metric: tps}\n",
     1, "study", "at most 100 characters"},
    {"engine:\n\tcommand: ./e\n", 2, NULL, "YAML syntax error"},
    {"engine: {command: ./e}\nobjective: {metric: tps}\n---\nrepeats: 2\n", 4, NULL,
     "one YAML document"},
};

static void test_text_cases(void) {
    for (size_t i = 0; i < sizeof text_cases / sizeof text_cases[0]; i++) {
        char text[2048];
        /* the parameters go after the head, so the head keeps its line numbers */
        bool add_tail = !strstr(text_cases[i].head, "parameters:");
        snprintf(text, sizeof text, "%s%s", text_cases[i].head, add_tail ? valid_tail : "");
        char *path = write_temp(text);
        expect_error(path, text_cases[i].line, text_cases[i].key, text_cases[i].problem);
        unlink(path);
        free(path);
    }
}

/* Good variants the fixtures do not cover. */
static void test_good_variants(void) {
    char *path = write_temp("engine: {command: ./e}\nobjective: {metric: lat, direction: min}\n"
                            "baseline: {}\n"
                            "constraints: ['ppl<=baseline', 'ppl > 0.5*baseline', 'x >= -3']\n"
                            "parameters:\n  X: {type: int, min: -4, max: 4, step: 4, default: 0}\n"
                            "  Y: &v {type: categorical, values: [a], default: a}\n  Z: *v\n");
    space *sp = load_ok(path);
    EXPECT(!sp->maximize && !strcmp(sp->objective, "lat"));
    EXPECT(sp->baseline && sp->baseline[0] == 1 && sp->baseline[1] == 0 && sp->baseline[2] == 0);
    EXPECT(sp->n_constraints == 3 && sp->constraints[0].relative && sp->constraints[0].value == 1);
    EXPECT(sp->constraints[1].op == OP_GT && sp->constraints[1].value == 0.5);
    EXPECT(!sp->constraints[2].relative && sp->constraints[2].value == -3);
    EXPECT(sp->n_params == 3 && sp->params[2].n_levels == 1 && space_n_points(sp) == 3);
    space_free(sp);
    unlink(path);
    free(path);
}

/* Cases that need a generated file: Sobol's dimension limit. */
static void test_sobol_dimension_limit(void) {
    char text[8192] = "engine: {command: ./e}\nobjective: {metric: tps}\nparameters:\n";
    for (int i = 0; i < 41; i++) {
        char line[64];
        snprintf(line, sizeof line, "  P%d: {type: int, min: 0, max: 1}\n", i);
        strcat(text, line);
    }
    char *path = write_temp(text);
    expect_error(path, 1, "strategy", "sobol supports at most 40 parameters, the space has 41");
    strcat(text, "strategy: grid\n"); /* grid has no such limit */
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    space *sp = load_ok(path);
    EXPECT(sp->n_params == 41 && space_n_points(sp) == 1L << 41);
    space_free(sp);
    unlink(path);
    free(path);
}

static const char *base_space = "engine: {command: [./e, -v], timeout: 90}\n"
                                "objective: {metric: tps}\n"
                                "constraints: [ppl <= 2.5]\n"
                                "parameters:\n"
                                "  A: {type: int, min: 0, max: 8, step: 2}\n"
                                "  B: {type: categorical, values: [p, q]}\n";

static void test_hash(void) {
    uint64_t h = hash_of_text(base_space);
    /* Same meaning: comments, layout, key order, another spelling of the same values. */
    EXPECT(h == hash_of_text("# a comment\n"
                             "parameters:\n"
                             "  A:\n    type: int\n    step: 2\n    max: 8\n    min: 0\n"
                             "  B: {values: [p, q], type: categorical}\n"
                             "objective:   {metric: tps, direction: maximize}\n"
                             "constraints:\n  - ppl<=2.5   # bound\n"
                             "engine:\n  timeout: 1m30s\n  command: [./e, -v]\n"
                             "repeats: 1\nstrategy: {name: sobol, seed: 0}\n"));
    EXPECT(h == hash_of_text("engine: {command: ./e -v, timeout: 90s}\n"
                             "objective: {metric: tps}\n"
                             "constraints: [ppl <= 2.50]\n"
                             "parameters:\n"
                             "  A: {type: int, min: 0, max: 8, step: 2}\n"
                             "  B: {type: categorical, values: [p, q]}\n"
                             "verify: {top: 3}\n"));
    /* Any semantic change moves it. */
    const char *changes[][2] = {
        {"timeout: 90", "timeout: 91"},
        {"[./e, -v]", "[./e, -w]"},
        {"ppl <= 2.5", "ppl < 2.5"},
        {"max: 8", "max: 10"},
        {"values: [p, q]", "values: [q, p]"},
        {"{metric: tps}", "{metric: tps, direction: minimize}"},
    };
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
        char text[1024];
        const char *at = strstr(base_space, changes[i][0]);
        CHECK(at);
        snprintf(text, sizeof text, "%.*s%s%s", (int)(at - base_space), base_space, changes[i][1],
                 at + strlen(changes[i][0]));
        if (hash_of_text(text) == h) {
            fprintf(stderr, "hash unchanged by %s -> %s\n", changes[i][0], changes[i][1]);
            failures++;
        }
    }
    char text[1024];
    snprintf(text, sizeof text, "%sstrategy: {name: sobol, seed: 1}\n", base_space);
    EXPECT(hash_of_text(text) != h);
    snprintf(text, sizeof text, "%srepeats: 2\n", base_space);
    EXPECT(hash_of_text(text) != h);
    snprintf(text, sizeof text, "%sbudget: {evaluations: 5}\n", base_space);
    EXPECT(hash_of_text(text) != h);

    /* The JSON text itself: fixed key order, defaults filled in. */
    char *path = write_temp(base_space);
    space *sp = load_ok(path);
    char *json = space_to_json_text(sp);
    EXPECT(space_hash_text(json) == sp->hash);
    EXPECT(strstr(json, "{\"study\":null,\"engine\":{\"command\":[\"./e\",\"-v\"],") == json);
    EXPECT(strstr(json, "\"timeout_s\":90,") && strstr(json, "\"result\":{\"format\":\"json\"}"));
    EXPECT(strstr(json, "\"constraints\":[{\"metric\":\"ppl\",\"op\":\"<=\",\"value\":2.5,"
                        "\"relative\":false}]"));
    EXPECT(strstr(json, "\"strategy\":{\"name\":\"sobol\",\"seed\":\"0\"}"));
    EXPECT(strstr(json, "\"verify\":{\"top\":3,\"repeats\":3,\"max_repeats\":10,"
                        "\"max_candidates\":9,\"confidence\":0.95,\"precision\":0.02,"
                        "\"prompt_set\":\"holdout\",\"tolerance\":0.05}"));
    free(json);
    space_free(sp);
    unlink(path);
    free(path);
    EXPECT(space_hash_text("") == 14695981039346656037ULL);
    EXPECT(space_hash_text("a") == 0xaf63dc4c8601ec8cULL); /* the published FNV-1a test vector */
}

/* Metric bounds: the defaults, the space's own, and what they do to the hash. */
static void test_bounds(void) {
    const char *text = "engine: {command: ./e, env: {LD_LIBRARY_PATH: /x}}\n"
                       "objective: {metric: tps}\n"
                       "constraints: [ppl <= 2.5, mem <= 1.1 * baseline, err < 3]\n"
                       "baseline: {}\n"
                       "bounds: {tps: [0, 1e7], lat_ms: [null, 100]}\n"
                       "allow_env: [LD_LIBRARY_PATH, PATH]\n"
                       "parameters:\n  PATH: {type: int, min: 1, max: 4, default: 2}\n";
    char *path = write_temp(text);
    space *sp = load_ok(path);
    metric_bound b;
    space_metric_bounds(sp, "tps", &b); /* the space's entry replaces the default */
    EXPECT(b.explicit_ && b.lo == 0 && !b.lo_open && b.hi == 1e7);
    space_metric_bounds(sp, "lat_ms", &b);
    EXPECT(b.explicit_ && isinf(b.lo) && b.lo < 0 && b.hi == 100);
    space_metric_bounds(sp, "ppl", &b); /* a perplexity: > 0 */
    EXPECT(!b.explicit_ && b.lo == 0 && b.lo_open && isinf(b.hi));
    space_metric_bounds(sp, "decode_tps", &b); /* a rate: > 0 */
    EXPECT(b.lo == 0 && b.lo_open);
    space_metric_bounds(sp, "mem", &b); /* relative to the baseline: > 0 */
    EXPECT(b.lo == 0 && b.lo_open);
    space_metric_bounds(sp, "err", &b); /* nothing known: only finite */
    EXPECT(isinf(b.lo) && isinf(b.hi));
    char *json = space_to_json_text(sp);
    EXPECT(strstr(json, "\"bounds\":{\"lat_ms\":[null,100],\"tps\":[0,10000000]}"));
    EXPECT(strstr(json, "\"allow_env\":[\"LD_LIBRARY_PATH\",\"PATH\"]"));
    free(json);
    space_free(sp);
    unlink(path);
    free(path);
    /* Without the optional sections the canonical text has no trace of them. */
    path = write_temp(base_space);
    sp = load_ok(path);
    json = space_to_json_text(sp);
    EXPECT(!strstr(json, "bounds") && !strstr(json, "allow_env"));
    free(json);
    space_free(sp);
    unlink(path);
    free(path);
    char with[1024];
    snprintf(with, sizeof with, "%sbounds: {tps: [0, 1e7]}\n", base_space);
    EXPECT(hash_of_text(with) != hash_of_text(base_space));
    EXPECT(space_study_name_problem("a.b_c-9") == NULL);
    EXPECT(space_study_name_problem("") && space_study_name_problem("-a") &&
           space_study_name_problem("a/b") && space_study_name_problem(".."));
    EXPECT(space_env_risky("LD_PRELOAD") && space_env_risky("PATH") && !space_env_risky("PATHX"));
    EXPECT(space_env_reserved("TUNER_TRIAL") && !space_env_reserved("TUNER_X"));
}

static void test_durations(void) {
    const struct {
        const char *text;
        double seconds; /* 0: must be rejected */
    } cases[] = {
        {"90", 90},      {"2.5", 2.5},   {"90s", 90}, {"10m", 600}, {"8h", 28800}, {"1h30m", 5400},
        {"1d2h", 93600}, {"1.5h", 5400}, {"0", 0},    {"-5", 0},    {"", 0},       {"10x", 0},
        {"h", 0},        {"30m1h", 0},   {"1h1h", 0}, {"5 m", 0},   {" 5", 0},     {"0s", 0},
        {"inf", 0},      {"nan", 0},     {"1h30", 0}, {"+5", 0},    {"0x10", 0},   {"0x1m", 0},
        {"1e3", 1000},   {".5m", 30},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double s = -1;
        int ok = space_parse_duration(cases[i].text, &s);
        if (ok != (cases[i].seconds > 0) || (ok && fabs(s - cases[i].seconds) > 1e-9)) {
            fprintf(stderr, "duration '%s': got ok=%d %g, want %g\n", cases[i].text, ok, s,
                    cases[i].seconds);
            failures++;
        }
    }
}

static void test_lattice(void) {
    space *sp = load_ok("spaces/good_full.yaml");
    char buf[64];
    for (int p = 0; p < sp->n_params; p++) {
        const param_def *pd = &sp->params[p];
        double prev = -1;
        for (int l = 0; l < pd->n_levels; l++) {
            double u = space_param_unit(pd, l);
            EXPECT(u >= 0 && u <= 1 && u > prev); /* increasing with the level */
            prev = u;
            EXPECT(space_param_level(pd, u) == l);
            space_param_value(pd, l, buf, sizeof buf);
            EXPECT(space_param_find(pd, buf) == l);
        }
        EXPECT(space_param_level(pd, -3) == 0 && space_param_level(pd, NAN) == 0);
        EXPECT(space_param_level(pd, 7) == pd->n_levels - 1);
    }
    const param_def *sw = &sp->params[0], *keep = &sp->params[1], *spec = &sp->params[2];
    space_param_value(sw, 3, buf, sizeof buf);
    EXPECT(!strcmp(buf, "152"));
    EXPECT(space_param_find(sw, "130") == -1 && space_param_find(sw, "520") == -1);
    EXPECT(space_param_find(sw, "abc") == -1 && space_param_find(sw, "136x") == -1);
    EXPECT(space_param_find(keep, "4096") == 1 && space_param_find(keep, "40") == -1);
    /* Linear and categorical: equal bins, level i at (i + 0.5) / n. */
    EXPECT(fabs(space_param_unit(keep, 1) - 0.5) < 1e-12);
    EXPECT(space_param_level(keep, 0.33) == 0 && space_param_level(keep, 0.34) == 1);
    /* Log: 1..16, so 4 sits at the middle and 0.5 maps to 4. */
    EXPECT(fabs(space_param_unit(spec, 3) - 0.5) < 1e-12);
    EXPECT(space_param_unit(spec, 0) == 0 && space_param_unit(spec, 15) == 1);
    EXPECT(space_param_level(spec, 0.5) == 3);
    EXPECT(space_param_level(spec, 0.25) == 1); /* 2 = 16^0.25 */
    space_free(sp);

    /* A saturating point count. */
    char text[4096] = "engine: {command: ./e}\nobjective: {metric: tps}\nstrategy: grid\n"
                      "parameters:\n";
    for (int i = 0; i < 8; i++) {
        char line[80];
        snprintf(line, sizeof line, "  P%d: {type: int, min: 0, max: 99999999}\n", i);
        strcat(text, line);
    }
    char *path = write_temp(text);
    sp = load_ok(path);
    EXPECT(space_n_points(sp) == LONG_MAX);
    space_free(sp);
    unlink(path);
    free(path);

    /* A one-level parameter sits in the middle. */
    path = write_temp("engine: {command: ./e}\nobjective: {metric: tps}\n"
                      "parameters: {ONE: {type: int, min: 5, max: 5, log: true}}\n");
    sp = load_ok(path);
    EXPECT(sp->params[0].n_levels == 1 && space_param_unit(&sp->params[0], 0) == 0.5);
    EXPECT(space_param_level(&sp->params[0], 0.9) == 0);
    space_free(sp);
    unlink(path);
    free(path);
}

int main(void) {
    test_good_full();
    test_good_minimal_defaults();
    test_bad_fixtures();
    test_text_cases();
    test_good_variants();
    test_sobol_dimension_limit();
    test_hash();
    test_bounds();
    test_durations();
    test_lattice();
    return test_exit("test_space");
}
