# session 37, call 1. new = main + 61b73bb's MLP kernel (the reducer warp waits at the h barrier
# too: bar.sync on both sides of each hand-off of h) + matvec_rows.cu with a 2-input form (a pass
# over 2 rows used the 4-input form: x loads and fmas for 2 dead inputs) and its split-K epilogue
# by lanes; old = main (6fdc3b2). First, untimed and side by side: racecheck and memcheck over the
# small op test, the op test, test_gpu.sh steps 2 3 5 (greedy GPU = CPU, lossless speculation).
# Then, alone: verify passes over 2 / 4 / 8 rows, old and new in alternating processes, and
# new's timelines of the 2- and 8-row passes.
B=.carry/s37 CALL=c1; . docs/gpu_logs/common.sh
O=$B/old
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
rm -rf $T/tests/spec_*
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c1.tgz c1 && cd - > /dev/null
for round in a b; do
    for b in old new; do
        DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$b$round:" \
            timeout 60 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_${b}_$round.txt 2>&1
        el "verify $b $round rc $?"; ms $T/verify_${b}_$round.txt
    done
done
cd $OUT && tar czf c1.tgz c1 && cd - > /dev/null
DECODE_PROFILE_VERIFY=2 DECODE_PROFILE_TRACE_ROWS=2 traced v2
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8
cd $OUT && tar czf c1.tgz c1
