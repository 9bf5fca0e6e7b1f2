# session 18, call 6: correctness of the final code (call 5's build): test_gpu.sh steps 1-3 with
# the default switches (every op against the CPU, the tensor-core variants included), steps 2-3
# and 5 with GEMMA_CUDA_MV_MMA=1 (whole-model logits, greedy CPU = GPU, lossless speculation),
# memcheck and racecheck of the op test.
set -u
B=.carry/s18; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 200 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "FAIL|MMA|greedy output|all GPU" $T/test123.txt $T/tests/*ops* 2>/dev/null | cut -c1-180 | head -8
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests_mma timeout 150 scripts/test_gpu.sh > $T/test23_mma.txt 2>&1; el "steps 2-3 (mma) rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test23_mma.txt | cut -c1-180 | head -6
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5_mma timeout 140 scripts/test_gpu.sh > $T/test5_mma.txt 2>&1; el "step 5 (mma) rc $?"
grep -E "FAIL|all GPU" $T/test5_mma.txt | head -4
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
