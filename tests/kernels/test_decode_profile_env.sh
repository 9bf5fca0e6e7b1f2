#!/usr/bin/env bash
# test_decode_profile_env.sh: bench/decode_profile refuses a profiling setting it does not
# understand - DECODE_PROFILE_MAX_LEN, DECODE_PROFILE_HORIZON, DECODE_PROFILE_TRACE_ROWS,
# DECODE_PROFILE_TRACE_PREFILL - with exit status 1 and a message naming the variable and the
# value. It checks them before it builds a decoder, so no GPU is needed: this runs wherever
# decode_profile is built (CI included).
# usage: test_decode_profile_env.sh DECODE_PROFILE
set -uo pipefail
ROOT=${ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$ROOT/tests/tools/check.sh"
PROFILE=$1
M=$ROOT/models/gemma4-tiny
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

profile() { env "$@" "$PROFILE" "$M" 4 4; }
refused "max_len not a number" 'rc 1: decode_profile: ' profile DECODE_PROFILE_MAX_LEN=12x
refused "max_len not a number, message" 'DECODE_PROFILE_MAX_LEN: "12x" is not a number of positions' \
  profile DECODE_PROFILE_MAX_LEN=12x
refused "max_len zero" 'DECODE_PROFILE_MAX_LEN: "0" is not a number of positions' \
  profile DECODE_PROFILE_MAX_LEN=0
refused "horizon not 0 or 1" 'DECODE_PROFILE_HORIZON: "yes" is neither 0 (none) nor 1' \
  profile DECODE_PROFILE_HORIZON=yes
refused "trace rows without a trace" \
  'DECODE_PROFILE_TRACE_ROWS: "3" must be a row count of DECODE_PROFILE_VERIFY'"'"'s, with DECODE_PROFILE_TRACE set' \
  profile DECODE_PROFILE_TRACE_ROWS=3 DECODE_PROFILE_VERIFY=3
refused "trace rows without verify passes" 'rc 1: ' \
  profile DECODE_PROFILE_TRACE_ROWS=3 DECODE_PROFILE_TRACE="$tmp/t.csv"
refused "trace rows not a count" 'DECODE_PROFILE_TRACE_ROWS: "0"' \
  profile DECODE_PROFILE_TRACE_ROWS=0 DECODE_PROFILE_VERIFY=2 DECODE_PROFILE_TRACE="$tmp/t.csv"
refused "trace rows past 64" 'DECODE_PROFILE_TRACE_ROWS: "65"' \
  profile DECODE_PROFILE_TRACE_ROWS=65 DECODE_PROFILE_VERIFY=2 DECODE_PROFILE_TRACE="$tmp/t.csv"
refused "trace prefill not 0 or 1" 'DECODE_PROFILE_TRACE_PREFILL: "yes" is neither 0 nor 1' \
  profile DECODE_PROFILE_TRACE_PREFILL=yes DECODE_PROFILE_TRACE="$tmp/t.csv"
refused "trace prefill without a trace" \
  'DECODE_PROFILE_TRACE_PREFILL=1 needs DECODE_PROFILE_TRACE and no DECODE_PROFILE_TRACE_ROWS' \
  profile DECODE_PROFILE_TRACE_PREFILL=1
refused "trace prefill with trace rows" 'DECODE_PROFILE_TRACE_PREFILL=1 needs' \
  profile DECODE_PROFILE_TRACE_PREFILL=1 DECODE_PROFILE_TRACE_ROWS=2 DECODE_PROFILE_VERIFY=2 \
  DECODE_PROFILE_TRACE="$tmp/t.csv"
[ ! -e "$tmp/t.csv" ] || { echo "FAIL: a refused run wrote its trace"; fails=$((fails + 1)); }
finish test_decode_profile_env
