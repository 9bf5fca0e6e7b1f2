# session 37, call 2. old = main (6fdc3b2); mid = main + call 1's matvec_rows.cu (a 2-input form,
# the split-K epilogue by lanes); new = mid + the MLP kernel's reducer form with a slot of h for
# every (input, index) of a block (no slot reused: call 1's racecheck still reported 2 hazards on
# the reused h slots). First, untimed and side by side: racecheck and memcheck over the small op
# test, the op test, test_gpu.sh steps 2 3 5 (all on new). Then, alone: verify passes over
# 2 / 4 / 8 rows, old, mid and new in alternating processes, and new's 4-row timeline.
B=.carry/s37 CALL=c2; . docs/gpu_logs/common.sh
e4b_model
timeout 280 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
timeout 280 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P3=$!
timeout 280 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 300 \
    scripts/test_gpu.sh > $T/test235.txt 2>&1 & P4=$!
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
wait $P2; el "racecheck rc $?"; grep -c "Race reported" $T/racecheck.log; tail -2 $T/racecheck.log | cut -c1-200
wait $P3; el "memcheck rc $?"; tail -1 $T/memcheck.log | cut -c1-200
wait $P4; el "steps 2 3 5 rc $?"; grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
rm -rf $T/tests
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
for round in a b; do
    for b in old mid new; do
        DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$b$round:" \
            timeout 60 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_${b}_$round.txt 2>&1
        el "verify $b $round rc $?"; ms $T/verify_${b}_$round.txt
    done
done
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
DECODE_PROFILE_VERIFY=4 DECODE_PROFILE_TRACE_ROWS=4 traced v4
cd $OUT && tar czf c2.tgz c2
