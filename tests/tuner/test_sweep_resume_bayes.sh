# The Bayesian strategy resumes exactly: kill -9 of the tuner in the middle of a bayes
# sweep (noisy engine, constraint), then a rerun, proposes the same points in the same
# order as a sweep that was never interrupted, and picks the same verified winner. (Its
# proposals depend only on the journal; the engine's noise depends only on the trial id,
# and the id of the run that was killed is given again to its rerun.)
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
study: bres
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.05", SYNTH_NOISE: "0.02"}, timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.42]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 32}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 8}
  LM_HEAD_KEEPSET: {type: categorical, values: [0, 8192, 16384]}
strategy: {name: bayes, seed: 5}
budget: {evaluations: 18}
verify: {top: 2, repeats: 2}
YAML
"$TUNER" sweep space.yaml --out ref >/dev/null 2>ref.err || { cat ref.err; fail "reference sweep"; }
[ "$(n_search ref/bres/trials.jsonl)" -eq 18 ] || fail "reference: want 18 trials"

sweep_bg first.err space.yaml --out out
tr=out/bres/trials.jsonl
stop_at $tr 11 30 KILL # past bayes' initial design (6 points): proposals from the GP
n_before=$(wc -l <$tr)
[ "$n_before" -lt 18 ] || fail "the sweep finished before it was killed"
"$TUNER" sweep space.yaml --out out >/dev/null 2>second.err || { cat second.err; fail "resumed sweep"; }
expect_contains second.err "resuming study 'bres': $n_before runs"
cmp -s <(grep -o '"point":{[^}]*}' $tr) <(grep -o '"point":{[^}]*}' ref/bres/trials.jsonl) ||
    fail "the resumed bayes study proposed other points than the uninterrupted one"
cmp -s <(grep -o '"env":[^}]*}' out/bres/manifest.json) <(grep -o '"env":[^}]*}' ref/bres/manifest.json) ||
    fail "the resumed bayes study chose another point"
echo "ok"
