# Impossible figures fail their trial: by default a rate or a perplexity must be > 0, and
# the space's `bounds` sets a metric's own [lo, hi]; the reason names the metric, the value
# and the bound. A metric reported as null with a reason stays infeasible, not failed.
source "$TESTS_DIR/sweep_lib.sh"

space() { # file, extra top-level text, SYNTH_TPS
    write_space "$1" <<YAML
engine:
  command: [@ENGINE@]
  env: {SYNTH_TPS_WHEN: SLIDING_WINDOW=128, SYNTH_TPS: "$3", SYNTH_NULLPPL_WHEN: SLIDING_WINDOW=256}
  timeout: 10
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 2.5]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
verify: {top: 1, repeats: 1}
$2
YAML
}
status_of() { search_lines "$1" | grep "\"SLIDING_WINDOW\":\"$2\"" | json_field status; }
reason_of() { search_lines "$1" | grep "\"SLIDING_WINDOW\":\"$2\"" | json_field reason; }

space default.yaml "" 0
"$TUNER" sweep default.yaml >/dev/null 2>d.err || { cat d.err; fail "default bounds sweep"; }
tr=out/default/trials.jsonl
[ "$(status_of $tr 128)" = failed ] || fail "tps 0 was accepted"
reason_of $tr 128 | qgrep -F "impossible figure: metric 'tps' = 0 is below its bound > 0" ||
    fail "reason: $(reason_of $tr 128)"
[ "$(status_of $tr 256)" = infeasible ] || fail "a null ppl with a reason is not infeasible"

space negative.yaml "" -3.5
"$TUNER" sweep negative.yaml >/dev/null 2>n.err || { cat n.err; fail "negative sweep"; }
reason_of out/negative/trials.jsonl 128 | qgrep -F "metric 'tps' = -3.5 is below its bound > 0" ||
    fail "negative tps: $(reason_of out/negative/trials.jsonl 128)"

# The space's bounds: tps in [0, 1e7]: 0 is fine, 1e9 is not.
space zero.yaml "bounds: {tps: [0, 1e7]}" 0
"$TUNER" sweep zero.yaml >/dev/null 2>z.err || { cat z.err; fail "zero sweep"; }
[ "$(status_of out/zero/trials.jsonl 128)" = ok ] || fail "tps 0 within [0, 1e7] failed: $(reason_of out/zero/trials.jsonl 128)"
space huge.yaml "bounds: {tps: [0, 1e7]}" 1e9
"$TUNER" sweep huge.yaml >/dev/null 2>h.err || { cat h.err; fail "huge sweep"; }
tr=out/huge/trials.jsonl
[ "$(status_of $tr 128)" = failed ] || fail "tps 1e9 above 1e7 was accepted"
reason_of $tr 128 | qgrep -F "impossible figure: metric 'tps' = 1e+09 is above its bound <= 10000000 (bounds in the space)" ||
    fail "reason: $(reason_of $tr 128)"
[ "$(status_of $tr 256)" = infeasible ] || fail "huge: the null ppl is not infeasible"
echo "ok"
