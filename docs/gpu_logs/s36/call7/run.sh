# session 36, call 7 (the last of the device budget): the MLP reducer waits at the h barrier too
# (bar.sync on both sides), no __syncwarp in the consumers' path. Racecheck over the small op test
# first (its run also checks every op against the CPU), the E4B model beside it; then verify
# passes over 2 / 4 / 8 rows if time is left.
B=.carry/s36 CALL=c7; . docs/gpu_logs/common.sh
e4b_model
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1
el "racecheck rc $?"; tail -2 $T/racecheck.log | cut -c1-200
wait $PM; el "e4b model rc $?"
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="a:" timeout 30 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
