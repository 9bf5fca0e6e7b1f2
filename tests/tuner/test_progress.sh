# Progress: on a terminal (a pseudo-terminal made by script(1)) one live line, redrawn
# with \r, says trial i of N, the best so far, elapsed time and ETA; without a terminal
# there are only plain per-trial lines, with no control characters.
source "$TESTS_DIR/sweep_lib.sh"

write_space space.yaml <<'YAML'
engine: {command: [@ENGINE@], env: {SYNTH_SLOW_START: "0.05"}, timeout: 10}
objective: {metric: tps, direction: maximize}
parameters:
  SLIDING_WINDOW: {type: int, min: 128, max: 512, step: 128}
strategy: grid
verify: {top: 2, repeats: 1}
YAML

"$TUNER" sweep space.yaml --study plain >/dev/null 2>plain.err || { cat plain.err; fail "plain sweep"; }
! grep -q $'\r' plain.err || fail "control characters without a terminal"
! grep -q "ETA" plain.err || fail "live line without a terminal"
[ "$(grep -c '^trial [0-9]* \[search\]' plain.err)" -eq 4 ] || fail "want 4 plain trial lines"

command -v script >/dev/null || fail "script(1) (bsdutils) is needed for this test"
script -qefc "'$TUNER' sweep space.yaml --study tty >/dev/null" /dev/null >tty.out </dev/null ||
    { cat tty.out; fail "sweep on a terminal"; }
grep -q $'\r\033\\[K' tty.out || fail "no redrawn live line"
tr '\r' '\n' <tty.out | sed 's/\x1b\[K//g' >tty.lines
grep -q '^trial 1 of 6 | best - | elapsed 0:0[0-9] | ETA ?' tty.lines || { cat tty.lines; fail "first live line"; }
grep -q '^trial 4 of 6 | best tps [0-9.]* at SLIDING_WINDOW=128 | elapsed 0:0[0-9] | ETA 0:0[0-9]' tty.lines ||
    { cat tty.lines; fail "last live line"; }
[ "$(grep -c '^trial [0-9]* \[search\]' tty.lines)" -eq 4 ] || fail "want 4 permanent trial lines"
# Then the verification of the top 2 on the held-out prompts: the count goes on to 6 of 6.
[ "$(grep -c '^trial [0-9]* \[verify\]' tty.lines)" -eq 2 ] || fail "want 2 verification lines"
grep -q '^trial 6 of 6 | best tps [0-9.]* at SLIDING_WINDOW=128 | elapsed 0:0[0-9] | ETA 0:0[0-9]' tty.lines ||
    { cat tty.lines; fail "live line of the last verification run"; }
echo "ok"
