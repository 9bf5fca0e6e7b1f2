# check.sh: what the shell tests of bench/'s scripts and of the tools share, sourced after
# `set -uo pipefail`: a failure count and three checks. Each test ends with `finish NAME`.
fails=0

# check DESCRIPTION OUTPUT EXPECTED: OUTPUT must contain EXPECTED (else print both, count a failure).
check() {
  if [[ $2 != *"$3"* ]]; then echo "FAIL: $1: expected '$3' in:"; echo "$2" | head -30; fails=$((fails + 1)); fi
}

# refused DESCRIPTION EXPECTED COMMAND...: run COMMAND; "rc STATUS: its output" must contain EXPECTED
# (a refusal names its exit status and the file it refuses).
refused() {
  local what=$1 want=$2 err rc
  shift 2
  err=$("$@" 2>&1); rc=$?
  check "$what" "rc $rc: $err" "$want"
}

# finish NAME: the verdict line, and exit status 1 when anything failed.
finish() {
  [[ $fails == 0 ]] && echo "$1: all passed" || { echo "$1: $fails failure(s)"; exit 1; }
}
