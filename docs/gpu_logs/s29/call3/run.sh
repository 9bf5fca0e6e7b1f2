# session 29, call 3: call 2 found the fused norm + add 0.21 ms a step SLOWER (3.274 against
# 3.063 ms). Suspect: it lets the next kernel launch at its start, so that kernel's weight
# prefetch floods memory while this one reads the 1.35 MB of partials from L2. Rows: off, on,
# the next launch triggered after the sums (GEMMA_CUDA_NORM_LATE=1), clusters of 4 / 10
# (GEMMA_CUDA_NORM_CL). Also the op test's small shapes (the bytes check fixed: a download
# counts 4 bytes) under memcheck and racecheck.
B=.carry/s29 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.txt 2>&1; el "memcheck rc $?"; tail -3 $T/memcheck.txt
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.txt 2>&1; el "racecheck rc $?"; tail -3 $T/racecheck.txt
grep -E "norm/add|expected" $T/memcheck.txt | head -5
wait $PM; el "e4b model rc $?"
C="off:GEMMA_CUDA_MLP_NORM=0;on:;late:GEMMA_CUDA_NORM_LATE=1;late4:GEMMA_CUDA_NORM_LATE=1 GEMMA_CUDA_NORM_CL=4;late10:GEMMA_CUDA_NORM_LATE=1 GEMMA_CUDA_NORM_CL=10;on10:GEMMA_CUDA_NORM_CL=10"
DECODE_PROFILE_CUSTOM="$C;$C" DECODE_PROFILE_VERIFY="2" timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
cd $OUT && tar czf c3.tgz c3
