/* space.h: the search space of a study, as loaded from its YAML file (DESIGN.md 4.4).
 *
 * A space says how to run the engine, what to optimise, which constraints make a point
 * feasible, and which knobs to vary. Every knob is a finite lattice: an int parameter has
 * the levels min, min+step, ..., max; a categorical one has its listed values. A point is
 * therefore an array of level indices, one per parameter, and everything downstream
 * (strategies, journal, manifest) speaks in levels and turns them into the strings the
 * engine sees only at the edge (space_param_value).
 *
 * The file format (all keys; unknown keys are errors):
 *
 *   study: demo                      # optional default study name
 *   engine:
 *     command: [./engine, bench]     # argv list (or a single string split on spaces)
 *     workdir: .                     # optional, relative to the space file's folder
 *     env: {MAX_NEW_TOKENS: 512}     # fixed environment, values as strings
 *     timeout: 600                   # seconds per trial (or "10m", "2h")
 *     launcher: "srun -N1 {cmd}"     # optional wrapper template (parallel-trials issue)
 *     result:                        # optional; default: JSON (TUNER_RESULT file or last
 *       regex:                       #   JSON line of stdout). With regex: one per metric,
 *         tps: 'tok/s: ([0-9.]+)'    #   the first capture group is the value.
 *   objective: {metric: tps, direction: maximize}
 *   constraints:                     # "metric op rhs", op in <=, <, >=, >;
 *     - ppl <= 2.42                  #   rhs a number, "baseline", or "F * baseline"
 *     - ppl <= 1.05 * baseline
 *   baseline: {SLIDING_WINDOW: 512}  # point measured first for relative constraints;
 *                                    #   unnamed knobs take their default
 *   parameters:
 *     SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 8, default: 512, log: false}
 *     LM_HEAD_KEEPSET: {type: categorical, values: [0, 4096, 8192], default: 0}
 *   strategy: {name: sobol, seed: 1}   # or just "strategy: grid"
 *   budget: {evaluations: 40, wall_time: 8h}
 *   repeats: 1
 *   verify: {top: 3, repeats: 3, prompt_set: holdout, tolerance: 0.05}
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
