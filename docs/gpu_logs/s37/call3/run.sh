# session 37, call 3. mid = main (74fc7ef: the 2-input rows forms); S1 = mid + the MLP kernel's
# reducer warp meeting the consumers at each batch's barrier (bar.sync on both sides, nothing
# only arrives; h in two batches' slots as in the one-input form); S2 = S1 with a slot of h for
# every (input, index). First, untimed and side by side: racecheck, memcheck and the op test on
# each, test_gpu.sh steps 2 3 5 on each. Then, alone: verify passes over 2 / 4 / 8 rows, mid, S1
# and S2 in alternating processes.
B=.carry/s37 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
P=""
for v in S1 S2; do
    timeout 330 compute-sanitizer --tool racecheck --error-exitcode 3 $B/$v/cuda_ops ops small > $T/racecheck_$v.log 2>&1 & P="$P $!"
    timeout 330 compute-sanitizer --tool memcheck --error-exitcode 3 $B/$v/cuda_ops ops small > $T/memcheck_$v.log 2>&1 & P="$P $!"
    timeout 330 $B/$v/cuda_ops ops > $T/ops_$v.txt 2>&1 & P="$P $!"
    GPU_BIN_DIR=$B/$v KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests_$v timeout 330 \
        scripts/test_gpu.sh > $T/test235_$v.txt 2>&1 & P="$P $!"
done
for p in $P; do wait $p; echo "pid rc $?"; done
el "correctness done"
for v in S1 S2; do
    echo "== $v"
    grep -E "FAIL|differ|all agree|expected" $T/ops_$v.txt | cut -c1-200 | head -6
    grep -c "Race reported" $T/racecheck_$v.log; tail -1 $T/racecheck_$v.log | cut -c1-200
    tail -1 $T/memcheck_$v.log | cut -c1-200
    grep -E "FAIL|greedy output|all GPU|identical;" $T/test235_$v.txt | cut -c1-160 | head -8
done
rm -rf $T/tests_*
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c3.tgz c3 && cd - > /dev/null
for round in a b; do
    for b in mid S1 S2; do
        DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$b$round:" \
            timeout 60 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_${b}_$round.txt 2>&1
        el "verify $b $round rc $?"; ms $T/verify_${b}_$round.txt
    done
done
cd $OUT && tar czf c3.tgz c3
