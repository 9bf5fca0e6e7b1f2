/* knobs.h: the engine's knobs, named as in the record's manifest (DESIGN.md section 5), in one
 * struct that every command reads once and passes on whole.
 *
 * Every knob comes from an environment variable of its own name (that is how the tuner passes a
 * point: SLIDING_WINDOW=188 ...); a command-line flag of the same name in lower case with dashes
 * (--sliding-window 188) overrides it. Values are parsed strictly (a whole decimal integer, in
 * range) and every error names where the bad value came from. Checks that need the model (a window
 * or a length above what the model supports) run once it is loaded, in knobs_check_model().
 * A knob is never silently ignored: an unknown or unusable value is an error, or a sweep would
 * measure the same engine under different names.
 *
 * The serving knobs reach the engine by one road: serve_open (serve.h) builds the decoder
 * (SLIDING_WINDOW, MAX_MODEL_LEN, threads, device), the head (LM_HEAD_KEEPSET) and the drafter
 * (NUM_SPECULATIVE_TOKENS, CENTROID_TOP_K) from this struct; the bench protocol reads
 * WARMUP_NUM_PROMPTS, MAX_NEW_TOKENS and TUNER_PROMPT_SET. The precision knobs WEIGHT_DTYPE and
 * WEIGHT_GROUP reach the model loader (model_load_prec), HEAD_DTYPE the head (quant.h says what
 * they mean). */
#ifndef KNOBS_H
#define KNOBS_H

#include <stddef.h>

#include "engine.h"
#include "quant.h"

#define KNOBS_DEFAULT_MAX_NEW_TOKENS 512
#define KNOBS_DEFAULT_WARMUP_PROMPTS 4
#define KNOBS_DEFAULT_CENTROID_TOP_K 0  /* unset: the assistant's centroid_intermediate_top_k */
#define KNOBS_DEFAULT_WEIGHT_GROUP   32 /* WEIGHT_GROUP when quantizing at load */

typedef struct {
    int sliding_window;         /* SLIDING_WINDOW: 0 = unset (the model's native window) */
    int num_speculative_tokens; /* NUM_SPECULATIVE_TOKENS: 0 = no speculation */
    int centroid_top_k;         /* CENTROID_TOP_K: clusters the drafter's head scores */
    int lm_head_keepset;        /* LM_HEAD_KEEPSET: 0 = full vocabulary */
    int warmup_num_prompts;     /* WARMUP_NUM_PROMPTS: untimed prompts before the timed set */
    int max_new_tokens;         /* MAX_NEW_TOKENS: new tokens per prompt (EOS ignored in bench) */
    int max_model_len;          /* MAX_MODEL_LEN: 0 = unset (the model's max positions) */
    int n_threads;              /* --threads: CPU threads; 0 = OpenMP's default */
    char prompt_set[16];        /* TUNER_PROMPT_SET: "tune" or "holdout" */
    char device[8];             /* ENGINE_DEVICE / --device: "cpu" (default) or "cuda" */
    quant_dtype weight_dtype;   /* WEIGHT_DTYPE: q/k/v/o/gate/up/down; QUANT_BF16 = as stored */
    int weight_group;           /* WEIGHT_GROUP: 32, 64, 128; 0 = unset (32 when quantizing at
                                   load, the checkpoint's own for a pre-quantized one) */
    quant_dtype head_dtype;     /* HEAD_DTYPE: the lm-head rows (after LM_HEAD_KEEPSET) */
} knobs;

/* The defaults: every knob unset or at its documented default. */
void knobs_init(knobs *k);

/* Read every knob variable present in the environment. Returns 0, or -1 with err naming the
 * variable and the problem. */
int knobs_from_env(knobs *k, char *err, size_t errlen);

/* Set one knob by its flag name without dashes ("sliding-window") or its variable name
 * ("SLIDING_WINDOW"). origin says where the value came from, for messages ("flag
 * --sliding-window", "environment variable SLIDING_WINDOW"). Returns 0; 1 when name is not a knob
 * (err untouched); -1 with err on a bad value. */
int knobs_set(knobs *k, const char *name, const char *value, const char *origin, char *err,
              size_t errlen);

/* WEIGHT_GROUP as used when quantizing at load (the default when unset). */
int knobs_weight_group(const knobs *k);

/* The checks that need the model: a window or MAX_MODEL_LEN above the model's positions and,
 * when generating (bench, generate; not ppl), MAX_NEW_TOKENS that leaves no room for a prompt.
 * Returns 0 or -1 with err. */
int knobs_check_model(const knobs *k, int model_max_positions, int generating, char *err,
                      size_t errlen);

/* The effective values once the model is known (unset = the model's). */
int knobs_window(const knobs *k, int model_native_window);
int knobs_max_model_len(const knobs *k, int model_max_positions);

/* The decoder options these knobs ask for (engine.h; MAX_MODEL_LEN 0 = unset). */
engine_options knobs_options(const knobs *k);

/* One line per knob (flag, variable, meaning) for --help. */
void knobs_print_help(void);

#endif
