#!/usr/bin/env bash
# test_cli.sh: the `engine` command end to end - every kind of bad input gets a one-line error
# naming the file (and line, or knob) and a non-zero exit, and the happy paths of bench, ppl and
# generate print what the protocol promises (DESIGN.md 4.1: the result JSON as the last line of
# stdout, the same object in $TUNER_RESULT).
#
# Needs ENGINE (the binary) and TESTS_DIR (this folder), as ctest sets them. The cases that need
# a model use fixtures/a_ple_kvshare (FIXTURE_MODEL overrides it) and compare perplexity with
# the transformers figure in its golden.json; generate runs on models/gemma4-tiny once it exists.
: "${TESTS_DIR:?TESTS_DIR must point to tests/engine}"
source "$TESTS_DIR/cli_lib.sh"

# A JSON number field of the last stdout line (empty when absent or null).
field() {
    tail -n 1 "$1" | grep -o "\"$2\":[-0-9.eE+]*" | head -n 1 | cut -d: -f2
}

# ---- data files used by the cases without a model
good_prompts=$tmp/prompts.jsonl
good_ppl=$tmp/ppl.jsonl
printf '{"id": "p1", "prompt_token_ids": [2, 5, 6, 7]}\n{"id": "p2", "prompt_token_ids": [2, 8, 9]}\n' >"$good_prompts"
printf '{"context_token_ids": [2, 5], "target_token_ids": [6, 7, 8]}\n' >"$good_ppl"
: >"$tmp/empty.jsonl"
printf '{"prompt_token_ids": [2, 5]}\n\n{"prompt_token_ids": [2, 5' >"$tmp/bad_line3.jsonl"
printf '{"context_token_ids": [2], "target_token_ids": [5]}\n{"context_token_ids": [2]}\n' >"$tmp/bad_ppl.jsonl"
nomodel=$tmp/no_such_model

# ---- command line
expect 2 "missing command" -- "$ENGINE"
expect 2 "unknown command \"frobnicate\"" -- "$ENGINE" frobnicate
expect 0 "engine bench MODEL_DIR" "SLIDING_WINDOW" -- "$ENGINE" --help
expect 0 "engine generate MODEL_DIR" -- "$ENGINE" generate --help
expect 2 "missing MODEL_DIR" -- "$ENGINE" bench
expect 2 "unknown flag --frob" -- "$ENGINE" bench "$nomodel" --frob 3
expect 2 "flag --prompts needs a value" -- "$ENGINE" bench "$nomodel" --prompts
expect 2 "flag --prompt does not apply" -- "$ENGINE" bench "$nomodel" --prompt hi
expect 2 "unexpected argument" -- "$ENGINE" bench "$nomodel" extra

# ---- knobs: zero, negative, non-numbers (environment and flags; the speculation and keepset
# knobs' own failures are in test_spec_cli.sh)
expect 2 "environment variable SLIDING_WINDOW=0" "must be at least 1" -- \
    env SLIDING_WINDOW=0 "$ENGINE" bench "$nomodel" --prompts "$good_prompts"
expect 2 "flag --sliding-window=-5" "must be at least 1" -- \
    "$ENGINE" bench "$nomodel" --sliding-window -5 --prompts "$good_prompts"
expect 2 "MAX_NEW_TOKENS=-1" "must be at least 1" -- \
    env MAX_NEW_TOKENS=-1 "$ENGINE" bench "$nomodel" --prompts "$good_prompts"
expect 2 "WARMUP_NUM_PROMPTS=-2" "must be at least 0" -- \
    env WARMUP_NUM_PROMPTS=-2 "$ENGINE" bench "$nomodel" --prompts "$good_prompts"
expect 2 "MAX_MODEL_LEN=\"lots\"" "not an integer" -- \
    env MAX_MODEL_LEN=lots "$ENGINE" bench "$nomodel" --prompts "$good_prompts"
expect 2 "NUM_SPECULATIVE_TOKENS=-7" "must be at least 0" -- \
    env NUM_SPECULATIVE_TOKENS=-7 "$ENGINE" bench "$nomodel" --prompts "$good_prompts"
expect 2 "flag --centroid-top-k=0" "must be at least 1" -- \
    "$ENGINE" bench "$nomodel" --centroid-top-k=0 --prompts "$good_prompts"
expect 2 "TUNER_PROMPT_SET=\"private\"" -- \
    env TUNER_PROMPT_SET=private "$ENGINE" bench "$nomodel" --prompts "$good_prompts"
# Precision knobs: named values, refused before anything loads (the model folder here does not
# exist).
expect 2 "environment variable WEIGHT_DTYPE" "\"int3\"" "allowed: bf16, int8, int4" -- \
    env WEIGHT_DTYPE=int3 "$ENGINE" ppl "$nomodel" --ppl "$good_ppl"
expect 2 "flag --weight-group" "\"48\"" "allowed: 32, 64, 128" -- \
    "$ENGINE" ppl "$nomodel" --ppl "$good_ppl" --weight-group 48
expect 2 "flag --head-dtype" "\"fp8\"" -- "$ENGINE" ppl "$nomodel" --ppl "$good_ppl" --head-dtype fp8
expect 0 "WEIGHT_DTYPE" "HEAD_DTYPE" "WEIGHT_GROUP" -- "$ENGINE" --help
# A bad environment value is an error even when a flag would override it.
expect 2 "SLIDING_WINDOW" -- env SLIDING_WINDOW=abc "$ENGINE" bench "$nomodel" --sliding-window 8

# ---- data files: empty, invalid line, missing record field, missing file
expect 1 "$tmp/empty.jsonl: no records" -- "$ENGINE" bench "$nomodel" --prompts "$tmp/empty.jsonl"
expect 1 "$tmp/bad_line3.jsonl:3: not valid JSON" -- \
    "$ENGINE" bench "$nomodel" --prompts "$tmp/bad_line3.jsonl"
expect 1 "$tmp/bad_ppl.jsonl:2: missing \"target_token_ids\"" -- \
    "$ENGINE" bench "$nomodel" --prompts "$good_prompts" --ppl "$tmp/bad_ppl.jsonl"
expect 1 "$tmp/bad_ppl.jsonl:2:" -- "$ENGINE" ppl "$nomodel" --ppl "$tmp/bad_ppl.jsonl"
expect 1 "$tmp/none.jsonl: cannot open" -- "$ENGINE" bench "$nomodel" --prompts "$tmp/none.jsonl"
expect 1 "$tmp/d/prompts_holdout.jsonl: cannot open" -- \
    env TUNER_PROMPT_SET=holdout "$ENGINE" bench "$nomodel" --data "$tmp/d"

# ---- the model folder: missing, or not a folder
expect 1 "$nomodel: model folder" -- "$ENGINE" bench "$nomodel" --prompts "$good_prompts" --ppl "$good_ppl"
expect 1 "$good_ppl: model folder: not a directory" -- "$ENGINE" ppl "$good_ppl" --ppl "$good_ppl"
expect 1 "$nomodel: model folder" -- "$ENGINE" generate "$nomodel" --prompt "Hello"

# ---- with a model: a fixture made by transformers (tests/engine/fixtures)
model=${FIXTURE_MODEL:-$TESTS_DIR/fixtures/a_ple_kvshare}
if [ ! -f "$model/config.json" ]; then
    fail "no fixture model at $model"
else
    long=$tmp/long.jsonl
    printf '{"id": "short", "prompt_token_ids": [2, 5]}\n{"id": "long", "prompt_token_ids": [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}\n' >"$long"
    expect 1 "$long:2: prompt \"long\" has 12 tokens, more than MAX_MODEL_LEN - MAX_NEW_TOKENS = 16 - 8 = 8" -- \
        env MAX_MODEL_LEN=16 MAX_NEW_TOKENS=8 "$ENGINE" bench "$model" --prompts "$long"
    expect 1 "SLIDING_WINDOW=100000000 is above the model's maximum" -- \
        env SLIDING_WINDOW=100000000 "$ENGINE" bench "$model" --prompts "$good_prompts"
    expect 1 "MAX_MODEL_LEN=100000000 is above" -- \
        "$ENGINE" ppl "$model" --ppl "$good_ppl" --max-model-len 100000000
    expect 1 "MAX_NEW_TOKENS=512 leaves no room for a prompt within MAX_MODEL_LEN=64" -- \
        "$ENGINE" bench "$model" --prompts "$good_prompts" --max-model-len 64
    printf '{"context_token_ids": [2, 3, 4, 5, 6, 7, 8, 9, 10], "target_token_ids": [11, 12, 13, 14]}\n' >"$tmp/long_ppl.jsonl"
    expect 1 "$tmp/long_ppl.jsonl:1: record needs 12 positions" -- \
        "$ENGINE" ppl "$model" --ppl "$tmp/long_ppl.jsonl" --max-model-len 10
    # in bench too, and before any timed work
    expect 1 "$tmp/long_ppl.jsonl:1: record needs 12 positions" -- \
        "$ENGINE" bench "$model" --prompts "$good_prompts" --ppl "$tmp/long_ppl.jsonl" --max-model-len 10 --max-new-tokens 4
    grep -q "warm-up" "$tmp/err" && fail "bench: a too-long ppl record was found only after the timed run"
    printf '{"prompt_token_ids": [2, 5]}\n{"prompt_token_ids": [2, 2000000000]}\n' >"$tmp/oov.jsonl"
    expect 1 "$tmp/oov.jsonl:2: prompt_token_ids[1] = 2000000000 is outside the model's vocabulary" -- \
        "$ENGINE" bench "$model" --prompts "$tmp/oov.jsonl" --max-new-tokens 4
    printf '{"context_token_ids": [2, 5], "target_token_ids": [6, 99999]}\n' >"$tmp/oov_ppl.jsonl"
    expect 1 "$tmp/oov_ppl.jsonl:1: target_token_ids[1] = 99999 is outside" -- \
        "$ENGINE" ppl "$model" --ppl "$tmp/oov_ppl.jsonl"

    # Happy path: bench prints the result as its last stdout line and writes it to TUNER_RESULT.
    expect 0 -- env MAX_NEW_TOKENS=6 WARMUP_NUM_PROMPTS=1 TUNER_RESULT="$tmp/result.json" \
        "$ENGINE" bench "$model" --prompts "$good_prompts" --ppl "$model/ppl.jsonl"
    cp "$tmp/out" "$tmp/bench1"
    if ! cmp -s <(tail -n 1 "$tmp/bench1") "$tmp/result.json"; then
        fail "TUNER_RESULT differs from the last stdout line"
    fi
    tps=$(field "$tmp/bench1" tps)
    ppl=$(field "$tmp/bench1" ppl)
    tokens=$(field "$tmp/bench1" tokens)
    { [ -n "$tps" ] && awk "BEGIN{exit !($tps > 0)}"; } || fail "bench: no positive tps: $(tail -n 1 "$tmp/bench1")"
    [ "$tokens" = 12 ] || fail "bench: tokens $tokens, want 2 prompts x 6 = 12"
    grep -q '"device":"cpu: ' "$tmp/bench1" || fail "bench: no cpu device string"
    grep -q '"MAX_NEW_TOKENS":6' "$tmp/bench1" || fail "bench: knobs used not reported"

    # Its ppl is transformers' (golden.json: cases[0] native window, cases[1] SLIDING_WINDOW=5).
    read -r want_native want_w5 < <(grep -o '"ppl":[-0-9.eE+]*' "$model/golden.json" | cut -d: -f2 | head -n 2 | tr '\n' ' ')
    close() { awk -v a="$1" -v b="$2" 'BEGIN{d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-4 * b)}'; }
    close "$ppl" "$want_native" || fail "bench: ppl $ppl, transformers $want_native"

    # --data DIR with TUNER_PROMPT_SET picks DIR/prompts_<set>.jsonl and DIR/ppl_<set>.jsonl.
    mkdir -p "$tmp/data"
    cp "$good_prompts" "$tmp/data/prompts_holdout.jsonl"
    cp "$model/ppl.jsonl" "$tmp/data/ppl_holdout.jsonl"
    expect 0 -- env TUNER_PROMPT_SET=holdout MAX_NEW_TOKENS=2 WARMUP_NUM_PROMPTS=0 \
        "$ENGINE" bench "$model" --data "$tmp/data"
    grep -q "\"prompts_file\":\"$tmp/data/prompts_holdout.jsonl\"" "$tmp/out" &&
        grep -q "\"ppl_file\":\"$tmp/data/ppl_holdout.jsonl\"" "$tmp/out" &&
        grep -q '"TUNER_PROMPT_SET":"holdout"' "$tmp/out" || fail "--data holdout: $(tail -n 1 "$tmp/out")"
    # Without --ppl (and no --data) there is no ppl: null beside a reason, still exit 0.
    expect 0 -- "$ENGINE" bench "$model" --prompts "$good_prompts" --max-new-tokens 2
    grep -q '"ppl":null' "$tmp/out" && grep -q '"reason":"no perplexity records' "$tmp/out" ||
        fail "bench without ppl records: $(tail -n 1 "$tmp/out")"

    # The same run again generates the same tokens (greedy is deterministic).
    expect 0 -- env MAX_NEW_TOKENS=6 WARMUP_NUM_PROMPTS=0 \
        "$ENGINE" bench "$model" --prompts "$good_prompts" --ppl "$model/ppl.jsonl"
    h1=$(tail -n 1 "$tmp/bench1" | grep -o '"output_hash":"[0-9a-f]*"')
    h2=$(tail -n 1 "$tmp/out" | grep -o '"output_hash":"[0-9a-f]*"')
    { [ -n "$h1" ] && [ "$h1" = "$h2" ]; } || fail "bench: output differs between runs ($h1 vs $h2)"

    # engine ppl scores through the same configured decoder; the window knob reaches it.
    expect 0 -- "$ENGINE" ppl "$model" --ppl "$model/ppl.jsonl"
    close "$(field "$tmp/out" ppl)" "$want_native" || fail "ppl: $(tail -n 1 "$tmp/out"), transformers $want_native"
    expect 0 -- env SLIDING_WINDOW=5 "$ENGINE" ppl "$model" --ppl "$model/ppl.jsonl"
    close "$(field "$tmp/out" ppl)" "$want_w5" || fail "ppl window 5: $(tail -n 1 "$tmp/out"), transformers $want_w5"
    grep -q '"SLIDING_WINDOW":5' "$tmp/out" || fail "ppl: window used not reported"

    # Precision: reported as used, with the weight bytes per token; a group the model's
    # matrices cannot take is refused by tensor name.
    expect 0 -- "$ENGINE" ppl "$model" --ppl "$model/ppl.jsonl" --weight-dtype int4 --head-dtype int8
    grep -q '"WEIGHT_DTYPE":"int4","WEIGHT_GROUP":32,"HEAD_DTYPE":"int8"' "$tmp/out" &&
        grep -q '"precision":{"weights":"int4","weight_group":32,"prequantized":false,"head":"int8"' "$tmp/out" &&
        grep -q '"weight_bytes_per_token":[0-9]' "$tmp/out" || fail "ppl int4: $(tail -n 1 "$tmp/out")"
    expect 0 -- "$ENGINE" bench "$model" --prompts "$good_prompts" --max-new-tokens 2 --weight-dtype int8
    bf=$(field "$tmp/bench1" weight_bytes_per_token)
    q8=$(field "$tmp/out" weight_bytes_per_token)
    { [ -n "$bf" ] && [ -n "$q8" ] && [ "$q8" -lt "$bf" ]; } || fail "bench int8: weight bytes $q8 vs bf16 $bf"
    expect 1 "self_attn.q_proj.weight [64, 64]: WEIGHT_GROUP=128 does not divide its 64 input columns" -- \
        "$ENGINE" ppl "$model" --ppl "$model/ppl.jsonl" --weight-dtype int4 --weight-group 128

    # bf16 tensors under a config.json that says float16 (a relabelled file): refused by name.
    relabel=$tmp/relabelled
    mkdir -p "$relabel"
    cp "$model"/* "$relabel"/
    sed -i 's/"dtype": "bfloat16"/"dtype": "float16"/' "$relabel/config.json"
    expect 1 "is BF16, but" "config.json says the weights are float16" -- \
        "$ENGINE" ppl "$relabel" --ppl "$model/ppl.jsonl"
fi

# ---- text prompts and generate on the fixture model with a small BPE tokenizer (cli/): the
# fixture's weights and config, tokenizer.json from cli/ (byte fallback, three merges, ids < 300).
tm=$tmp/text_model
mkdir -p "$tm"
ln -s "$model/config.json" "$model/model.safetensors" "$TESTS_DIR/cli/tokenizer.json" "$tm/"
printf '{"id": "t1", "text": "the cat"}\n' >"$tmp/text.jsonl"
expect 0 -- "$ENGINE" bench "$tm" --prompts "$tmp/text.jsonl" --max-new-tokens 4 --warmup-num-prompts 0
# <bos> the ▁ c a t: the text went through the tokenizer, BOS first
[ "$(field "$tmp/out" prompt_tokens)" = 6 ] || fail "bench text prompt: $(tail -n 1 "$tmp/out")"
printf '{"id": "t1", "text": "<bos>the cat"}\n' >"$tmp/text_bos.jsonl"
expect 0 -- "$ENGINE" bench "$tm" --prompts "$tmp/text_bos.jsonl" --max-new-tokens 4 --warmup-num-prompts 0
[ "$(field "$tmp/out" prompt_tokens)" = 6 ] || fail "bench text prompt with <bos>: one BOS, not two: $(tail -n 1 "$tmp/out")"
printf '{"id": "t1", "text": "the cat"}\n{"id": "t2", "prompt": "bad \xff byte"}\n' >"$tmp/bad_utf8.jsonl"
expect 1 "$tmp/bad_utf8.jsonl:2: the prompt text is not valid UTF-8" -- \
    "$ENGINE" bench "$tm" --prompts "$tmp/bad_utf8.jsonl" --max-new-tokens 4
printf '{"text": "the cat"}\n' >"$tmp/ppl_only.jsonl"
expect 1 "$model/tokenizer.json" -- "$ENGINE" bench "$model" --prompts "$tmp/ppl_only.jsonl" --max-new-tokens 4
expect 0 -- "$ENGINE" generate "$tm" --prompt "the cat sat" --max-new-tokens 5
[ "$(wc -l <"$tmp/out")" = 1 ] || fail "generate: want one line of text"
grep -q "prompt 10 tokens" "$tmp/err" || fail "generate: prompt tokens not reported: $(cat "$tmp/err")"
expect 0 -- sh -c "printf 'the cat sat\n' | '$ENGINE' generate '$tm' --max-new-tokens 5"
grep -q "prompt 10 tokens" "$tmp/err" || fail "generate from stdin: the final newline was not dropped"
expect 1 "the prompt has 10 tokens, more than MAX_MODEL_LEN - MAX_NEW_TOKENS = 16 - 8" -- \
    env MAX_MODEL_LEN=16 "$ENGINE" generate "$tm" --prompt "the cat sat" --max-new-tokens 8
expect 1 "the prompt is empty" -- sh -c "printf '' | '$ENGINE' generate '$tm' --max-new-tokens 4"

# ---- generate, on the shipped small model (it has a tokenizer; the fixtures do not)
tiny=${ROOT:-$TESTS_DIR/../..}/models/gemma4-tiny
if [ -f "$tiny/tokenizer.json" ] && [ -f "$tiny/config.json" ]; then
    expect 0 -- "$ENGINE" generate "$tiny" --prompt "Once upon a time" --max-new-tokens 8
    [ -s "$tmp/out" ] || fail "generate printed nothing"
    expect 0 -- sh -c "printf 'Once upon a time\n' | '$ENGINE' generate '$tiny' --max-new-tokens 8"
    [ -s "$tmp/out" ] || fail "generate from stdin printed nothing"
else
    echo "test_cli: no shipped model at $tiny yet: generate not run" >&2
fi

cli_finish test_cli
