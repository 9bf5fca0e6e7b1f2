# session 33, call 1: the code of main at 36f81d9 (the last code commit of session 32) checked and
# benchmarked whole, so that the headline belongs to the code that is there. First (side by side,
# none of it timed): the op test, test_gpu.sh steps 2 3 5, the mid-sized twin, and
# compute-sanitizer memcheck and racecheck over the op test's small shapes. Then
# bench/bench_gpu.sh alone for the headline.
B=.carry/s33 CALL=c1; . docs/gpu_logs/common.sh
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P3=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P4=$!
correctness
wait $P3; el "memcheck rc $?"; tail -2 $T/memcheck.log
wait $P4; el "racecheck rc $?"; tail -2 $T/racecheck.log
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 330 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|GEMMA_CUDA_MLP=0|transformers" $T/bench/bench_gpu.md | head -8
rm -rf /tmp/e4b_bench
cd $OUT && tar czf c1.tgz c1
