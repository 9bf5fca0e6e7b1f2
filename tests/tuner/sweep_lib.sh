# sweep_lib.sh: helpers sourced by the tuner's shell tests (test_*.sh).
#
# Every test runs in its own temporary folder ($T, removed on exit) and drives the tuner
# ($TUNER) with the synthetic engine ($SYNTH_ENGINE); both paths come from ctest.
set -euo pipefail
: "${TUNER:?set TUNER to the tuner binary}" "${SYNTH_ENGINE:?set SYNTH_ENGINE to synth_engine}"
T=$(mktemp -d "${TMPDIR:-/tmp}/tuner-test.XXXXXX")
BG_PIDS=()
cleanup() {
    local p
    for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
# A command that stops the test through set -e says where, so no failure is silent.
trap 'echo "FAIL: ${BASH_SOURCE[0]}:$LINENO: exit status $? from: $BASH_COMMAND" >&2' ERR
cd "$T"
export TUNER_KILL_GRACE=${TUNER_KILL_GRACE:-0.5}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# write_space FILE: the space text from stdin, with @ENGINE@ replaced by the engine path.
write_space() { sed "s#@ENGINE@#$SYNTH_ENGINE#g" >"$1"; }

# json_field KEY: the value of "KEY": (a number or a "string") in each line of stdin.
json_field() { grep -oE "\"$1\":(\"([^\"\\\\]|\\\\.)*\"|[-0-9.eE+]+|null)" | sed "s/^\"$1\"://; s/^\"//; s/\"$//"; }

# expect_contains FILE TEXT: fail unless FILE contains TEXT (fixed string).
expect_contains() { grep -qF -- "$2" "$1" || { cat "$1" >&2; fail "$1 lacks: $2"; }; }

# wait_lines FILE N SECONDS: wait until FILE has at least N lines.
wait_lines() {
    local i
    for ((i = 0; i < $3 * 20; i++)); do
        [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
        sleep 0.05
    done
    fail "$1 did not reach $2 lines in $3 s"
}

# sweep_bg ERRFILE ARGS...: start `$TUNER sweep ARGS` in the background (stdout dropped, stderr
# into ERRFILE), for a test that interrupts it; its pid goes into $pid and BG_PIDS (so that it is
# killed on exit should the test fail first). Environment assignments before it reach the tuner.
sweep_bg() {
    local err=$1
    shift
    "$TUNER" sweep "$@" >/dev/null 2>"$err" &
    pid=$!
    BG_PIDS+=("$pid")
}

# stop_at FILE N SECONDS SIGNAL: once FILE has at least N lines, send SIGNAL (KILL, INT, TERM)
# to the sweep started by sweep_bg and wait for it; its exit status goes into $rc.
stop_at() {
    wait_lines "$1" "$2" "$3"
    kill -"$4" "$pid"
    rc=0
    wait "$pid" 2>/dev/null || rc=$?
}

# qgrep ARGS: grep -q that reads all of its input. (grep -q stops at the first match; the
# command writing into the pipe then dies of SIGPIPE, which pipefail turns into a failure.)
qgrep() { grep "$@" >/dev/null; }

# search_lines FILE: the trial lines of the search (every phase but "verify").
search_lines() { grep -v '"phase":"verify"' "$1" || true; }
# n_search FILE: how many there are.
n_search() { search_lines "$1" | wc -l; }
# verify_lines FILE: the held-out verification runs only.
verify_lines() { grep '"phase":"verify"' "$1" || true; }
