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
 *   study: demo                      # optional default study name (see "Study names")
 *   engine:                          # required
 *     command: [./engine, bench]     # required: argv list (or one string split on
 *                                    #   whitespace, no quoting)
 *     workdir: .                     # optional, relative to the space file's folder
 *     env: {MAX_NEW_TOKENS: 512}     # fixed environment, values as strings
 *     timeout: 600                   # per trial, a duration (default 600 s)
 *     launcher: "srun -N1 {cmd}"     # optional wrapper template around the command, or
 *                                    #   {slurm: {partition: P, gres: G, time: T, extra:
 *                                    #   [...]}}: each trial a Slurm job (space_slurm.c)
 *     result:                        # optional; default "json": the TUNER_RESULT file or
 *       regex:                       #   the last JSON line of stdout. With regex: one
 *         tps: 'tok/s: ([0-9.]+)'    #   POSIX extended pattern per metric, compiled at
 *                                    #   load; the first capture group is the value; the
 *                                    #   objective and every constraint metric need one;
 *                                    #   at most 1000 characters, no two repetition
 *                                    #   operators in a row, counts up to 255 whose
 *                                    #   product stays under 10000 (regcomp's memory).
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
 *   verify: {top: 3, repeats: 3, max_repeats: 10, confidence: 0.95, precision: 0.02,
 *            max_candidates: 9, prompt_set: holdout, tolerance: 0.05}  # the defaults
 *                                    #   (max_candidates: 3 * top unless given; see verify.h)
 *   bounds: {tps: [0, 1e7], ppl: [1, null]}  # optional sanity bounds per metric (below)
 *   allow_env: [LD_LIBRARY_PATH]     # optional: risky names a knob or engine.env may use
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
 * Study names (`study:` here, `tuner sweep --study NAME`, and the space file's name when
 * neither is given): letters, digits, '.', '_' and '-', not starting with '-' or '.', at
 * most 100 characters.
 *
 * Metric bounds: every metric the tuner judges (the objective, each constraint metric, and
 * each metric named in `bounds` when the engine reports it as a number) must be a finite
 * number. By default it must also be > 0 when it is a rate or a perplexity, that is when
 * its name is tps or ppl or ends in _tps or _ppl, and when a constraint bounds it relative
 * to the baseline; other metrics have no default bounds. An entry of `bounds` replaces the
 * default of its metric: [lo, hi], both inclusive, null for no bound on that side (lo <= hi,
 * both finite). A value outside its bounds fails the trial with a reason naming the metric,
 * the value and the bound. A metric reported as null with a "reason" is infinite
 * (infeasible, not failed) and is not checked against bounds.
 *
 * Environment names: a knob or an engine.env entry may not be named TUNER_RESULT,
 * TUNER_TRIAL or TUNER_PROMPT_SET (the tuner sets those). Names the dynamic loader or a
 * shell acts on (PATH, IFS, ENV, BASH_ENV, SHELLOPTS, BASHOPTS, PS4, CDPATH, GLOBIGNORE,
 * PROMPT_COMMAND, GCONV_PATH, LOCPATH, NLSPATH, HOSTALIASES, LD_*, BASH_FUNC_*) are refused
 * as knob and engine.env names unless `allow_env` lists them; the manifest carries that list,
 * and `tuner env` refuses to export such a name that it does not list.
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
    char *metric;
    double lo, hi; /* inclusive; -INFINITY / INFINITY where the file says null */
    int line;
} bounds_def;

/* The bounds a metric's value must meet (see "Metric bounds" above). */
typedef struct {
    double lo, hi;
    bool lo_open;   /* lo itself is out (the default "> 0") */
    bool explicit_; /* from the space's `bounds` */
} metric_bound;

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
    /* NULL, or the launcher's map form {slurm: {...}} (slurm.h) */
    struct slurm_launcher *slurm;

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

    /* verification of the best candidates on held-out prompts, paired with the baseline
     * (verify.h) */
    int verify_top;            /* candidates verified side by side */
    int verify_repeats;        /* pairs each candidate gets at least (>= 2 for an interval) */
    int verify_max_repeats;    /* pairs each candidate gets at most */
    int verify_max_candidates; /* candidates tried down the ranking in all */
    double verify_confidence;  /* of the speed-up's interval, in (0, 1) */
    double verify_precision;   /* stop a candidate's pairs once the half-width is under this */
    char *verify_prompt_set;
    double verify_tolerance;

    bounds_def *bounds; /* [n_bounds] the `bounds` section */
    int n_bounds;
    char **allow_env; /* [n_allow_env] risky environment names the space may use */
    int n_allow_env;

    uint64_t hash; /* of the canonical form (space_to_json), not of the raw bytes */
} space;

/* Load and validate a space file. On error returns NULL and writes into err a message of
 * the form "FILE:LINE: key 'K': problem". */
space *space_load(const char *path, char *err, size_t errlen);
void space_free(space *sp);

/* The bounds of a metric's value (the space's entry, else the default). */
void space_metric_bounds(const space *sp, const char *metric, metric_bound *b);

/* Names the tuner sets for the engine (TUNER_RESULT, TUNER_TRIAL, TUNER_PROMPT_SET). */
bool space_env_reserved(const char *name);
/* Names the dynamic loader or shells act on (PATH, LD_*, BASH_ENV, ...). */
bool space_env_risky(const char *name);
/* What is wrong with a study name (see "Study names"), or NULL when it is fine. */
const char *space_study_name_problem(const char *name);
/* The strategy names a space may give (NULL-terminated): grid, sobol, bayes. strategy.c has one
 * implementation for each. */
extern const char *const space_strategy_names[];
bool space_strategy_known(const char *name);

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
