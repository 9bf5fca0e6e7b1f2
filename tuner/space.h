/* space.h: the search space of a study, as loaded from its YAML file (DESIGN.md 4.4).
 *
 * A space says how to run the engine, what to optimise, which constraints make a point
 * feasible, and which knobs to vary. Every knob is a finite lattice: an int parameter has
 * the levels min, min+step, ..., max; a categorical one has its listed values. A point is
 * therefore an array of level indices, one per parameter, and everything downstream
 * (strategies, journal, manifest) speaks in levels and turns them into the strings the
 * engine sees only at the edge (space_param_value).
 *
 * The file format (all keys; unknown keys are errors; sections may come in any order):
 *
 *   study: demo                      # optional default study name ([A-Za-z0-9._-]+)
 *   engine:                          # required
 *     command: [./engine, bench]     # required: argv list (or one string split on
 *                                    #   whitespace, no quoting)
 *     workdir: .                     # optional, relative to the space file's folder
 *     env: {MAX_NEW_TOKENS: 512}     # fixed environment, values as strings
 *     timeout: 600                   # per trial, a duration (default 600 s)
 *     launcher: "srun -N1 {cmd}"     # optional wrapper template (parallel-trials issue)
 *     result:                        # optional; default "json": the TUNER_RESULT file or
 *       regex:                       #   the last JSON line of stdout. With regex: one
 *         tps: 'tok/s: ([0-9.]+)'    #   POSIX extended pattern per metric, compiled at
 *                                    #   load; the first capture group is the value; the
 *                                    #   objective and every constraint metric need one.
 *   objective: {metric: tps, direction: maximize}  # required; direction maximize (the
 *                                    #   default) or minimize
 *   constraints:                     # "metric op rhs", op in <=, <, >=, >;
 *     - ppl <= 2.42                  #   rhs a number, "baseline", or "F * baseline" with
 *     - ppl <= 1.05 * baseline       #   F > 0 (metrics with relative bounds are positive)
 *   baseline: {SLIDING_WINDOW: 512}  # point measured first; required by relative
 *                                    #   constraints; unnamed knobs take their default
 *                                    #   ("baseline: {}" = all defaults)
 *   parameters:                      # required, at least one; names are env variables
 *     SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 8, default: 512, log: false}
 *     LM_HEAD_KEEPSET: {type: categorical, values: [0, 4096, 8192], default: 0}
 *   strategy: {name: sobol, seed: 1} # or just "strategy: grid" (default: sobol, seed 0)
 *   budget: {evaluations: 40, wall_time: 8h}  # both optional; none: until exhausted
 *   repeats: 1                       # runs per point, 1..1000
 *   verify: {top: 3, repeats: 3, prompt_set: holdout, tolerance: 0.05}  # the defaults
 *
 * Details: an int parameter needs type, min and max (step defaults to 1); max must be
 * min + k*step, |values| <= 2^53, log: true needs min > 0. A categorical parameter needs a
 * non-empty list of distinct scalar values without ',' '=' or control characters (they
 * appear in point keys). A default must be a level. Numbers must be plain YAML scalars: a
 * quoted "3" is a string and is refused where a number is needed. Durations are seconds
 * (90, 2.5) or units in decreasing order ("90s", "10m", "8h", "1h30m", "2d"). Two
 * constraints on one metric whose bounds cannot both hold (both absolute, or both relative)
 * are an error. Sobol handles at most 40 parameters.
 *
 * Errors read "FILE:LINE: key 'PATH': problem", PATH the dotted key path, e.g.
 * "space.yaml:12: key 'parameters.SLIDING_WINDOW.step': step must be > 0, got 0", with the
 * line of the offending key or value (of the enclosing key for a missing one). YAML syntax
 * errors read "FILE:LINE: YAML syntax error: <libyaml's message>".
 */
#ifndef SPACE_H
#define SPACE_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { PARAM_INT, PARAM_CATEGORICAL } param_kind;

typedef struct {
    char *name; /* the environment variable the engine reads, e.g. SLIDING_WINDOW */
    param_kind kind;
    long min, max, step; /* PARAM_INT: levels are min + i*step, i = 0..n_levels-1 */
    bool log_scale;      /* PARAM_INT: map to the unit interval on a log scale */
    char **values;       /* PARAM_CATEGORICAL: [n_levels] the values, as strings */
    int n_levels;
    int default_level; /* -1 when the file gives no default */
    int line;          /* line of the parameter in the space file, for messages */
} param_def;

typedef enum { OP_LE, OP_LT, OP_GE, OP_GT } cmp_op;

typedef struct {
    char *metric; /* e.g. "ppl" */
    cmp_op op;
    double value;  /* absolute bound, or the factor when relative */
    bool relative; /* bound = value * (metric measured at the baseline point) */
    char *text;    /* as written, for messages and reports */
    int line;
} constraint_def;

typedef struct {
    char *metric;  /* metric name */
    char *pattern; /* POSIX extended regex; first capture group is the value */
    regex_t re;    /* compiled at load time (REG_EXTENDED); freed by space_free */
} metric_regex;

typedef struct {
    char *key, *value;
} env_pair;

typedef struct {
    char *path;  /* the file it was loaded from */
    char *dir;   /* its folder: relative workdir and command paths resolve against it */
    char *study; /* default study name (NULL: derived from the file name) */

    /* engine */
    char **argv; /* NULL-terminated */
    int argc;
    char *workdir; /* NULL: the space file's folder */
    env_pair *env;
    int n_env;
    double timeout_s;
    char *launcher;      /* NULL or a template containing {cmd} */
    metric_regex *regex; /* n_regex == 0: JSON results */
    int n_regex;

    /* what to optimise */
    char *objective;
    bool maximize;
    constraint_def *constraints;
    int n_constraints;
    int *baseline; /* [n_params] levels, or NULL when there is no baseline */

    param_def *params;
    int n_params;

    char *strategy; /* "grid", "sobol", "bayes" */
    uint64_t seed;
    long max_evaluations; /* 0: no limit (the strategy's own end, e.g. grid exhausted) */
    double max_wall_s;    /* 0: no limit */
    int repeats;          /* runs per point, >= 1; the median is the point's value */

    /* verification of the best candidates on held-out prompts (later issue) */
    int verify_top;
    int verify_repeats;
    char *verify_prompt_set;
    double verify_tolerance;

    uint64_t hash; /* of the canonical form (space_to_json), not of the raw bytes */
} space;

/* Load and validate a space file. On error returns NULL and writes into err a message of
 * the form "FILE:LINE: key 'K': problem". */
space *space_load(const char *path, char *err, size_t errlen);
void space_free(space *sp);

/* Lattice helpers. */
long space_n_points(const space *sp); /* product of n_levels (saturates at LONG_MAX) */
/* The value of a level as the engine sees it (into buf). */
void space_param_value(const param_def *p, int level, char *buf, size_t n);
/* Position of a level in [0,1] (log-scaled where asked; categoricals by index). */
double space_param_unit(const param_def *p, int level);
/* The level nearest to a unit position (inverse of space_param_unit). */
int space_param_level(const param_def *p, double unit);
/* Find the level whose value string equals s; -1 if none. */
int space_param_find(const param_def *p, const char *s);
/* "K1=V1,K2=V2" in parameter order: the point's identity in journals and messages. */
char *space_point_key(const space *sp, const int *levels);

/* Parse a duration: a plain number of seconds ("90", "2.5") or units in decreasing order
 * ("90s", "10m", "8h", "1h30m", "2d"). Returns 1 and sets *seconds (> 0) on success, 0 on a
 * malformed or non-positive duration. */
int space_parse_duration(const char *s, double *seconds);

/* Canonical JSON text of the loaded space (keys in a fixed order, no comments): what the
 * hash covers and what the study folder snapshots. Caller frees. */
char *space_to_json_text(const space *sp);
/* 64-bit FNV-1a of a text: the space's hash is this of space_to_json_text. */
uint64_t space_hash_text(const char *text);

#endif
