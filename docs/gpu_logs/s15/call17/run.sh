# session 15, call 17 (final code, the unroll rule): memcheck and racecheck of the small op test,
# test_gpu.sh step 5 (speculation: verify reproduces decode bit for bit).
set -u
B=.carry/s15; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c17; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 140 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
cd $OUT && tar czf c17.tgz c17 && rm -rf c17
