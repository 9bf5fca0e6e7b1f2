# kill -9 of the tuner in the middle of a sweep, a torn last journal line, then a rerun:
# the study resumes, no finished trial is repeated, none is lost, and it ends with the
# same trials, in the same order, as a sweep that was never interrupted.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
study: resume
engine:
  command: [@ENGINE@]
  env: {SYNTH_SLOW_START: "0.04"}
  timeout: 10
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.1 * baseline]
baseline: {SLIDING_WINDOW: 512, NUM_SPECULATIVE_TOKENS: 0}
parameters:
  SLIDING_WINDOW: {type: int, min: 64, max: 512, step: 64}
  NUM_SPECULATIVE_TOKENS: {type: int, min: 0, max: 4, step: 1}
strategy: grid
YAML

# The reference: one uninterrupted sweep.
"$TUNER" sweep space.yaml --out ref >/dev/null 2>ref.err || { cat ref.err; fail "reference sweep failed"; }
# 40 points, the baseline run 3 times (its noise): 42 runs.
[ "$(n_search ref/resume/trials.jsonl)" -eq 42 ] || fail "reference: want 42 trials"

export SYNTH_CALLS=$T/calls
sweep_bg first.err space.yaml --out out
tr=out/resume/trials.jsonl
stop_at $tr 8 20 KILL
n_before=$(n_search $tr)
[ "$n_before" -lt 42 ] || fail "the sweep finished before it was killed"
cp $tr before.jsonl
# A crash in the middle of a write leaves a torn last line.
printf '{"id":%d,"phase":"search","point":{"SLIDING_WIN' "$((n_before + 1))" >>$tr

"$TUNER" sweep space.yaml --out out >second.out 2>second.err || { cat second.err; fail "resumed sweep failed"; }
expect_contains second.err "resuming study 'resume': $n_before runs"
expect_contains second.err "the last line"
expect_contains second.err "is incomplete"
# Nothing lost: the journal still starts with every line written before the kill.
cmp -s before.jsonl <(head -n "$n_before" $tr) || fail "lines written before the kill changed"
# Nothing repeated: 42 trials with ids 1..42 and 40 distinct points.
[ "$(n_search $tr)" -eq 42 ] || fail "$(n_search $tr) trials after resume, want 42"
cmp -s <(search_lines $tr | json_field id) <(seq 1 42) || fail "trial ids are not 1..42 in order"
[ "$(search_lines $tr | grep -o '"point":{[^}]*}' | sort -u | wc -l)" -eq 40 ] || fail "a point was measured twice"
# Same points in the same order as the uninterrupted sweep, and the same answer.
cmp -s <(grep -o '"point":{[^}]*}' $tr) <(grep -o '"point":{[^}]*}' ref/resume/trials.jsonl) ||
    fail "resumed sweep measured other points than the reference"
cmp -s <(grep -o '"env":[^}]*}' out/resume/manifest.json) <(grep -o '"env":[^}]*}' ref/resume/manifest.json) ||
    fail "resumed sweep chose another point"
# The engine ran once per trial (the verification's too), plus at most the one
# interrupted by the kill.
calls=$(wc -l <calls)
total=$(wc -l <$tr)
[ "$calls" -ge "$total" ] && [ "$calls" -le $((total + 1)) ] ||
    fail "engine started $calls times for $total trials"
# The study's wall time keeps counting across sessions.
last=$(tail -1 $tr | json_field study_elapsed_s)
first_session=$(tail -1 before.jsonl | json_field study_elapsed_s)
awk -v a="$last" -v b="$first_session" 'BEGIN { exit !(a > b) }' || fail "study time restarted"

# A rerun of a finished study measures nothing new and writes the same manifest.
"$TUNER" sweep space.yaml --out out >/dev/null 2>third.err || { cat third.err; fail "rerun failed"; }
[ "$(n_search $tr)" -eq 42 ] || fail "rerun of a finished study added trials"
[ "$(wc -l <calls)" -eq "$calls" ] || fail "rerun of a finished study started the engine"
echo "ok"
