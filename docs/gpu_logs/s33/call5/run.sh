# session 33, call 5: call 4's merge kernel under compute-sanitizer (memcheck, racecheck: the op
# test's small shapes, both attention forms) beside test_gpu.sh step 2 (whole models, default and
# plain paths, check_horizon).
B=.carry/s33 CALL=c5; . docs/gpu_logs/common.sh
timeout 230 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P3=$!
timeout 230 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P4=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2" LOG_DIR=$T/tests timeout 230 scripts/test_gpu.sh > $T/test2.txt 2>&1; el "step 2 rc $?"
grep -E "FAIL|all GPU|horizon" $T/test2.txt $T/tests/models.log | cut -c1-180 | head -6
wait $P3; el "memcheck rc $?"; tail -1 $T/memcheck.log
wait $P4; el "racecheck rc $?"; tail -1 $T/racecheck.log
cd $OUT && tar czf c5.tgz c5
