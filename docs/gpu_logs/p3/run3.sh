#!/usr/bin/env bash
# device call 3 (engineer p, final): scripts/test_gpu.sh steps 1-4 on the final build + the
# E4B and small-model decode profiles + E4B engine bench. Timing runs alone on the GPU.
cd .carry/p && tar xzf bins.tgz && cd ../..
export LD_LIBRARY_PATH=$PWD/.carry/p:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
B=.carry/p; T=$OUT/tests; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi -L
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $OUT/make_e4b.log 2>&1; echo "make rc $?" >> $OUT/make_e4b.log) &
MK=$!
# step 4 of scripts/test_gpu.sh, its three commands at once (correctness only, beside steps 1-3: nothing is timed in this phase)
timeout 125 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $B/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 125 compute-sanitizer --tool racecheck --error-exitcode 3 $B/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
timeout 125 compute-sanitizer --tool memcheck --error-exitcode 3 $B/cuda_ops model tests/engine/fixtures/a_ple_kvshare > $T/memcheck_model.log 2>&1 & P3=$!
GPU_BIN_DIR=$B KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T timeout 125 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "matvec variant|^ops:|FAIL|greedy|ppl:|all GPU|max \|" $T/test123.txt | head -30
wait $MK; el "make: $(tail -1 $OUT/make_e4b.log)"
wait $P1; r1=$?; wait $P2; r2=$?; wait $P3; r3=$?
el "step 4: memcheck rc $r1, racecheck rc $r2, memcheck_model rc $r3"
$B/cuda_ops copy-bw > $OUT/copy_bw.txt 2>&1; cat $OUT/copy_bw.txt | tail -1
DECODE_PROFILE_RUNS=graphs,graphs_general,graphs_all_matmul_groups,graphs_lean8,graphs_again,profiled \
  timeout 50 $B/cuda_ops decode-profile /tmp/e4b/model 256 128 > $OUT/e4b_profile.txt 2>&1; el "e4b profile rc $?"
grep '"run"' $OUT/e4b_profile.txt; grep -A14 "cuda profile" $OUT/e4b_profile.txt
ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=512 timeout 35 $B/engine bench /tmp/e4b/model --prompts /tmp/e4b/prompts.jsonl > $OUT/e4b_bench.out 2> $OUT/e4b_bench.err; el "e4b bench rc $?"; tail -1 $OUT/e4b_bench.out
DECODE_PROFILE_RUNS=graphs,graphs_general,graphs_again timeout 20 $B/cuda_ops decode-profile models/gemma4-tiny 256 512 > $OUT/tiny_profile.txt 2>&1; el "tiny profile rc $?"; grep '"run"' $OUT/tiny_profile.txt
tail -n 2 $T/memcheck.log $T/racecheck.log $T/memcheck_model.log
cp $OUT/e4b_profile.txt $OUT/tiny_profile.txt $T/ 2>/dev/null
cd $OUT && tar czf tests.tgz tests && rm -rf tests
