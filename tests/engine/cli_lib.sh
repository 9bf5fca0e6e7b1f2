# cli_lib.sh: helpers sourced by the engine's command-line tests (test_cli.sh and the like).
#
# Sets up $tmp (a temporary folder removed on exit) and a failure count; `expect` runs one
# command and checks its exit status and what it says on stderr; `cli_finish NAME` ends the
# test (exit 1 when anything failed). Needs ENGINE (the binary) and TESTS_DIR (tests/engine),
# as ctest sets them. Failures are counted, not fatal, so one run lists all that is wrong.
set -u
: "${ENGINE:?ENGINE must point to the engine binary}"
: "${TESTS_DIR:?TESTS_DIR must point to tests/engine}"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect CODE NEEDLE... -- CMD...: run CMD, want exit status CODE and every NEEDLE in stderr.
# CMD's stdout and stderr are left in $tmp/out and $tmp/err.
expect() {
    local code=$1
    shift
    local needles=()
    while [ "$1" != "--" ]; do
        needles+=("$1")
        shift
    done
    shift
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -ne "$code" ]; then
        fail "$* -> exit $rc, want $code; stderr: $(head -c 400 "$tmp/err")"
        return
    fi
    for n in "${needles[@]}"; do
        if ! grep -qF -- "$n" "$tmp/err"; then
            fail "$* -> stderr lacks \"$n\"; stderr: $(head -c 400 "$tmp/err")"
        fi
    done
}

# cli_finish NAME: the last line of a test: exit 1 naming the failure count, else say so.
cli_finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$1: $failures failure(s)" >&2
        exit 1
    fi
    echo "$1: all passed"
}
