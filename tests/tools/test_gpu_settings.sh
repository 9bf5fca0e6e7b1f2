#!/usr/bin/env bash
# scripts/test_gpu.sh's settings: a step, a speculation config, a count or a KEEP_GOING it does
# not know is refused with exit status 1 and a message naming the variable and the value, before
# anything is built or run (no GPU needed); settings it knows get past the check (here to the
# missing binaries of an empty GPU_BIN_DIR).
set -uo pipefail
# shellcheck source=tests/tools/check.sh
source "$TESTS_DIR/check.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gpu() { env LOG_DIR="$tmp/logs" GPU_BIN_DIR="$tmp" "$@" bash "$ROOT/scripts/test_gpu.sh"; }
refused "unknown step" 'rc 1: test_gpu: GPU_TEST_STEPS: "6" is not a step (1 2 3 4 5)' \
  gpu GPU_TEST_STEPS="1 6"
refused "no step" 'rc 1: test_gpu: GPU_TEST_STEPS names no step' gpu GPU_TEST_STEPS="  "
refused "unknown config" 'rc 1: test_gpu: SPEC_CONFIGS: "int4_tc" is not a config (plain ' \
  gpu SPEC_CONFIGS="int4 int4_tc"
refused "no config" 'rc 1: test_gpu: SPEC_CONFIGS names no config' gpu SPEC_CONFIGS=" "
refused "prompts not a count" 'rc 1: test_gpu: SPEC_PROMPTS: "3x" is not a positive whole number' \
  gpu SPEC_PROMPTS=3x
refused "tokens zero" 'rc 1: test_gpu: SPEC_NEW_TOKENS: "0" is not a positive whole number' \
  gpu SPEC_NEW_TOKENS=0
refused "sanitizer timeout" 'rc 1: test_gpu: SAN_TIMEOUT: "-5" is not a positive whole number' \
  gpu SAN_TIMEOUT=-5
refused "keep going" 'rc 1: test_gpu: KEEP_GOING: "yes" is neither 0 nor 1' gpu KEEP_GOING=yes
[[ ! -e $tmp/logs ]] || { echo "FAIL: a refused run made its log folder"; fails=$((fails + 1)); }
refused "known settings pass the check" "rc 1: test_gpu: $tmp/cuda_ops is missing" \
  gpu GPU_TEST_STEPS="5" SPEC_CONFIGS="int4_keepset_tc" SPEC_PROMPTS=1 SPEC_NEW_TOKENS=16 KEEP_GOING=1
finish test_gpu_settings
