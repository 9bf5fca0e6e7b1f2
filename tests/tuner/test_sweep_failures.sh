# Crashes, garbage, bad exit codes, missing and non-numeric metrics become failed trials
# with precise reasons; a null metric with a reason is measured-infeasible; the sweep
# goes on and still writes the manifest of the best feasible point. Also the two other
# ways of reporting: the $TUNER_RESULT file and text read with regexes.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
study: failures
engine:
  command: [@ENGINE@]
  env:
    SYNTH_CRASH_WHEN: SLIDING_WINDOW=64
    SYNTH_GARBAGE_WHEN: SLIDING_WINDOW=128
    SYNTH_EXIT_WHEN: SLIDING_WINDOW=192
    SYNTH_MISSING_WHEN: SLIDING_WINDOW=256
    SYNTH_STRING_WHEN: SLIDING_WINDOW=320
    SYNTH_NULLPPL_WHEN: SLIDING_WINDOW=384
    SYNTH_SLOW_START: "0.05"
  timeout: 10
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.5]
parameters:
  SLIDING_WINDOW: {type: int, min: 64, max: 512, step: 64}
strategy: grid
YAML

"$TUNER" sweep space.yaml --out out >/dev/null 2>sweep.err || { cat sweep.err; fail "sweep failed"; }
tr=out/failures/trials.jsonl
[ "$(n_search $tr)" -eq 8 ] || fail "want 8 trials"
reason_of() { search_lines $tr | grep "\"SLIDING_WINDOW\":\"$1\"" | json_field reason; }
status_of() { search_lines $tr | grep "\"SLIDING_WINDOW\":\"$1\"" | json_field status; }
check() { # window status reason-prefix
    [ "$(status_of "$1")" = "$2" ] || fail "window $1: status $(status_of "$1"), want $2"
    reason_of "$1" | qgrep -F -- "$3" || fail "window $1: reason '$(reason_of "$1")', want '$3'"
}
check 64 failed "killed by signal 6 (Aborted); last output: \\\"synth_engine: crashing on purpose\\\""
check 128 failed "bad result: the last line of stdout that starts with '{' is not valid JSON: syntax error at byte"
check 192 failed "exit status 3"
check 256 failed "metric 'tps' missing from the result"
check 320 failed "metric 'tps' is not a number (got \\\"fast\\\")"
check 384 infeasible "ppl is infinite: keepset misses target tokens"
check 448 ok null
check 512 ok null
# The manifest is the best feasible point (window 448 is faster than 512).
w=$(eval "$("$TUNER" env out/failures/manifest.json)" && echo "$SLIDING_WINDOW")
[ "$w" = 448 ] || fail "manifest window $w"
# show lists failures last, with their reasons.
"$TUNER" show failures --out out >show.out
expect_contains show.out "reason: killed by signal 6 (Aborted)"
expect_contains show.out "reason: exit status 3"
sed '/^$/,$d' show.out | tail -2 | qgrep "failed" || fail "failures are not listed last"
# Below the table: the verification of the best candidates and the manifest's pick.
expect_contains show.out "verification on the holdout prompts:"
expect_contains show.out "manifest "
grep -m1 "^ *1 feasible" show.out | qgrep "SLIDING_WINDOW=448" || fail "show: best is not first"

# The same engine reporting through $TUNER_RESULT, then as text through regexes.
# (in another folder, so the engine's working directory is not the tuner's)
mkdir sub
write_space sub/file.yaml <<'YAML'
engine: {command: [@ENGINE@], workdir: ., env: {SYNTH_OUTPUT: file}, timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.5]
parameters: {SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}}
strategy: grid
YAML
"$TUNER" sweep sub/file.yaml --out out >/dev/null 2>file.err || { cat file.err; fail "file sweep failed"; }
[ "$(search_lines out/file/trials.jsonl | grep -c '"status":"ok"')" -eq 2 ] || fail "result-file trials not ok"
expect_contains out/file/logs/1.log "result written to"
write_space text.yaml <<'YAML'
engine:
  command: [@ENGINE@]
  env: {SYNTH_OUTPUT: text}
  timeout: 10
  result:
    regex: {tps: 'decode speed: ([0-9.]+) tok/s', ppl: 'perplexity = ([0-9.]+)'}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.5]
parameters: {SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}}
strategy: grid
YAML
"$TUNER" sweep text.yaml --out out >/dev/null 2>text.err || { cat text.err; fail "text sweep failed"; }
[ "$(search_lines out/text/trials.jsonl | grep -c '"status":"ok"')" -eq 2 ] || fail "regex trials not ok"
grep '"SLIDING_WINDOW":"512"' out/text/trials.jsonl | qgrep '"ppl":2.3' || fail "regex ppl not read"
echo "ok"
