# session 36, call 5: the final code (the MLP kernel's verify forms hand off through named
# barriers). Side by side, untimed: the op test, racecheck and memcheck over the small op test,
# test_gpu.sh steps 2 3 5 (greedy GPU = CPU; lossless speculation, k = 1..8 against k = 0, in five
# settings), and the E4B model. Then alone: the 8-row verify pass's timeline, and
# bench/bench_gpu.sh (its verify table over 2-8 positions).
B=.carry/s36 CALL=c5; . docs/gpu_logs/common.sh
e4b_model
timeout 220 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
timeout 220 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
timeout 220 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P3=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 220 \
    scripts/test_gpu.sh > $T/test235.txt 2>&1 & P4=$!
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
wait $P2; el "racecheck rc $?"; tail -2 $T/racecheck.log | cut -c1-200
wait $P3; el "memcheck rc $?"; tail -1 $T/memcheck.log | cut -c1-200
wait $P4; el "steps 2 3 5 rc $?"; grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
rm -rf $T/tests/spec_*
wait $PM; el "e4b model rc $?"
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8
cd $OUT && tar czf c5.tgz c5 && cd - > /dev/null
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 320 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|engine decode tps|engine prefill|transformers|^\| CUDA cores|^\| tensor cores" $T/bench/bench_gpu.md | head -14
rm -rf /tmp/e4b_bench
cd $OUT && tar czf c5.tgz c5
