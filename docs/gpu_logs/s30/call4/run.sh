# session 30, call 4: neither L2 requests (call 2) nor packed pages (call 3) sped the norm + add
# after o, so its block likely starts only as o's blocks leave (640 threads x 40 registers do
# not fit beside five of o's blocks). GEMMA_CUDA_NORM_SMALL=1: the same sums in a 4-warp,
# 32-register block with the row in shared memory, which fits. A / B, then traced.
B=.carry/s30d CALL=c4; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="base:;small:GEMMA_CUDA_NORM_SMALL=1;base2:;small2:GEMMA_CUDA_NORM_SMALL=1;base3:;small3:GEMMA_CUDA_NORM_SMALL=1" DECODE_PROFILE_VERIFY="2 8" \
    timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
for v in small:1; do
    IFS=: read name a <<< "$v"
    DECODE_PROFILE_CUSTOM="$name:GEMMA_CUDA_NORM_SMALL=$a" DECODE_PROFILE_TRACE=$T/trace_$name.csv \
        timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_$name.txt 2>&1; el "traced $name rc $?"; ms $T/traced_$name.txt
    python3 bench/trace_step.py $T/trace_$name.csv 30 > $T/trace_step_$name.txt 2>&1; el "trace_step rc $?"
    sed -n '/^layers/,$p' $T/trace_step_$name.txt | head -40
    gzip $T/trace_$name.csv
done
cd $OUT && tar czf c4.tgz c4
