# session 28, call 9: compute-sanitizer memcheck and racecheck over the op test's small shapes,
# which now include H = 1024, where mlp.cu's producer runs under its limit on rows in flight
# (mlp_depth 30 of 48 stages) - the new waits under both tools.
B=.carry/s28f CALL=c9; . docs/gpu_logs/common.sh
timeout 170 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 170 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
grep -E "whole MLP n [0-9]+ H 1024" $T/memcheck.log | head -2; tail -3 $T/memcheck.log; tail -3 $T/racecheck.log
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
