# session 14, call 1: (a) bench/step_shape.cu - what E4B's step structure costs apart from its
# arithmetic (PDL chain vs persistent kernel with grid barriers vs bare streaming); (b) the tests
# not yet run on the final code of session 13 (980d6e3): test_gpu.sh steps 1-3 (full op test,
# the two-rows kernel's 8-input pass bit for bit, models_rows), memcheck and racecheck of the
# small op test; (c) the E4B decode step for reference.
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/prev; T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
nvcc -O3 -arch=sm_90 -o /tmp/step_shape bench/step_shape.cu > $T/step_shape_build.log 2>&1; el "nvcc rc $?"
timeout 60 /tmp/step_shape > $T/step_shape.txt 2>&1; el "step_shape rc $?"; cat $T/step_shape.txt
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 220 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:|variant|expected|rows" $T/test123.txt | cut -c1-200 | head -20
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
DECODE_PROFILE_RUNS=graphs timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_step.txt 2>&1; el "e4b rc $?"; grep '"run"' $T/e4b_step.txt | cut -c1-200
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
