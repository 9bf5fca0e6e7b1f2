/* test_knobs.c: the engine's knobs (engine/knobs.c): defaults, the environment, flags that
 * override it, and every refusal (zero or negative values, non-numbers,
 * values above what the model allows), each with a message naming the knob and its origin; the
 * precision knobs (WEIGHT_DTYPE, WEIGHT_GROUP, HEAD_DTYPE: named values). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knobs.h"
#include "../test_util.h"

static const char *all_vars[] = {
    "SLIDING_WINDOW",     "NUM_SPECULATIVE_TOKENS", "CENTROID_TOP_K", "LM_HEAD_KEEPSET",
    "WARMUP_NUM_PROMPTS", "MAX_NEW_TOKENS",         "MAX_MODEL_LEN",  "TUNER_PROMPT_SET",
    "WEIGHT_DTYPE",       "WEIGHT_GROUP",           "HEAD_DTYPE",     "ENGINE_DEVICE"};

static void env_clear(void) {
    for (size_t i = 0; i < sizeof all_vars / sizeof all_vars[0]; i++)
        unsetenv(all_vars[i]);
}

/* Setting var=value in the environment must fail with a message holding every needle. */
static void expect_env_error(const char *var, const char *value, const char *needle) {
    env_clear();
    setenv(var, value, 1);
    knobs k;
    knobs_init(&k);
    char err[512] = "";
    int rc = knobs_from_env(&k, err, sizeof err);
    EXPECT(rc == -1);
    if (!strstr(err, var) || !strstr(err, needle) || !strstr(err, "environment variable")) {
        fprintf(stderr, "env %s=%s: want \"%s\", got \"%s\"\n", var, value, needle, err);
        failures++;
    }
    env_clear();
}

static void test_defaults(void) {
    env_clear();
    knobs k;
    knobs_init(&k);
    char err[256];
    EXPECT(knobs_from_env(&k, err, sizeof err) == 0);
    EXPECT(k.sliding_window == 0 && k.max_model_len == 0);
    EXPECT(k.max_new_tokens == 512 && k.warmup_num_prompts == KNOBS_DEFAULT_WARMUP_PROMPTS);
    EXPECT(k.num_speculative_tokens == 0 && k.lm_head_keepset == 0);
    EXPECT(k.centroid_top_k == KNOBS_DEFAULT_CENTROID_TOP_K);
    EXPECT(!strcmp(k.prompt_set, "tune"));
    EXPECT(knobs_window(&k, 512) == 512 && knobs_max_model_len(&k, 4096) == 4096);
    EXPECT(knobs_check_model(&k, 4096, 1, err, sizeof err) == 0);
}

static void test_env_and_flags(void) {
    env_clear();
    setenv("SLIDING_WINDOW", "188", 1);
    setenv("MAX_NEW_TOKENS", "64", 1);
    setenv("WARMUP_NUM_PROMPTS", "0", 1);
    setenv("MAX_MODEL_LEN", "1024", 1);
    setenv("TUNER_PROMPT_SET", "holdout", 1);
    setenv("NUM_SPECULATIVE_TOKENS", "7", 1);
    setenv("LM_HEAD_KEEPSET", "12000", 1);
    setenv("CENTROID_TOP_K", "49", 1);
    knobs k;
    knobs_init(&k);
    char err[512];
    EXPECT(knobs_from_env(&k, err, sizeof err) == 0);
    EXPECT(k.sliding_window == 188 && k.max_new_tokens == 64 && k.warmup_num_prompts == 0);
    EXPECT(k.max_model_len == 1024 && !strcmp(k.prompt_set, "holdout"));
    EXPECT(k.num_speculative_tokens == 7 && k.lm_head_keepset == 12000 && k.centroid_top_k == 49);
    /* A flag overrides the environment; both spellings of the name work. */
    EXPECT(knobs_set(&k, "sliding-window", "160", "flag --sliding-window", err, sizeof err) == 0);
    EXPECT(k.sliding_window == 160);
    EXPECT(knobs_set(&k, "MAX_NEW_TOKENS", "8", "flag", err, sizeof err) == 0);
    EXPECT(k.max_new_tokens == 8);
    EXPECT(knobs_set(&k, "threads", "3", "flag --threads", err, sizeof err) == 0);
    EXPECT(k.n_threads == 3);
    EXPECT(knobs_set(&k, "prompt-set", "tune", "flag --prompt-set", err, sizeof err) == 0);
    EXPECT(!strcmp(k.prompt_set, "tune"));
    EXPECT(knobs_set(&k, "no-such-knob", "1", "flag --no-such-knob", err, sizeof err) == 1);
    engine_options o = knobs_options(&k);
    EXPECT(o.sliding_window == 160 && o.max_model_len == 1024 && o.n_threads == 3);
    EXPECT(knobs_window(&k, 512) == 160 && knobs_max_model_len(&k, 4096) == 1024);
    env_clear();
}

static void test_env_errors(void) {
    expect_env_error("SLIDING_WINDOW", "0", "must be at least 1");
    expect_env_error("SLIDING_WINDOW", "-5", "must be at least 1");
    expect_env_error("SLIDING_WINDOW", "abc", "not an integer");
    expect_env_error("SLIDING_WINDOW", "12x", "not an integer");
    expect_env_error("SLIDING_WINDOW", "", "not an integer");
    expect_env_error("SLIDING_WINDOW", " 12", "not an integer");
    expect_env_error("SLIDING_WINDOW", "99999999999999", "not an integer");
    expect_env_error("MAX_NEW_TOKENS", "0", "must be at least 1");
    expect_env_error("MAX_NEW_TOKENS", "-1", "must be at least 1");
    expect_env_error("WARMUP_NUM_PROMPTS", "-1", "must be at least 0");
    expect_env_error("MAX_MODEL_LEN", "-100", "must be at least 1");
    expect_env_error("NUM_SPECULATIVE_TOKENS", "-1", "must be at least 0");
    expect_env_error("LM_HEAD_KEEPSET", "-3", "must be at least 0");
    expect_env_error("CENTROID_TOP_K", "0", "must be at least 1");
    expect_env_error("TUNER_PROMPT_SET", "test", "\"tune\" or \"holdout\"");

    knobs k;
    knobs_init(&k);
    char err[512] = "";
    EXPECT(knobs_set(&k, "sliding-window", "-2", "flag --sliding-window", err, sizeof err) == -1);
    EXPECT(strstr(err, "flag --sliding-window=-2"));
    EXPECT(k.sliding_window == 0);
}

static void test_model_checks(void) {
    knobs k;
    knobs_init(&k);
    char err[512] = "";
    k.sliding_window = 4096;
    EXPECT(knobs_check_model(&k, 4096, 1, err, sizeof err) == 0);
    k.sliding_window = 4097;
    EXPECT(knobs_check_model(&k, 4096, 1, err, sizeof err) == -1);
    EXPECT(strstr(err, "SLIDING_WINDOW=4097") && strstr(err, "4096"));
    k.sliding_window = 0;
    k.max_model_len = 8192;
    EXPECT(knobs_check_model(&k, 4096, 1, err, sizeof err) == -1);
    EXPECT(strstr(err, "MAX_MODEL_LEN=8192"));
    k.max_model_len = 512;
    k.max_new_tokens = 512;
    EXPECT(knobs_check_model(&k, 4096, 1, err, sizeof err) == -1);
    EXPECT(strstr(err, "MAX_NEW_TOKENS=512") && strstr(err, "MAX_MODEL_LEN=512"));
    EXPECT(knobs_check_model(&k, 4096, 0, err, sizeof err) == 0); /* ppl makes no new tokens */
    k.max_new_tokens = 511;
    EXPECT(knobs_check_model(&k, 4096, 1, err, sizeof err) == 0);
}

static void test_precision(void) {
    env_clear();
    knobs k;
    knobs_init(&k);
    char err[512] = "";
    EXPECT(k.weight_dtype == QUANT_BF16 && k.head_dtype == QUANT_BF16 && k.weight_group == 0);
    EXPECT(knobs_weight_group(&k) == KNOBS_DEFAULT_WEIGHT_GROUP &&
           KNOBS_DEFAULT_WEIGHT_GROUP == 32);
    setenv("WEIGHT_DTYPE", "int4", 1);
    setenv("WEIGHT_GROUP", "128", 1);
    setenv("HEAD_DTYPE", "int8", 1);
    EXPECT(knobs_from_env(&k, err, sizeof err) == 0, "%s", err);
    EXPECT(k.weight_dtype == QUANT_INT4 && k.weight_group == 128 && k.head_dtype == QUANT_INT8);
    EXPECT(knobs_weight_group(&k) == 128);
    /* flags override */
    EXPECT(knobs_set(&k, "weight-dtype", "int8", "flag --weight-dtype", err, sizeof err) == 0);
    EXPECT(knobs_set(&k, "weight-group", "64", "flag --weight-group", err, sizeof err) == 0);
    EXPECT(knobs_set(&k, "head-dtype", "bf16", "flag --head-dtype", err, sizeof err) == 0);
    EXPECT(k.weight_dtype == QUANT_INT8 && k.weight_group == 64 && k.head_dtype == QUANT_BF16);
    env_clear();
    /* bad values name the knob, its origin and the allowed values */
    expect_env_error("WEIGHT_DTYPE", "int3", "bf16, int8, int4");
    expect_env_error("WEIGHT_DTYPE", "INT4", "bf16, int8, int4");
    expect_env_error("HEAD_DTYPE", "fp8", "bf16, int8, int4");
    expect_env_error("WEIGHT_GROUP", "48", "32, 64, 128");
    expect_env_error("WEIGHT_GROUP", "", "32, 64, 128");
    EXPECT(knobs_set(&k, "weight-group", "16", "flag --weight-group", err, sizeof err) == -1);
    EXPECT(strstr(err, "flag --weight-group") && strstr(err, "\"16\"") && strstr(err, "128"), "%s",
           err);
    EXPECT(k.weight_group == 64);
    EXPECT(knobs_set(&k, "head-dtype", "int2", "flag --head-dtype", err, sizeof err) == -1);
    EXPECT(strstr(err, "flag --head-dtype") && strstr(err, "int2"), "%s", err);
}

int main(void) {
    test_defaults();
    test_precision();
    test_env_and_flags();
    test_env_errors();
    test_model_checks();
    return test_exit("test_knobs");
}
