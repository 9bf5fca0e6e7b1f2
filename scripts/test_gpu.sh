#!/usr/bin/env bash
# test_gpu.sh: the GPU tests (issue 7), for a machine with an NVIDIA GPU. CI has no GPU, so
# none of this is a ctest test; CI only compiles and links the CUDA code (scripts/test.sh).
#
#   scripts/test_gpu.sh                  build into build-gpu, then test
#   GPU_BIN_DIR=DIR scripts/test_gpu.sh  use prebuilt DIR/cuda_ops and DIR/engine instead
#   GPU_TEST_STEPS="1 2 3"               only these steps (below); KEEP_GOING=1: run all, fail at end
#   LOG_DIR=DIR                          where the logs go (default: build-gpu/gpu-logs)
#
# Steps (each must pass; the script stops at the first failure, exit status non-zero):
#   1. cuda_ops ops: every op of the CUDA backend against the CPU backend, random inputs
#   2. cuda_ops model: whole-model logits GPU vs CPU on the fixtures of tests/engine/fixtures
#      (prefill, eager / captured / replayed decode steps, greedy tokens, device argmax)
#   3. the shipped small model models/gemma4-tiny, when it exists: logits GPU vs CPU, and
#      `engine bench` on both devices must generate identical tokens (output_hash) and the
#      same perplexity (to 1e-3 relative)
#   4. compute-sanitizer memcheck and racecheck over the op test (small shapes), and memcheck
#      over a whole-model run (CUDA graphs included); SAN_TIMEOUT seconds each (default 600)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
LOG_DIR=${LOG_DIR:-$ROOT/build-gpu/gpu-logs}
mkdir -p "$LOG_DIR"
SAN_TIMEOUT=${SAN_TIMEOUT:-600}
STEPS=" ${GPU_TEST_STEPS:-1 2 3 4} " # a subset, e.g. GPU_TEST_STEPS="1 2 3"
want() { [[ $STEPS == *" $1 "* ]]; }

if [[ -n "${GPU_BIN_DIR:-}" ]]; then
  BIN=$(cd "$GPU_BIN_DIR" && pwd)
  CUDA_OPS=$BIN/cuda_ops
  ENGINE=$BIN/engine
else
  ./scripts/build.sh build-gpu -DWITH_CUDA=ON
  CUDA_OPS=$ROOT/build-gpu/tests/kernels/cuda_ops
  ENGINE=$ROOT/build-gpu/engine/engine
fi
for f in "$CUDA_OPS" "$ENGINE"; do
  [[ -x $f ]] || { echo "test_gpu: $f is missing (was the build configured with CUDA?)" >&2; exit 1; }
done
nvidia-smi -L || { echo "test_gpu: no NVIDIA GPU here" >&2; exit 1; }

step() { echo; echo "=== $*"; }
# KEEP_GOING=1 runs every step and fails at the end (for a machine you hold only briefly).
FAILED=()
fail() {
  echo "test_gpu: FAILED: $*" >&2
  FAILED+=("$1")
  [[ ${KEEP_GOING:-0} == 1 ]] || exit 1
}
run_logged() { # name command...: run, tee into LOG_DIR/name.log, fail on non-zero
  local name=$1; shift
  if ! "$@" 2>&1 | tee "$LOG_DIR/$name.log"; then
    fail "$name (log: $LOG_DIR/$name.log)"
  fi
}

if want 1; then
step "1. ops: CUDA backend vs CPU backend"
run_logged ops "$CUDA_OPS" ops
fi

if want 2; then
step "2. whole models: GPU vs CPU on the fixtures"
run_logged models "$CUDA_OPS" model tests/engine/fixtures/a_ple_kvshare \
  tests/engine/fixtures/b_keqv_untied tests/engine/fixtures/c_wrapped_f16
# and the plain path: no fusion of neighbouring ops, no graphs
run_logged models_plain env GEMMA_CUDA_FUSE=0 GEMMA_CUDA_GRAPHS=0 "$CUDA_OPS" model \
  tests/engine/fixtures/a_ple_kvshare tests/engine/fixtures/b_keqv_untied \
  tests/engine/fixtures/c_wrapped_f16
fi

TINY=models/gemma4-tiny
if ! want 3; then
  :
elif step "3. the shipped small model"; [[ -f $TINY/config.json && -f $TINY/eval/prompts_tune.jsonl ]]; then
  run_logged tiny_logits "$CUDA_OPS" model "$TINY"
  tmp=$(mktemp -d)
  head -n 3 "$TINY/eval/prompts_tune.jsonl" >"$tmp/prompts.jsonl"
  head -n 6 "$TINY/eval/ppl_tune.jsonl" >"$tmp/ppl.jsonl"
  for dev in cpu cuda; do
    ENGINE_DEVICE=$dev MAX_NEW_TOKENS=96 WARMUP_NUM_PROMPTS=0 \
      "$ENGINE" bench "$TINY" --prompts "$tmp/prompts.jsonl" --ppl "$tmp/ppl.jsonl" \
      >"$LOG_DIR/tiny_bench_$dev.out" 2>"$LOG_DIR/tiny_bench_$dev.err" ||
      { tail -n 5 "$LOG_DIR/tiny_bench_$dev.err" >&2; fail "engine bench on $dev"; continue; }
    tail -n 1 "$LOG_DIR/tiny_bench_$dev.out"
  done
  if ! python3 - "$LOG_DIR/tiny_bench_cpu.out" "$LOG_DIR/tiny_bench_cuda.out" <<'PY'
import json, sys
cpu, gpu = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
ok = cpu["output_hash"] == gpu["output_hash"]
print(f"greedy output: cpu {cpu['output_hash']} cuda {gpu['output_hash']}: "
      f"{'identical' if ok else 'DIFFERENT'}; tps cpu {cpu['tps']:.1f} cuda {gpu['tps']:.1f}")
if cpu.get("ppl") is not None:
    rel = abs(cpu["ppl"] - gpu["ppl"]) / cpu["ppl"]
    print(f"ppl: cpu {cpu['ppl']:.6f} cuda {gpu['ppl']:.6f} (relative difference {rel:.2e})")
    ok = ok and rel <= 1e-3
sys.exit(0 if ok else 1)
PY
  then
    fail "small model: cpu and cuda engines disagree"
  fi
  rm -rf "$tmp"
else
  echo "test_gpu: $TINY is not there yet: small-model checks skipped"
fi

if ! want 4; then
  :
elif step "4. compute-sanitizer"; command -v compute-sanitizer >/dev/null; then
  # --error-exitcode makes any finding fail the step; racecheck looks at shared-memory hazards.
  # (timeout: the sanitizers slow kernels down a hundredfold; small shapes keep this short.)
  run_logged memcheck timeout "$SAN_TIMEOUT" compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full \
    "$CUDA_OPS" ops small
  run_logged racecheck timeout "$SAN_TIMEOUT" compute-sanitizer --tool racecheck --error-exitcode 3 "$CUDA_OPS" ops small
  run_logged memcheck_model timeout "$SAN_TIMEOUT" compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$CUDA_OPS" model tests/engine/fixtures/a_ple_kvshare
else
  fail "compute-sanitizer not found"
fi

echo
if ((${#FAILED[@]})); then
  echo "test_gpu: ${#FAILED[@]} step(s) FAILED: ${FAILED[*]} (logs in $LOG_DIR)" >&2
  exit 1
fi
echo "test_gpu: all GPU tests passed (logs in $LOG_DIR)"
