# session 35, call 4: the final code (matvec_rows_kernel's loads as call 2's V=1, the sums
# transposed; the experiment switches taken out). Side by side, untimed: the op test with
# memcheck over its small shapes, and test_gpu.sh steps 2 3 5 (step 5: lossless speculation,
# k = 1..8 against k = 0, in five settings). Racecheck is left out to give step 5 its time (it ran
# out beside both sanitizers in session 34); it ran alone on these binaries in call 5. Then
# bench/bench_gpu.sh alone (its verify table has the fourth row, first run here).
B=.carry/s35 CALL=c4; . docs/gpu_logs/common.sh
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P4=$!
timeout 240 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 240 \
    scripts/test_gpu.sh > $T/test235.txt 2>&1 & P2=$!
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
wait $P4; el "memcheck rc $?"; tail -1 $T/memcheck.log
wait $P2; el "steps 2 3 5 rc $?"; grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
rm -rf $T/tests/spec_*
cd $OUT && tar czf c4.tgz c4 && cd - > /dev/null
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 320 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|engine decode tps|engine prefill|transformers|^\| CUDA cores|^\| tensor cores" $T/bench/bench_gpu.md | head -14
rm -rf /tmp/e4b_bench
cd $OUT && tar czf c4.tgz c4
