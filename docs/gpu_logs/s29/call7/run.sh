# session 29, call 7: call 6's timeline shows the kernels after a wide product starting late
# (the norm + add after o: 8.1 us after o starts, lead 3.4 us, adds 3.1 against 1.5-1.9 after
# the other products; the attention after the q / k / v norms: lead 2.7-4.0, adds 4.8-5.1).
# A kernel is let in only once every block of the one before has started. Smaller blocks of the
# same warps (GEMMA_CUDA_MV_BLOCK_WARPS=4: call 4 tried 8 and 2, not 4 everywhere) or a capped
# persistent grid (GEMMA_CUDA_MV_GRID=N) start sooner. A / B alternating, then bw4 traced.
B=.carry/s29d CALL=c7; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
C="base:;bw4:GEMMA_CUDA_MV_BLOCK_WARPS=4;g528:GEMMA_CUDA_MV_GRID=528;g792:GEMMA_CUDA_MV_GRID=792"
DECODE_PROFILE_CUSTOM="$C;$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_CUSTOM="bw4:GEMMA_CUDA_MV_BLOCK_WARPS=4" DECODE_PROFILE_TRACE=$T/trace_bw4.csv timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced.txt 2>&1; el "traced rc $?"
python3 bench/trace_step.py $T/trace_bw4.csv 30 > $T/trace_step_bw4.txt 2>&1; el "trace_step rc $?"; head -16 $T/trace_step_bw4.txt
gzip $T/trace_bw4.csv; cd $OUT && tar czf c7.tgz c7
