# session 20, call 5: the final code (cluster attention the default on sm_90): test_gpu.sh steps
# 2-3 (call 4 failed only the graph-drop check, which now takes the split form) and step 4's
# whole-model memcheck, then bench/bench_gpu.sh (the headline).
set -u
B=.carry/s20; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops model tests/engine/fixtures/a_ple_kvshare > $T/memcheck_model.log 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests23 timeout 200 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "FAIL|max.gpu-cpu|greedy output|all GPU" $T/test23.txt | cut -c1-150 | head -14
wait $P1; el "memcheck model rc $?"; grep -E "ERROR SUMMARY|FAIL" $T/memcheck_model.log | tail -2
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 330 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of|tokens/s|floor|transformers" $T/bench/bench_gpu.md | head -12
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
