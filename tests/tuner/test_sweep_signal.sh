# SIGINT while an engine hangs: the tuner stops the engine's whole process group, records
# nothing for the interrupted trial, exits 130 saying how to resume; the rerun measures the
# interrupted point once. SIGTERM between trials: exit 143, same guarantees.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
study: sig
engine: {command: [@ENGINE@], timeout: 60}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
YAML
tr=out/sig/trials.jsonl

# The hang comes from the environment the tuner passes on, not from the space file, so
# the rerun (without it) resumes the same study.
SYNTH_HANG_WHEN=SLIDING_WINDOW=384 SYNTH_PIDFILE=$T/pids sweep_bg first.err space.yaml --out out
stop_at pids 1 20 INT
[ "$rc" -eq 130 ] || { cat first.err; fail "exit status $rc after SIGINT, want 130"; }
expect_contains first.err "interrupted by SIGINT"
expect_contains first.err "resume with: tuner sweep space.yaml --study sig"
[ "$(n_search $tr)" -eq 2 ] || fail "want the 2 finished trials only, got $(n_search $tr)"
! grep -q '"SLIDING_WINDOW":"384"' $tr || fail "the interrupted trial was recorded"
for p in $(cat pids); do [ ! -e "/proc/$p" ] || fail "engine process $p survived"; done

"$TUNER" sweep space.yaml --out out >/dev/null 2>second.err || { cat second.err; fail "resume failed"; }
[ "$(n_search $tr)" -eq 4 ] || fail "want 4 trials after resume"
[ "$(search_lines $tr | grep -c '"SLIDING_WINDOW":"384"')" -eq 1 ] || fail "interrupted point not measured once"
search_lines $tr | grep '"SLIDING_WINDOW":"384"' | qgrep '"id":3,' || fail "the interrupted trial's id was not reused"

# SIGTERM: a slow engine, the signal while a trial runs.
SYNTH_SLOW_START=0.3 sweep_bg term.err space.yaml --study term --out ./out
stop_at out/term/trials.jsonl 1 20 TERM
[ "$rc" -eq 143 ] || { cat term.err; fail "exit status $rc after SIGTERM, want 143"; }
expect_contains term.err "interrupted by SIGTERM"
expect_contains term.err "resume with: tuner sweep space.yaml --study term --out ./out"
n=$(n_search out/term/trials.jsonl)
"$TUNER" sweep space.yaml --study term --out out >/dev/null 2>term2.err || fail "resume after SIGTERM"
[ "$(n_search out/term/trials.jsonl)" -eq 4 ] || fail "want 4 trials after resume ($n before)"
echo "ok"
