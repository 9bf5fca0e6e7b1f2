# A hung engine is stopped at its timeout, together with the grandchild it spawned, and
# the sweep goes on: once through SIGTERM, once (the engine ignores SIGTERM) through
# SIGKILL after the grace period. No process of a trial is left behind.
source "$TESTS_DIR/sweep_lib.sh"

run_case() { # $1 = name, $2 = 1 to make the engine ignore SIGTERM
    write_space "$1.yaml" <<YAML
engine:
  command: [@ENGINE@]
  env: {SYNTH_HANG_WHEN: SLIDING_WINDOW=256, SYNTH_PIDFILE: $T/$1.pids$( [ "$2" = 1 ] && echo ", SYNTH_IGNORE_TERM: '1'")}
  timeout: 1
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 384, step: 128}
strategy: grid
YAML
    local t0=$SECONDS
    "$TUNER" sweep "$1.yaml" --out out >/dev/null 2>"$1.err" || { cat "$1.err"; fail "$1: sweep failed"; }
    [ $((SECONDS - t0)) -lt 20 ] || fail "$1: the sweep took $((SECONDS - t0)) s"
    local trials=out/$1/trials.jsonl
    [ "$(n_search $trials)" -eq 3 ] || fail "$1: want 3 trials"
    local hung
    hung=$(search_lines $trials | grep '"SLIDING_WINDOW":"256"')
    echo "$hung" | qgrep '"status":"failed"' || fail "$1: hung trial not failed"
    echo "$hung" | json_field reason | qgrep "^timed out after 1 s (process group stopped with $3)" ||
        fail "$1: reason: $(echo "$hung" | json_field reason)"
    local wall
    wall=$(echo "$hung" | json_field wall_s)
    awk -v w="$wall" 'BEGIN { exit !(w >= 1 && w < 8) }' || fail "$1: hung trial took $wall s"
    [ "$(search_lines $trials | grep -c '"status":"ok"')" -eq 2 ] || fail "$1: the other points must be ok"
    [ -s "$1.pids" ] || fail "$1: the engine did not record its pids"
    local pid
    for pid in $(cat "$1.pids"); do
        if kill -0 "$pid" 2>/dev/null; then
            cat "/proc/$pid/status" >&2 2>/dev/null || true
            fail "$1: process $pid of the hung trial is still alive"
        fi
    done
    expect_contains "out/$1/logs/2.log" "synth_engine: hanging"
}

run_case term 0 SIGTERM
run_case kill 1 SIGKILL
# The process table agrees: neither engine nor grandchild exists, not even as a zombie.
for pid in $(cat term.pids kill.pids); do
    [ ! -e "/proc/$pid" ] || fail "process $pid is still in the process table (zombie?)"
done
echo "ok"
