#!/usr/bin/env bash
# test_gpu.sh: the GPU tests, for a machine with an NVIDIA GPU. CI has no GPU, so
# none of this is a ctest test; CI only compiles and links the CUDA code (scripts/test.sh).
#
#   scripts/test_gpu.sh                  build into build-gpu, then test
#   GPU_BIN_DIR=DIR scripts/test_gpu.sh  use prebuilt DIR/cuda_ops and DIR/engine instead
#   GPU_TEST_STEPS="1 2 3"               only these steps (below); KEEP_GOING=1: run all, fail at end
#   SPEC_CONFIGS="int4 int4_keepset_tc"  step 5's lossless check for only these configs (below)
#   LOG_DIR=DIR                          where the logs go (default: build-gpu/gpu-logs)
# A step, config or count it does not know is refused (exit status 1) before anything is built or
# run, so a machine held briefly is not spent on a typo.
#
# Steps (each must pass; the script stops at the first failure, exit status non-zero):
#   1. cuda_ops ops: every op of the CUDA backend against the CPU backend, random inputs
#   2. cuda_ops model: whole-model logits GPU vs CPU on the fixtures of tests/engine/fixtures
#      (prefill, eager / captured / replayed decode steps, greedy tokens, device argmax), also
#      with the rows kernel for 2 .. 8 inputs at every size (cuda_ops model-rows) and with
#      fusion and graphs off
#   3. the shipped small model models/gemma4-tiny, when it exists: logits GPU vs CPU, and
#      `engine bench` on both devices must generate identical tokens (output_hash) and the
#      same perplexity (to 1e-3 relative); in bf16, and with WEIGHT_DTYPE=int8 and int4
#      (group 32; int4 also with HEAD_DTYPE=int4)
#   4. compute-sanitizer memcheck, racecheck and synccheck over the op test (small shapes), and
#      memcheck over a whole-model run (CUDA graphs included); SAN_TIMEOUT seconds each (default 600)
#   5. speculative decoding on the GPU, on models/gemma4-tiny with its assistant: the drafter's
#      device chain against its single steps and the CPU drafter (cuda_ops draft), lossless
#      serving (`engine bench` output_hash equal for NUM_SPECULATIVE_TOKENS 0 and 1..8, plain,
#      with a keepset, with a small window, with both, with MAX_MODEL_LEN=4096, with int8 and
#      int4 weights, int4 with an int4 keepset head, int4 on the tensor cores
#      (GEMMA_CUDA_MV_MMA=int4, with the int4 keepset head): the configs plain keepset window
#      keepset_window maxlen4096 int8 int4 int4_keepset int4_keepset_tc; SPEC_PROMPTS
#      prompts x SPEC_NEW_TOKENS, default 3 x 128), and compute-sanitizer memcheck and
#      racecheck over the head op and
#      memcheck over a short speculative run (draft-chain graphs included)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# The settings, checked before anything is built or run.
refuse() { echo "test_gpu: $1" >&2; exit 1; }
STEPS=" ${GPU_TEST_STEPS:-1 2 3 4 5} " # a subset, e.g. GPU_TEST_STEPS="1 2 3"
for s in $STEPS; do
  [[ " 1 2 3 4 5 " == *" $s "* ]] || refuse "GPU_TEST_STEPS: \"$s\" is not a step (1 2 3 4 5)"
done
[[ -n ${STEPS// /} ]] || refuse "GPU_TEST_STEPS names no step (1 2 3 4 5)"
ALL_SPEC_CONFIGS="plain keepset window keepset_window maxlen4096 int8 int4 int4_keepset int4_keepset_tc"
SPEC_CONFIGS=${SPEC_CONFIGS:-$ALL_SPEC_CONFIGS}
for c in $SPEC_CONFIGS; do
  [[ " $ALL_SPEC_CONFIGS " == *" $c "* ]] ||
    refuse "SPEC_CONFIGS: \"$c\" is not a config ($ALL_SPEC_CONFIGS)"
done
[[ -n ${SPEC_CONFIGS// /} ]] || refuse "SPEC_CONFIGS names no config ($ALL_SPEC_CONFIGS)"
[[ ${KEEP_GOING:-0} == [01] ]] || refuse "KEEP_GOING: \"$KEEP_GOING\" is neither 0 nor 1"
for v in SPEC_PROMPTS SPEC_NEW_TOKENS SAN_TIMEOUT; do
  [[ -z ${!v-} || ${!v} =~ ^[1-9][0-9]*$ ]] || refuse "$v: \"${!v}\" is not a positive whole number"
done

LOG_DIR=${LOG_DIR:-$ROOT/build-gpu/gpu-logs}
mkdir -p "$LOG_DIR"
SAN_TIMEOUT=${SAN_TIMEOUT:-600}
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
# the products of 2 .. 8 inputs through the rows kernel at every size (the 5-token chunk, 4 rows a
# warp, must still reproduce the single steps bit for bit; by default these small models are
# below the rows kernel's 1 MiB)
run_logged models_rows "$CUDA_OPS" model-rows tests/engine/fixtures/a_ple_kvshare \
  tests/engine/fixtures/b_keqv_untied
# and the plain path: no fusion of neighbouring ops, no graphs
run_logged models_plain env GEMMA_CUDA_FUSE=0 GEMMA_CUDA_GRAPHS=0 "$CUDA_OPS" model \
  tests/engine/fixtures/a_ple_kvshare tests/engine/fixtures/b_keqv_untied \
  tests/engine/fixtures/c_wrapped_f16
fi

TINY=models/gemma4-tiny
if ! want 3; then
  :
elif step "3. the shipped small model"; [[ -f $TINY/config.json && -f $TINY/eval/prompts_tune.jsonl ]]; then
  tmp=$(mktemp -d)
  head -n 3 "$TINY/eval/prompts_tune.jsonl" >"$tmp/prompts.jsonl"
  head -n 6 "$TINY/eval/ppl_tune.jsonl" >"$tmp/ppl.jsonl"
  for prec in bf16 int8 int4 int4_head; do
    penv=()
    [[ $prec != bf16 ]] && penv+=(WEIGHT_DTYPE=${prec%_head} WEIGHT_GROUP=32)
    [[ $prec == *_head ]] && penv+=(HEAD_DTYPE=int4)
    [[ $prec == *_head ]] || run_logged "tiny_logits_$prec" env "${penv[@]}" "$CUDA_OPS" model "$TINY"
    for dev in cpu cuda; do
      env "${penv[@]}" ENGINE_DEVICE=$dev MAX_NEW_TOKENS=96 WARMUP_NUM_PROMPTS=0 \
        "$ENGINE" bench "$TINY" --prompts "$tmp/prompts.jsonl" --ppl "$tmp/ppl.jsonl" \
        >"$LOG_DIR/tiny_bench_${prec}_$dev.out" 2>"$LOG_DIR/tiny_bench_${prec}_$dev.err" ||
        { tail -n 5 "$LOG_DIR/tiny_bench_${prec}_$dev.err" >&2; fail "engine bench $prec on $dev"; continue; }
      tail -n 1 "$LOG_DIR/tiny_bench_${prec}_$dev.out"
    done
    if ! python3 - "$LOG_DIR/tiny_bench_${prec}_cpu.out" "$LOG_DIR/tiny_bench_${prec}_cuda.out" "$prec" <<'PY'
import json, sys
cpu, gpu = (json.loads(open(p).read().strip().splitlines()[-1]) for p in sys.argv[1:3])
ok = cpu["output_hash"] == gpu["output_hash"]
print(f"{sys.argv[3]}: greedy output: cpu {cpu['output_hash']} cuda {gpu['output_hash']}: "
      f"{'identical' if ok else 'DIFFERENT'}; tps cpu {cpu['tps']:.1f} cuda {gpu['tps']:.1f}")
if cpu.get("ppl") is not None:
    rel = abs(cpu["ppl"] - gpu["ppl"]) / cpu["ppl"]
    print(f"ppl: cpu {cpu['ppl']:.6f} cuda {gpu['ppl']:.6f} (relative difference {rel:.2e})")
    ok = ok and rel <= 1e-3
sys.exit(0 if ok else 1)
PY
    then
      fail "small model ($prec): cpu and cuda engines disagree"
    fi
  done
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
  # synccheck: barriers reached by diverged warps or from different instructions (an aligned
  # bar.sync so reached is undefined: the MLP kernels' named barrier is the unaligned form).
  run_logged synccheck timeout "$SAN_TIMEOUT" compute-sanitizer --tool synccheck --error-exitcode 3 "$CUDA_OPS" ops small
  run_logged memcheck_model timeout "$SAN_TIMEOUT" compute-sanitizer --tool memcheck --error-exitcode 3 \
    "$CUDA_OPS" model tests/engine/fixtures/a_ple_kvshare
else
  fail "compute-sanitizer not found"
fi

if ! want 5; then
  :
elif step "5. speculative decoding on the GPU"; [[ -f $TINY/config.json && -d $TINY-assistant ]]; then
  run_logged spec_drafter "$CUDA_OPS" draft "$TINY"
  run_logged spec_drafter_int4 env WEIGHT_DTYPE=int4 "$CUDA_OPS" draft "$TINY"
  tmp=$(mktemp -d)
  head -n "${SPEC_PROMPTS:-3}" "$TINY/eval/prompts_tune.jsonl" >"$tmp/prompts.jsonl"
  # lossless: every k serves the tokens of k = 0 (plain greedy on the same device); maxlen4096:
  # a cache longer than the cluster attention takes, so each request's horizon decides its
  # full layers' form (kernels/attention.cu k_attention_splits)
  for cfg in $SPEC_CONFIGS; do
    env_cfg=()
    [[ $cfg == int8 ]] && env_cfg+=(WEIGHT_DTYPE=int8)
    [[ $cfg == int4* ]] && env_cfg+=(WEIGHT_DTYPE=int4)
    [[ $cfg == int4_keepset* ]] && env_cfg+=(HEAD_DTYPE=int4)
    [[ $cfg == *_tc ]] && env_cfg+=(GEMMA_CUDA_MV_MMA=int4)
    [[ $cfg == *keepset* ]] && env_cfg+=(LM_HEAD_KEEPSET=1024)
    [[ $cfg == *window* ]] && env_cfg+=(SLIDING_WINDOW=24)
    [[ $cfg == maxlen4096 ]] && env_cfg+=(MAX_MODEL_LEN=4096)
    for k in 0 1 2 3 4 5 6 7 8; do
      env "${env_cfg[@]}" ENGINE_DEVICE=cuda NUM_SPECULATIVE_TOKENS=$k \
        MAX_NEW_TOKENS="${SPEC_NEW_TOKENS:-128}" WARMUP_NUM_PROMPTS=0 \
        "$ENGINE" bench "$TINY" --prompts "$tmp/prompts.jsonl" \
        >"$LOG_DIR/spec_${cfg}_k$k.out" 2>"$LOG_DIR/spec_${cfg}_k$k.err" ||
        { tail -n 5 "$LOG_DIR/spec_${cfg}_k$k.err" >&2; fail "engine bench $cfg k=$k on cuda"; }
    done
  done
  if ! python3 - "$LOG_DIR" $SPEC_CONFIGS <<'PY' 2>&1 | tee "$LOG_DIR/spec_lossless.log"
import json, sys
ok = True
for cfg in sys.argv[2:]:
    runs = []
    for k in range(9):
        try:
            runs.append(json.loads(open(f"{sys.argv[1]}/spec_{cfg}_k{k}.out").read().strip().splitlines()[-1]))
        except (OSError, ValueError, IndexError):
            runs.append(None)
    if any(r is None for r in runs):
        print(f"{cfg}: some runs gave no result")
        ok = False
        continue
    base = runs[0]["output_hash"]
    same = [r["output_hash"] == base for r in runs]
    ok = ok and all(same)
    acc = " ".join(f"{r.get('accept_len', 0):.2f}" for r in runs[1:])
    print(f"{cfg:15s} k=0 hash {base}: k=1..8 {'identical' if all(same) else 'DIFFERENT: ' + str([r['output_hash'] for r in runs])}; "
          f"accepted drafts per step k=1..8: {acc}")
sys.exit(0 if ok else 1)
PY
  then
    fail "speculative decoding on the GPU is not lossless"
  fi
  if command -v compute-sanitizer >/dev/null; then
    python3 - "$TINY/eval/prompts_tune.jsonl" "$tmp/short.jsonl" <<'PY'
import json, sys
p = json.loads(open(sys.argv[1]).readline())
json.dump({"id": "short", "prompt_token_ids": p["prompt_token_ids"][:40]}, open(sys.argv[2], "w"))
PY
    run_logged spec_memcheck_op timeout "$SAN_TIMEOUT" compute-sanitizer --tool memcheck \
      --error-exitcode 3 --leak-check full "$CUDA_OPS" draft small
    run_logged spec_racecheck_op timeout "$SAN_TIMEOUT" compute-sanitizer --tool racecheck \
      --error-exitcode 3 "$CUDA_OPS" draft small
    run_logged spec_memcheck_run env ENGINE_DEVICE=cuda NUM_SPECULATIVE_TOKENS=3 MAX_NEW_TOKENS=24 \
      WARMUP_NUM_PROMPTS=0 timeout "$SAN_TIMEOUT" compute-sanitizer --tool memcheck --error-exitcode 3 \
      "$ENGINE" bench "$TINY" --prompts "$tmp/short.jsonl"
  else
    fail "compute-sanitizer not found"
  fi
  rm -rf "$tmp"
else
  echo "test_gpu: $TINY or its assistant is not there: speculative checks skipped"
fi

echo
if ((${#FAILED[@]})); then
  echo "test_gpu: ${#FAILED[@]} step(s) FAILED: ${FAILED[*]} (logs in $LOG_DIR)" >&2
  exit 1
fi
echo "test_gpu: all GPU tests passed (logs in $LOG_DIR)"
