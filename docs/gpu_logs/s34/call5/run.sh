# session 34, call 5: the final code (mlp.cu with each batch's down rows after the next batch's
# gate and up - call 4's LAG form as the only one, the experiment switches taken out). Side by
# side, untimed: the op test, test_gpu.sh steps 2 3 5 (lossless speculation: k = 1..8 against
# k = 0), compute-sanitizer racecheck and memcheck over the op test's small shapes. Then
# bench/bench_gpu.sh alone for the headline (its verify table shows the passes over 2-8 rows).
B=.carry/s34 CALL=c5; . docs/gpu_logs/common.sh
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P3=$!
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P4=$!
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 200 \
    scripts/test_gpu.sh > $T/test235.txt 2>&1 & P2=$!
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
wait $P2; el "steps 2 3 5 rc $?"; grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
wait $P3; el "racecheck rc $?"; tail -1 $T/racecheck.log
wait $P4; el "memcheck rc $?"; tail -1 $T/memcheck.log
rm -rf $T/tests/spec_*
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 345 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|engine decode tps|engine prefill|transformers|^\| CUDA cores" $T/bench/bench_gpu.md | head -12
rm -rf /tmp/e4b_bench
cd $OUT && tar czf c5.tgz c5
