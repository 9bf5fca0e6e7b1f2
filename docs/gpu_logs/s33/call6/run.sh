# session 33, call 6: the code after the review of the horizon change (the class table, the
# backend's count of split attention ops asserted by the op test and check_horizon, generate's
# plain path). The op test's small shapes (its horizon cases now check the form the backend ran)
# beside test_gpu.sh step 2 (whole models: check_horizon on every fixture).
B=.carry/s33 CALL=c6; . docs/gpu_logs/common.sh
timeout 100 $N/cuda_ops ops small > $T/ops_small.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test2.txt 2>&1; el "step 2 rc $?"
grep -E "FAIL|all GPU|horizon|expected" $T/test2.txt $T/tests/models*.log | cut -c1-200 | head -12
wait $P1; el "ops small rc $?"; grep -E "FAIL|differ|all agree|expected|attention \(" $T/ops_small.txt | cut -c1-200 | head -8
cd $OUT && tar czf c6.tgz c6
