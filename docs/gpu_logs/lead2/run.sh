#!/usr/bin/env bash
# device call (lead, after p's matvec work): the merged code (attention merge in its split
# kernel, matmul_argmax on the GPU) - scripts/test_gpu.sh steps 1-5 - and, alone on the GPU,
# the E4B decode step and the small model's speculative bench with this build (.carry/lead)
# against p's final code without those two changes (9900a49, .carry/pb), in the same call.
# Both built here for sm_90 only (CUDA_ARCHITECTURES edited in scratch worktrees) and
# stripped, so that both fit the 64 MiB carry.
set -u
for d in lead pb; do (cd .carry/$d && tar xzf bins.tgz); done
export LD_LIBRARY_PATH=$PWD/.carry/lead:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
B=.carry/lead; T=$OUT/tests; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi -L
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
# correctness first (nothing timed in this phase): steps 1-3, step 4's sanitizers, step 5
timeout 130 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $B/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 130 compute-sanitizer --tool racecheck --error-exitcode 3 $B/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
timeout 130 compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda_ops model tests/engine/fixtures/a_ple_kvshare > $T/memcheck_model.log 2>&1 & P3=$!
GPU_BIN_DIR=$B KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T timeout 130 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|greedy|ppl|max \|" $T/test123.txt | head -30
GEMMA_CUDA_FUSE_MM=1 timeout 60 $B/cuda_ops model tests/engine/fixtures/a_ple_kvshare tests/engine/fixtures/b_keqv_untied tests/engine/fixtures/c_wrapped_f16 models/gemma4-tiny > $T/models_fuse_mm1.log 2>&1; el "models with FUSE_MM=1 rc $?"
GPU_BIN_DIR=$B KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=60 LOG_DIR=$T timeout 150 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical|hash|ERROR SUMMARY|hazard" $T/test5.txt | head -20
wait $MK; el "make: $(tail -1 $T/make_e4b.log)"
wait $P1; r1=$?; wait $P2; r2=$?; wait $P3; r3=$?
el "step 4: memcheck rc $r1, racecheck rc $r2, memcheck_model rc $r3"
tail -n 2 $T/memcheck.log $T/racecheck.log $T/memcheck_model.log
# timing, alone on the GPU: before (p's build) and after (this build), twice each, interleaved
R=graphs,graphs_all_matmul_groups # names of the decode-profile runs in these two builds (later: graphs_auto_pair)
for i in 1 2; do
  for v in pb lead; do
    DECODE_PROFILE_RUNS=$R timeout 40 .carry/$v/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_profile_${v}_$i.txt 2>&1
    el "e4b $v $i: $(grep '"run"' $T/e4b_profile_${v}_$i.txt | sed 's/.*"run": "\([a-z_]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
  done
done
DECODE_PROFILE_RUNS=profiled timeout 40 $B/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_profiled_lead.txt 2>&1; grep -A13 "cuda profile" $T/e4b_profiled_lead.txt | head -14
for v in pb lead; do
  GPU_BIN_DIR=.carry/$v PROMPTS=2 NEW_TOKENS=128 REPEATS=1 WARMUP=1 OUT=$T/spec_$v.md timeout 70 bench/bench_spec_gpu.sh > $T/spec_$v.log 2>&1
  el "spec $v rc $?"; grep -E "^\| [0-9] \|" $T/spec_$v.md | cut -c1-200
done
# the caller packs $OUT/tests (see the command in docs/bench_gpu.md)
