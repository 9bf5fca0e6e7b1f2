# Budgets and repeats: the evaluation budget counts points (the baseline included); the
# wall-time budget counts the study's time over all its sessions; each point runs
# `repeats` times and its value is the median, with the spread in the manifest.
source "$TESTS_DIR/sweep_lib.sh"

write_space evals.yaml <<'YAML'
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.1 * baseline]
baseline: {SLIDING_WINDOW: 512}
parameters:
  SLIDING_WINDOW: {type: int, min: 64, max: 512, step: 64}
strategy: grid
budget: {evaluations: 5}
YAML
"$TUNER" sweep evals.yaml >/dev/null 2>evals.err || { cat evals.err; fail "evals sweep"; }
# 5 points: the baseline (run 3 times to measure the noise) and 4 more.
[ "$(n_search out/evals/trials.jsonl)" -eq 7 ] || fail "want 7 trials for 5 evaluations"
[ "$(search_lines out/evals/trials.jsonl | grep -o '"point":{[^}]*}' | sort -u | wc -l)" -eq 5 ] ||
    fail "want 5 points for 5 evaluations"
expect_contains evals.err "ended: the evaluation budget is used up"
expect_contains out/evals/manifest.json '"evaluations_used":	5'

write_space wall.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.25"}, timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 64, max: 512, step: 64}
strategy: grid
budget: {wall_time: 1s}
YAML
"$TUNER" sweep wall.yaml >/dev/null 2>wall.err || { cat wall.err; fail "wall sweep"; }
n=$(n_search out/wall/trials.jsonl)
[ "$n" -ge 1 ] && [ "$n" -le 6 ] || fail "$n trials in a 1 s budget of 0.25 s trials"
expect_contains wall.err "ended: the wall-time budget is used up"
# A new session of the same study: the budget is already spent, nothing new runs.
"$TUNER" sweep wall.yaml >/dev/null 2>wall2.err || { cat wall2.err; fail "wall resume"; }
[ "$(n_search out/wall/trials.jsonl)" -eq "$n" ] || fail "a spent wall-time budget ran more trials"
expect_contains wall2.err "wall-time budget is used up"

write_space rep.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_NOISE: "0.2"}, timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}
strategy: grid
repeats: 3
YAML
"$TUNER" sweep rep.yaml >/dev/null 2>rep.err || { cat rep.err; fail "repeats sweep"; }
tr=out/rep/trials.jsonl
[ "$(n_search $tr)" -eq 6 ] || fail "want 2 points x 3 repeats"
[ "$(search_lines $tr | json_field repeat | tr '\n' ' ')" = "0 1 2 0 1 2 " ] || fail "repeat indices"
vals=$(search_lines $tr | grep '"SLIDING_WINDOW":"256"' | json_field tps | sort -g)
med=$(echo "$vals" | sed -n 2p)
lo=$(echo "$vals" | sed -n 1p)
hi=$(echo "$vals" | sed -n 3p)
awk -v a="$lo" -v b="$hi" 'BEGIN { exit !(b - a > 1) }' || fail "noise did not vary the runs"
m=$(tr -d '\n\t ' <out/rep/manifest.json)
got=$(echo "$m" | grep -o '"objective":{[^}]*}' | json_field median)
close() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d < 1e-9 && d > -1e-9) }'; }
close "$got" "$med" || fail "manifest median $got, want the median of the runs $med"
spread=$(echo "$m" | grep -o '"spread":{"tps":{[^}]*}')
close "$(echo "$spread" | json_field min)" "$lo" || fail "spread min"
close "$(echo "$spread" | json_field max)" "$hi" || fail "spread max"
echo "$m" | qgrep '"runs":3,' || fail "manifest runs"
"$TUNER" show rep >show.out
grep -m1 "^ *1 feasible" show.out | qgrep " 3  SLIDING_WINDOW=256" || fail "show: runs column"

# Another strategy through the same loop: sobol never proposes a point twice.
write_space sobol.yaml <<'YAML'
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 64, max: 512, step: 64}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 8, step: 1}
strategy: {name: sobol, seed: 3}
budget: {evaluations: 12}
YAML
"$TUNER" sweep sobol.yaml >/dev/null 2>sobol.err || { cat sobol.err; fail "sobol sweep"; }
[ "$(grep -o '"point":{[^}]*}' out/sobol/trials.jsonl | sort -u | wc -l)" -eq 12 ] ||
    fail "sobol: want 12 distinct points"
echo "ok"
