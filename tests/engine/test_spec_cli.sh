#!/usr/bin/env bash
# test_spec_cli.sh: the speculation and keepset knobs through the `engine` command.
#   - NUM_SPECULATIVE_TOKENS with a drafter serves exactly what plain greedy serves (the bench's
#     output_hash over every generated id is equal for k = 0, 1, 3, 8) and the result JSON carries
#     accept_len, the accepted-length histogram and the decode time shares;
#   - LM_HEAD_KEEPSET: the whole vocabulary as keepset gives the plain perplexity; a small one
#     makes perplexity null with a reason and reports coverage;
#   - every bad input of these knobs is one error line naming the file or knob, exit 1.
# Fixture target a with the random assistant fixture (made by transformers); generate also on the
# shipped small model when it exists.
: "${TESTS_DIR:?TESTS_DIR must point to tests/engine}"
source "$TESTS_DIR/cli_lib.sh"
field() { tail -n 1 "$1" | grep -o "\"$2\":[^,}]*" | head -n 1 | cut -d: -f2-; }

fx=$TESTS_DIR/fixtures
model=$tmp/a # fixture a, with a keepset file beside it
mkdir -p "$model"
for f in "$fx"/a_ple_kvshare/*; do ln -s "$f" "$model/"; done
seq 0 383 | shuf --random-source=<(yes) > "$model/keepset.txt"
run=(env MAX_NEW_TOKENS=24 WARMUP_NUM_PROMPTS=1 "$ENGINE" bench "$model"
     --prompts "$fx/a_ple_kvshare/prompts.jsonl" --ppl "$fx/a_ple_kvshare/ppl.jsonl" --threads 1)

# ---- lossless: the same tokens for every k
expect 0 -- "${run[@]}"
cp "$tmp/out" "$tmp/plain"
h0=$(field "$tmp/plain" output_hash)
ppl0=$(field "$tmp/plain" ppl)
[ -n "$h0" ] || fail "no output_hash in the plain run"
for k in 1 3 8; do
    expect 0 -- env NUM_SPECULATIVE_TOKENS=$k "${run[@]}" --assistant "$fx/assistant_a"
    [ "$(field "$tmp/out" output_hash)" = "$h0" ] ||
        fail "k=$k: output_hash $(field "$tmp/out" output_hash) differs from plain greedy's $h0"
    for key in accept_len tokens_per_step accept_hist draft verify other; do
        grep -q "\"$key\"" <(tail -n 1 "$tmp/out") || fail "k=$k: result lacks $key"
    done
    hist=$(tail -n 1 "$tmp/out" | grep -o '"accept_hist":\[[0-9,]*\]' | grep -o ',' | wc -l)
    [ "$hist" -eq "$k" ] || fail "k=$k: accept_hist has $((hist + 1)) entries, want $((k + 1))"
done
# CENTROID_TOP_K only changes proposals
expect 0 -- env NUM_SPECULATIVE_TOKENS=4 CENTROID_TOP_K=1 "${run[@]}" --assistant "$fx/assistant_a"
[ "$(field "$tmp/out" output_hash)" = "$h0" ] || fail "CENTROID_TOP_K=1 changed the output"

# ---- keepset: the whole vocabulary changes nothing; a small one makes ppl infinite
expect 0 -- env LM_HEAD_KEEPSET=384 "${run[@]}"
[ "$(field "$tmp/out" output_hash)" = "$h0" ] || fail "full keepset changed the output"
[ "$(field "$tmp/out" ppl)" = "$ppl0" ] || fail "full keepset: ppl $(field "$tmp/out" ppl) != $ppl0"
[ "$(field "$tmp/out" ppl_target_coverage)" = "1" ] || fail "full keepset: coverage not 1"
expect 0 -- env LM_HEAD_KEEPSET=10 NUM_SPECULATIVE_TOKENS=2 "${run[@]}" --assistant "$fx/assistant_a"
[ "$(field "$tmp/out" ppl)" = "null" ] || fail "keepset 10: ppl should be null"
grep -q '"reason":"[0-9]* of [0-9]* target tokens have zero probability' <(tail -n 1 "$tmp/out") ||
    fail "keepset 10: no reason beside the null ppl"
cov=$(field "$tmp/out" ppl_target_coverage)
awk -v c="$cov" 'BEGIN { exit !(c > 0 && c < 1) }' || fail "keepset 10: coverage $cov"
expect 0 -- env LM_HEAD_KEEPSET=10 "$ENGINE" ppl "$model" --ppl "$fx/a_ple_kvshare/ppl.jsonl"
[ "$(field "$tmp/out" ppl)" = "null" ] || fail "engine ppl with keepset 10: ppl should be null"

# ---- refusals
expect 1 "no assistant folder" "NUM_SPECULATIVE_TOKENS=2" -- \
    env NUM_SPECULATIVE_TOKENS=2 "${run[@]}"
expect 1 "NUM_SPECULATIVE_TOKENS=17" "at most 16" -- \
    env NUM_SPECULATIVE_TOKENS=17 "${run[@]}" --assistant "$fx/assistant_a"
expect 1 "CENTROID_TOP_K=49" "num_centroids (16)" -- \
    env NUM_SPECULATIVE_TOKENS=2 CENTROID_TOP_K=49 "${run[@]}" --assistant "$fx/assistant_a"
expect 1 "$fx/a_ple_kvshare/config.json" "model_type" "gemma4_assistant" -- \
    env NUM_SPECULATIVE_TOKENS=2 "${run[@]}" --assistant "$fx/a_ple_kvshare"
expect 1 "backbone_hidden_size" -- \
    env NUM_SPECULATIVE_TOKENS=2 "$ENGINE" bench "$fx/b_keqv_untied" --assistant "$fx/assistant_a" \
    --prompts "$fx/b_keqv_untied/prompts.jsonl" --max-new-tokens 4
expect 1 "LM_HEAD_KEEPSET=500" "lists 384 token ids" -- env LM_HEAD_KEEPSET=500 "${run[@]}"
expect 1 "$fx/b_keqv_untied/keepset.txt" -- \
    env LM_HEAD_KEEPSET=5 "$ENGINE" ppl "$fx/b_keqv_untied" --ppl "$fx/b_keqv_untied/ppl.jsonl"
printf '# comment\n5\nfive\n' >"$tmp/bad_keepset"
rm "$model/keepset.txt" && cp "$tmp/bad_keepset" "$model/keepset.txt"
expect 1 "$model/keepset.txt:3: not a token id" -- env LM_HEAD_KEEPSET=1 "${run[@]}"
printf '5\n7\n5\n' >"$model/keepset.txt"
expect 1 "$model/keepset.txt:3: token id 5 is listed twice" -- env LM_HEAD_KEEPSET=1 "${run[@]}"
printf '5\n384\n' >"$model/keepset.txt"
expect 1 "$model/keepset.txt:2: token id 384 is outside the vocabulary" -- \
    env LM_HEAD_KEEPSET=1 "${run[@]}"
expect 2 "flag --assistant does not apply" -- \
    "$ENGINE" ppl "$model" --assistant "$fx/assistant_a"

# ---- generate on the shipped small model: the same text with and without speculation
tiny=$TESTS_DIR/../../models/gemma4-tiny
if [ -d "$tiny" ] && [ -d "$tiny-assistant" ]; then
    expect 0 -- env MAX_NEW_TOKENS=40 "$ENGINE" generate "$tiny" --prompt "The river" --threads 1
    cp "$tmp/out" "$tmp/gen0"
    expect 0 "drafts accepted" -- env MAX_NEW_TOKENS=40 NUM_SPECULATIVE_TOKENS=5 \
        "$ENGINE" generate "$tiny" --prompt "The river" --threads 1
    cmp -s "$tmp/gen0" "$tmp/out" || fail "generate with speculation printed different text"
fi

cli_finish test_spec_cli
