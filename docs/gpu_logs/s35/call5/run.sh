# session 35, call 5: racecheck over the small op test on the final code (call 4's binaries),
# left out of call 4 to give test_gpu.sh step 5 its time.
B=.carry/s35 CALL=c5; . docs/gpu_logs/common.sh
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1
el "racecheck rc $?"; tail -2 $T/racecheck.log
grep -c "rows" $T/racecheck.log
cd $OUT && tar czf c5.tgz c5
