# session 36, call 6: the named-barrier helpers reconverge the warp first. Side by side: racecheck
# over the small op test (call 5 reported 6 hazards on the MLP kernel's hs), the op test, the E4B
# model; then verify passes over 2 / 4 / 8 rows (against call 5's benchmark).
B=.carry/s36 CALL=c6; . docs/gpu_logs/common.sh
e4b_model
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
wait $P2; el "racecheck rc $?"; tail -2 $T/racecheck.log | cut -c1-200
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
wait $PM; el "e4b model rc $?"
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="a:;b:" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
cd $OUT && tar czf c6.tgz c6
