# A grid sweep finds the true constrained optimum of the synthetic engine, computed here
# independently from the engine's closed form, and measures the baseline first.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
engine:
  command: [@ENGINE@]
  env: {SYNTH_OUTPUT: file}
  timeout: 20
objective: {metric: tps, direction: maximize}
constraints:
  - ppl <= 1.04 * baseline
  - ppl < 2.45
baseline: {SLIDING_WINDOW: 512, NUM_SPECULATIVE_TOKENS: 0, LM_HEAD_KEEPSET: 0}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 64}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 8, step: 1}
  LM_HEAD_KEEPSET: {type: categorical, values: [0, 2048, 8192, 16384]}
strategy: grid
repeats: 1
YAML

"$TUNER" sweep space.yaml --out out >manifest.out 2>sweep.err || { cat sweep.err; fail "sweep failed"; }

# The optimum from the closed form (see synth_engine.c), over the same lattice.
want=$(awk 'BEGIN {
    base = 2.30; bound = 1.04 * base; best = -1
    for (w = 128; w <= 512; w += 64) for (k = 0; k <= 8; k++) for (si = 0; si < 4; si++) {
        split("0 2048 8192 16384", ks, " "); s = ks[si + 1]
        ppl = 2.30 * (1 + 0.1 * (512 - w) / 512)
        if (s > 0 && s < 4096) continue            # infinite perplexity
        if (s > 0) ppl += 0.01 * 16384 / s
        if (!(ppl <= bound && ppl < 2.45)) continue
        tps = 1000 / (1 + w / 256) * (1 + 0.4 * k - 0.04 * k * k) * (s == 0 ? 1 : 1 + 0.1 * (1 - s / 32768)) * (1 + 0.002 * 32 - 0.00003 * 32 * 32)
        if (tps > best) { best = tps; arg = w " " k " " s }
    }
    printf "%s %.6f\n", arg, best }')
read -r ww wk ws wtps <<<"$want"
echo "expected optimum: SLIDING_WINDOW=$ww NUM_SPECULATIVE_TOKENS=$wk LM_HEAD_KEEPSET=$ws tps=$wtps"

m=out/space/manifest.json
[ -f "$m" ] || fail "no manifest"
eval "$("$TUNER" env "$m")"
[ "$SLIDING_WINDOW" = "$ww" ] || fail "window $SLIDING_WINDOW, want $ww"
[ "$NUM_SPECULATIVE_TOKENS" = "$wk" ] || fail "speculative $NUM_SPECULATIVE_TOKENS, want $wk"
[ "$LM_HEAD_KEEPSET" = "$ws" ] || fail "keepset $LM_HEAD_KEEPSET, want $ws"
[ "$SYNTH_OUTPUT" = file ] || fail "fixed env missing from the manifest"
got=$(tr -d '\n\t ' <"$m" | grep -o '"objective":{[^}]*}' | json_field median)
awk -v a="$got" -v b="$wtps" 'BEGIN { exit !(a - b < 1e-6 && b - a < 1e-6) }' ||
    fail "manifest median $got, want $wtps"
cmp -s <(tr -d '\n\t ' <"$m") <(tr -d '\n\t ' <manifest.out) || fail "stdout is not the manifest"
# Verified on the held-out prompts (the synthetic engine scores them like the tuning ones).
expect_contains "$m" '"prompt_set":	"holdout"'
expect_contains "$m" '"warnings":	[]'
expect_contains "$m" '"device":	"synthetic"'

# Every lattice point exactly once, the baseline first, the bound resolved from it.
trials=out/space/trials.jsonl
[ "$(n_search $trials)" -eq 254 ] || fail "$(n_search $trials) trials, want 254 (the baseline 3 times)"
[ "$(search_lines $trials | grep -o '"point":{[^}]*}' | uniq | wc -l)" -eq 252 ] || fail "a point was repeated"
[ "$(search_lines $trials | grep -o '"point":{[^}]*}' | sort -u | wc -l)" -eq 252 ] || fail "a point is missing"
head -1 $trials | qgrep '"phase":"baseline"' || fail "baseline not first"
head -1 $trials | qgrep '"SLIDING_WINDOW":"512","NUM_SPECULATIVE_TOKENS":"0","LM_HEAD_KEEPSET":"0"' ||
    fail "first trial is not the baseline point"
[ "$(grep -c '"status":"infeasible"' $trials)" -eq 63 ] || fail "keepset 2048 points must be infeasible"
grep '"LM_HEAD_KEEPSET":"2048"' $trials | qgrep '"reason":"ppl is infinite: keepset misses target tokens"' ||
    fail "infeasible reason not recorded"
expect_contains $m '"bound":	2.392'

# show: the winner first, ranks, infeasible rows with their reasons.
"$TUNER" show space --out out >show.out
grep -m1 "^ *[0-9]" show.out | qgrep "^   1 feasible .*SLIDING_WINDOW=$ww,NUM_SPECULATIVE_TOKENS=$wk,LM_HEAD_KEEPSET=$ws" ||
    { cat show.out; fail "show does not rank the optimum first"; }
expect_contains show.out "reason: ppl is infinite: keepset misses target tokens"
expect_contains show.out "breaks: ppl"
echo "ok"
