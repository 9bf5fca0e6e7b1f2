# session 29, call 8: the wave the matrix-vector split rule fills (GEMMA_CUDA_MV_WAVE, an
# experiment: matvec.cu split_wave). Call 6's timeline: the norm + add after o starts 8 us after
# o (o: 640 blocks, split in 2, nominally one wave of 6 blocks a multiprocessor) and adds 3.2 us
# against 1.5-1.9 after the other products; o itself adds 4.5 us for a 2.5 us floor. A smaller
# wave splits less (o in 320 blocks at 4). Results change in the last bits (a row's split);
# timing only here. A / B alternating, then wave 4 traced.
B=.carry/s29e CALL=c8; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
C="base:;w5:GEMMA_CUDA_MV_WAVE=5;w4:GEMMA_CUDA_MV_WAVE=4;w3:GEMMA_CUDA_MV_WAVE=3"
DECODE_PROFILE_CUSTOM="$C;$C" DECODE_PROFILE_VERIFY="2" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_CUSTOM="w4:GEMMA_CUDA_MV_WAVE=4" DECODE_PROFILE_TRACE=$T/trace_w4.csv timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced.txt 2>&1; el "traced rc $?"
python3 bench/trace_step.py $T/trace_w4.csv 30 > $T/trace_step_w4.txt 2>&1; head -12 $T/trace_step_w4.txt
gzip $T/trace_w4.csv; cd $OUT && tar czf c8.tgz c8
