#!/usr/bin/env bash
# Engineer n's device call (run tool, carry [".carry/n"], timeout_s 300): the norm folded into
# the matvec launch (GEMMA_CUDA_FUSE_NORM). Correctness first (test_gpu.sh steps 1-3 with the
# fold on, the whole-model checks again with it off, memcheck + racecheck of the op test, small
# shapes; call 2 also step 5, speculative decoding), then timing alone on the GPU: E4B's decode
# step with the fold on and off, alternating, two (call 1) or three (call 2) times; the profiled
# table both ways; the small model both ways. Logs: $OUT/n.tgz.
set -u
(cd .carry/n && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/.carry/n:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
B=.carry/n; C=$B/tests/kernels/cuda_ops; T=$OUT/n; mkdir -p $T $B/bin
ln -sf $PWD/$C $B/bin/cuda_ops; ln -sf $PWD/$B/engine/engine $B/bin/engine
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvidia-smi -L
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $C ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $C ops small > $T/racecheck.log 2>&1 & P2=$!
export GEMMA_CUDA_FUSE_NORM=1 # call 2: the default is 0, the tests run with the fold
GPU_BIN_DIR=$B/bin KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|norm fold|greedy|identical|differ" $T/test123.txt | head -30
GEMMA_CUDA_FUSE_NORM=0 timeout 60 $C model tests/engine/fixtures/a_ple_kvshare tests/engine/fixtures/b_keqv_untied tests/engine/fixtures/c_wrapped_f16 models/gemma4-tiny > $T/models_fuse_norm0.log 2>&1; el "models with FUSE_NORM=0 rc $?"
grep -E "greedy|FAIL|differ" $T/models_fuse_norm0.log | head
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 2 $T/memcheck.log $T/racecheck.log
GPU_BIN_DIR=$B/bin KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 100 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical|ERROR SUMMARY|hazard" $T/test5.txt | head -20
unset GEMMA_CUDA_FUSE_NORM
wait $MK; el "make: $(tail -1 $T/make_e4b.log)"
# timing, alone on the GPU: call 1 fold on (graphs), off (graphs_no_norm_fold), on again, twice;
# call 2 off (graphs_no_norm_fold), on (graphs_norm_fold), three times
for i in 1 2 3; do
  DECODE_PROFILE_RUNS=graphs_no_norm_fold,graphs_norm_fold timeout 50 $C decode-profile /tmp/e4b/model 256 128 > $T/e4b_profile_$i.txt 2>&1
  el "e4b $i: $(grep '"run"' $T/e4b_profile_$i.txt | sed 's/.*"run": "\([a-z_]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
done
DECODE_PROFILE_RUNS=profiled_no_norm_fold,profiled_norm_fold timeout 45 $C decode-profile /tmp/e4b/model 256 128 > $T/e4b_profiled.txt 2>&1; el "profiled rc $?"
grep -E '"run"|^  (matvec|rmsnorm|total)' $T/e4b_profiled.txt
DECODE_PROFILE_RUNS=graphs_no_norm_fold,graphs_norm_fold,graphs timeout 20 $C decode-profile models/gemma4-tiny 256 512 > $T/tiny_profile.txt 2>&1
el "tiny: $(grep '"run"' $T/tiny_profile.txt | sed 's/.*"run": "\([a-z_]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
cd $OUT && tar czf n.tgz n && rm -rf n
