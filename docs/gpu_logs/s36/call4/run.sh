# session 36, call 4: the whole-MLP kernel's verify forms without a block barrier (a reducer warp
# makes each batch's h; mbarriers between it and the consumer warps). new = that (f2c... see the
# commit), old = main before it (call 3's code). First, untimed and side by side: the op test
# (the whole MLP: every row of an n-row launch equal to the row alone, bit for bit, n = 1..64),
# racecheck and memcheck over the small op test. Then, alone: verify passes over 2 / 4 / 8 rows,
# old and new in alternating processes, and a timeline of new's 8-row pass.
B=.carry/s36 CALL=c4; . docs/gpu_logs/common.sh
O=$B/old
e4b_model
timeout 230 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
timeout 230 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
timeout 230 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P3=$!
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
wait $P2; el "racecheck rc $?"; tail -2 $T/racecheck.log | cut -c1-200
wait $P3; el "memcheck rc $?"; tail -1 $T/memcheck.log | cut -c1-200
wait $PM; el "e4b model rc $?"
for round in a b; do
    for b in old new; do
        DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$b$round:" \
            timeout 100 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_${b}_$round.txt 2>&1
        el "verify $b $round rc $?"; ms $T/verify_${b}_$round.txt
    done
done
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8
DECODE_PROFILE_VERIFY=4 DECODE_PROFILE_TRACE_ROWS=4 traced v4
cd $OUT && tar czf c4.tgz c4
