# No feasible point: exit status 3, a clear message that counts what happened to the points
# (over a constraint, infinite, failed), no manifest. A failed baseline stops
# the sweep before any search trial (its bound cannot be resolved).
source "$TESTS_DIR/sweep_lib.sh"

write_space tight.yaml <<'YAML'
engine: {command: [@ENGINE@], timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.5]
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
YAML
rc=0
"$TUNER" sweep tight.yaml >out.txt 2>tight.err || rc=$?
[ "$rc" -eq 3 ] || { cat tight.err; fail "no feasible point: exit $rc, want 3"; }
expect_contains tight.err "4 points (0 feasible, 4 over a constraint, 0 with an infinite metric, 0 failed) in 4 runs"
expect_contains tight.err "no feasible point: of the 4 points, 4 broke a constraint, 0 had an infinite metric and 0 failed; no manifest written"
! grep -q "met the objective" tight.err || fail "the message says the objective was not met"
[ ! -e out/tight/manifest.json ] || fail "a manifest was written"
[ ! -s out.txt ] || fail "something was printed on stdout"
[ "$(wc -l <out/tight/trials.jsonl)" -eq 4 ] || fail "want 4 trials"
"$TUNER" show tight >show.out
expect_contains show.out "breaks: ppl"
expect_contains show.out "> bound 1.5 (ppl <= 1.5)"
# Over the cap and infinite are counted apart.
rc=0
SYNTH_NULLPPL_WHEN=SLIDING_WINDOW=128 "$TUNER" sweep tight.yaml --study mixed >/dev/null 2>mixed.err || rc=$?
[ "$rc" -eq 3 ] || fail "mixed: exit $rc, want 3"
expect_contains mixed.err "4 points (0 feasible, 3 over a constraint, 1 with an infinite metric, 0 failed)"
expect_contains mixed.err "of the 4 points, 3 broke a constraint, 1 had an infinite metric and 0 failed"

# Every point failed: also no manifest.
write_space crash.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_CRASH_WHEN: always}, timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 256, step: 128}
strategy: grid
YAML
rc=0
"$TUNER" sweep crash.yaml >/dev/null 2>crash.err || rc=$?
[ "$rc" -eq 3 ] || fail "all failed: exit $rc, want 3"
[ ! -e out/crash/manifest.json ] || fail "a manifest was written for failures"
expect_contains crash.err "2 points (0 feasible, 0 over a constraint, 0 with an infinite metric, 2 failed)"
expect_contains crash.err "of the 2 points, 0 broke a constraint, 0 had an infinite metric and 2 failed"

# A baseline that fails stops the sweep: one trial, the reason, exit 1.
write_space base.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_EXIT_WHEN: SLIDING_WINDOW=512}, timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.05 * baseline]
baseline: {SLIDING_WINDOW: 512}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
repeats: 2
YAML
rc=0
"$TUNER" sweep base.yaml >/dev/null 2>base.err || rc=$?
[ "$rc" -eq 1 ] || { cat base.err; fail "failed baseline: exit $rc, want 1"; }
expect_contains base.err "the baseline point SLIDING_WINDOW=512 cannot resolve the relative constraints: every run of the baseline point failed (exit status 3"
expect_contains base.err "start a new study with --new"
[ "$(wc -l <out/base/trials.jsonl)" -eq 3 ] || fail "want the baseline's 3 runs only (its noise)"
! grep -q '"phase":"search"' out/base/trials.jsonl || fail "search trials ran after a failed baseline"

# A baseline whose constraint metric is infinite cannot give a bound either.
write_space inf.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_NULLPPL_WHEN: SLIDING_WINDOW=512}, timeout: 10}
objective: {metric: tps, direction: maximize}
constraints: [ppl <= 1.05 * baseline]
baseline: {SLIDING_WINDOW: 512}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
YAML
rc=0
"$TUNER" sweep inf.yaml >/dev/null 2>inf.err || rc=$?
[ "$rc" -eq 1 ] || fail "infinite baseline: exit $rc, want 1"
expect_contains inf.err "the baseline point reported the constraint's metric as infinite"
echo "ok"
