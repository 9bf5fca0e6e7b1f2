# session 22, call 7: the final code (launch_splits: a launch of several matrices fits one wave):
# the op test and test_gpu.sh steps 2, 3 and 5 side by side, then bench/bench_gpu.sh alone (the
# headline).
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c7; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|differs|all agree" $T/ops.txt | cut -c1-200 | head -8
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -12
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 330 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "tokens/s|floor|share|ms a step|copy" $T/bench/bench_gpu.md | head -20
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
