# session 18, call 9: the tensor-core products with each step's mmas summed from zero and the
# running sum on the CUDA cores - whole-model logits against the CPU (test_gpu.sh steps 2-3 with
# GEMMA_CUDA_MV_MMA=1: the max |gpu - cpu| figures against calls 6-7's), the op test, memcheck of
# the op test, the small model's decode and verify costs.
set -u
B=.carry/s18; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c9; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests_mma timeout 100 scripts/test_gpu.sh > $T/test23_mma.txt 2>&1; el "steps 2-3 (mma) rc $?"
grep -E "FAIL|max.gpu-cpu|greedy output|all GPU" $T/test23_mma.txt | cut -c1-150 | head -14
timeout 90 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|MMA" $T/ops.txt | head -4
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="cc:;mma:GEMMA_CUDA_MV_MMA=1" timeout 40 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"
grep '"run"' $T/tiny.txt | cut -c1-120
wait $P1; el "memcheck rc $?"; tail -n 1 $T/memcheck.log
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
