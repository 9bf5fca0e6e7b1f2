/* knobs.c: the engine's knobs from the environment and flags, with their checks (see knobs.h).
 *
 * One table describes every integer knob: its variable, its flag, where it lives in the struct and
 * its smallest valid value. Parsing, checking and help all read the table, so a new knob is one
 * line here. */
#include "knobs.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *var;  /* environment variable (NULL: flag only) */
    const char *flag; /* flag without its leading dashes */
    size_t offset;    /* of the int field in knobs */
    int min;          /* smallest valid value */
    const char *help;
} knob_def;

static const knob_def knob_defs[] = {
    {"SLIDING_WINDOW", "sliding-window", offsetof(knobs, sliding_window), 1,
     "window of the sliding-attention layers in tokens (default: the model's)"},
    {"NUM_SPECULATIVE_TOKENS", "num-speculative-tokens", offsetof(knobs, num_speculative_tokens), 0,
     "draft tokens per speculative step (0 = none; the drafter is MODEL_DIR-assistant)"},
    {"CENTROID_TOP_K", "centroid-top-k", offsetof(knobs, centroid_top_k), 1,
     "drafter head clusters scored (default: the assistant's config; speed only)"},
    {"LM_HEAD_KEEPSET", "lm-head-keepset", offsetof(knobs, lm_head_keepset), 0,
     "keep the N most frequent tokens (MODEL_DIR/keepset.txt) in the head (0 = all)"},
    {"WARMUP_NUM_PROMPTS", "warmup-num-prompts", offsetof(knobs, warmup_num_prompts), 0,
     "untimed warm-up prompts before the timed set (default 4)"},
    {"MAX_NEW_TOKENS", "max-new-tokens", offsetof(knobs, max_new_tokens), 1,
     "new tokens per prompt (default 512; bench ignores end-of-sequence)"},
    {"MAX_MODEL_LEN", "max-model-len", offsetof(knobs, max_model_len), 1,
     "KV cache capacity in positions (default: the model's maximum)"},
    {NULL, "threads", offsetof(knobs, n_threads), 1,
     "CPU threads (default: OpenMP's, e.g. OMP_NUM_THREADS)"},
};
#define N_KNOB_DEFS (sizeof knob_defs / sizeof knob_defs[0])

void knobs_init(knobs *k) {
    memset(k, 0, sizeof *k);
    k->centroid_top_k = KNOBS_DEFAULT_CENTROID_TOP_K;
    k->warmup_num_prompts = KNOBS_DEFAULT_WARMUP_PROMPTS;
    k->max_new_tokens = KNOBS_DEFAULT_MAX_NEW_TOKENS;
    snprintf(k->prompt_set, sizeof k->prompt_set, "tune");
    snprintf(k->device, sizeof k->device, "cpu");
}

/* A whole decimal integer that fits an int: no sign-only, no spaces, no trailing junk. */
static int parse_int(const char *s, int *out) {
    if (!*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || errno == ERANGE || v < INT_MIN || v > INT_MAX) return -1;
    *out = (int)v;
    return 0;
}

static int set_prompt_set(knobs *k, const char *value, const char *origin, char *err,
                          size_t errlen) {
    if (strcmp(value, "tune") && strcmp(value, "holdout")) {
        snprintf(err, errlen, "%s=\"%s\": must be \"tune\" or \"holdout\"", origin, value);
        return -1;
    }
    snprintf(k->prompt_set, sizeof k->prompt_set, "%s", value);
    return 0;
}

static int set_device(knobs *k, const char *value, const char *origin, char *err, size_t errlen) {
    if (strcmp(value, "cpu") && strcmp(value, "cuda")) {
        snprintf(err, errlen, "%s=\"%s\": must be \"cpu\" or \"cuda\"", origin, value);
        return -1;
    }
    snprintf(k->device, sizeof k->device, "%s", value);
    return 0;
}

/* WEIGHT_DTYPE / HEAD_DTYPE / WEIGHT_GROUP: named values (quant.h's parsers and messages). */
static int set_precision(knobs *k, const char *name, const char *value, const char *origin,
                         char *err, size_t errlen) {
    if (!strcmp(name, "WEIGHT_GROUP") || !strcmp(name, "weight-group"))
        return quant_group_parse(origin, value, &k->weight_group, err, errlen);
    int head = !strcmp(name, "HEAD_DTYPE") || !strcmp(name, "head-dtype");
    return quant_dtype_parse(origin, value, head ? &k->head_dtype : &k->weight_dtype, err, errlen);
}

static int is_precision(const char *name) {
    static const char *const names[] = {"WEIGHT_DTYPE", "weight-dtype", "WEIGHT_GROUP",
                                        "weight-group", "HEAD_DTYPE",   "head-dtype"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) return 1;
    return 0;
}

static const knob_def *knob_find(const char *name) {
    for (size_t i = 0; i < N_KNOB_DEFS; i++) {
        const knob_def *d = &knob_defs[i];
        if (!strcmp(name, d->flag) || (d->var && !strcmp(name, d->var))) return d;
    }
    return NULL;
}

int knobs_set(knobs *k, const char *name, const char *value, const char *origin, char *err,
              size_t errlen) {
    if (!strcmp(name, "TUNER_PROMPT_SET") || !strcmp(name, "prompt-set"))
        return set_prompt_set(k, value, origin, err, errlen);
    if (!strcmp(name, "ENGINE_DEVICE") || !strcmp(name, "device"))
        return set_device(k, value, origin, err, errlen);
    if (is_precision(name)) return set_precision(k, name, value, origin, err, errlen);
    const knob_def *d = knob_find(name);
    if (!d) return 1;
    int v;
    if (parse_int(value, &v)) {
        snprintf(err, errlen, "%s=\"%s\": not an integer", origin, value);
        return -1;
    }
    if (v < d->min) {
        snprintf(err, errlen, "%s=%d: must be at least %d (%s)", origin, v, d->min, d->help);
        return -1;
    }
    *(int *)((char *)k + d->offset) = v;
    return 0;
}

int knobs_from_env(knobs *k, char *err, size_t errlen) {
    const char *set = getenv("TUNER_PROMPT_SET");
    if (set && set_prompt_set(k, set, "environment variable TUNER_PROMPT_SET", err, errlen))
        return -1;
    const char *dev = getenv("ENGINE_DEVICE");
    if (dev && set_device(k, dev, "environment variable ENGINE_DEVICE", err, errlen)) return -1;
    static const char *const prec[] = {"WEIGHT_DTYPE", "WEIGHT_GROUP", "HEAD_DTYPE"};
    for (size_t i = 0; i < sizeof prec / sizeof prec[0]; i++) {
        const char *v = getenv(prec[i]);
        char origin[64];
        snprintf(origin, sizeof origin, "environment variable %s", prec[i]);
        if (v && set_precision(k, prec[i], v, origin, err, errlen)) return -1;
    }
    for (size_t i = 0; i < N_KNOB_DEFS; i++) {
        const knob_def *d = &knob_defs[i];
        const char *v = d->var ? getenv(d->var) : NULL;
        if (!v) continue;
        char origin[96];
        snprintf(origin, sizeof origin, "environment variable %s", d->var);
        if (knobs_set(k, d->var, v, origin, err, errlen)) return -1;
    }
    return 0;
}

int knobs_weight_group(const knobs *k) {
    return k->weight_group ? k->weight_group : KNOBS_DEFAULT_WEIGHT_GROUP;
}

int knobs_check_model(const knobs *k, int model_max_positions, int generating, char *err,
                      size_t errlen) {
    if (k->sliding_window > model_max_positions) {
        snprintf(err, errlen,
                 "SLIDING_WINDOW=%d is above the model's maximum of %d positions "
                 "(max_position_embeddings)",
                 k->sliding_window, model_max_positions);
        return -1;
    }
    if (k->max_model_len > model_max_positions) {
        snprintf(err, errlen,
                 "MAX_MODEL_LEN=%d is above the model's maximum of %d positions "
                 "(max_position_embeddings)",
                 k->max_model_len, model_max_positions);
        return -1;
    }
    int len = knobs_max_model_len(k, model_max_positions);
    if (generating && k->max_new_tokens >= len) {
        snprintf(err, errlen,
                 "MAX_NEW_TOKENS=%d leaves no room for a prompt within MAX_MODEL_LEN=%d "
                 "(a prompt may have at most MAX_MODEL_LEN - MAX_NEW_TOKENS tokens)",
                 k->max_new_tokens, len);
        return -1;
    }
    return 0;
}

int knobs_window(const knobs *k, int model_native_window) {
    return k->sliding_window ? k->sliding_window : model_native_window;
}

int knobs_max_model_len(const knobs *k, int model_max_positions) {
    return k->max_model_len ? k->max_model_len : model_max_positions;
}

engine_options knobs_options(const knobs *k) {
    engine_options o = {0};
    o.sliding_window = k->sliding_window;
    o.max_model_len = k->max_model_len;
    o.n_threads = k->n_threads;
    o.device = k->device;
    return o;
}

void knobs_print_help(void) {
    fprintf(stderr, "Knobs (environment variable, or the flag, which overrides it):\n");
    for (size_t i = 0; i < N_KNOB_DEFS; i++) {
        const knob_def *d = &knob_defs[i];
        fprintf(stderr, "  --%-24s %-24s %s\n", d->flag, d->var ? d->var : "", d->help);
    }
    fprintf(stderr, "  --%-24s %-24s %s\n", "prompt-set", "TUNER_PROMPT_SET",
            "tune or holdout: which set --data reads (default tune)");
    fprintf(stderr, "  --%-24s %-24s %s\n", "device", "ENGINE_DEVICE",
            "cpu or cuda: where the model runs (default cpu)");
    fprintf(stderr, "  --%-24s %-24s %s\n", "weight-dtype", "WEIGHT_DTYPE",
            "bf16, int8 or int4: q/k/v/o/gate/up/down (default bf16: as stored)");
    fprintf(stderr, "  --%-24s %-24s %s\n", "weight-group", "WEIGHT_GROUP",
            "32, 64 or 128: input columns per scale when quantizing (default 32)");
    fprintf(stderr, "  --%-24s %-24s %s\n", "head-dtype", "HEAD_DTYPE",
            "bf16, int8 or int4: the lm-head rows kept (default bf16)");
}
