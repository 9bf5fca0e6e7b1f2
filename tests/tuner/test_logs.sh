# A trial's log is capped: past the limit (8 MiB by default, --log-limit SIZE) it keeps its
# first and its last half with a line between them that says how many bytes were cut, and
# the result at the end of the output is still read.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
study: logs
engine: {command: [@ENGINE@], timeout: 60}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 256, max: 512, step: 256}
strategy: grid
verify: {top: 1, repeats: 1}
YAML
check_log() { # log file, limit in bytes, bytes of output
    local size
    size=$(stat -c %s "$1")
    [ "$size" -le $(($2 + 200)) ] || fail "$1: $size bytes, over the limit $2"
    [ "$size" -ge "$2" ] || fail "$1: $size bytes, less than the limit $2 kept"
    head -1 "$1" | qgrep "^synth_engine: window" || fail "$1: the head of the output is gone"
    # (the engine's one stderr line may come anywhere: the two pipes are read in turn)
    tail -3 "$1" | qgrep '^{"tps":' || fail "$1: the result line is gone from the tail"
    tail -3 "$1" | qgrep '^synth_engine: done$' || fail "$1: the last line is gone"
    qgrep -E "^\[tuner: [0-9]+ bytes of output cut here; the log keeps the first $(($2 / 2)) and the last $(($2 - $2 / 2)) bytes\]$" "$1" ||
        fail "$1: no line saying what was cut"
}
SYNTH_SPAM_BYTES=3000000 "$TUNER" sweep space.yaml --log-limit 1M >/dev/null 2>small.err ||
    { cat small.err; fail "sweep with --log-limit 1M"; }
[ "$(search_lines out/logs/trials.jsonl | grep -c '"status":"ok"')" -eq 2 ] || fail "want 2 ok trials"
check_log out/logs/logs/1.log 1048576
# The default: 8 MiB.
SYNTH_SPAM_BYTES=12000000 "$TUNER" sweep space.yaml --study big >/dev/null 2>big.err ||
    { cat big.err; fail "sweep with the default limit"; }
check_log out/big/logs/1.log 8388608
# Under the limit the log is the whole output.
"$TUNER" sweep space.yaml --study plain --log-limit 1M >/dev/null 2>plain.err || { cat plain.err; fail "plain"; }
! qgrep "bytes of output cut here" out/plain/logs/1.log || fail "a short log was cut"
echo "ok"
