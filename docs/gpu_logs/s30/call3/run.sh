# session 30, call 3: call 2 traced the norm + add after o at 4.96 us with its scales loaded and
# 2.99 without (GEMMA_CUDA_SMALL_W=2), and asking L2 for them earlier (=3) changed nothing. So
# not L2 misses: the page of each scale (a cudaMalloc of its own, among the big matrices)?
# GEMMA_CUDA_SMALL_ARENA=1 packs every weight of <= 64 KB into shared 2 MB chunks;
# GEMMA_CUDA_SMALL_W=5 loads the scales after the wait instead of before.
B=.carry/s30c CALL=c3; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="base:;arena:GEMMA_CUDA_SMALL_ARENA=1;none:GEMMA_CUDA_SMALL_W=2;late:GEMMA_CUDA_SMALL_W=5;base2:;arena2:GEMMA_CUDA_SMALL_ARENA=1;none2:GEMMA_CUDA_SMALL_W=2;late2:GEMMA_CUDA_SMALL_W=5" DECODE_PROFILE_VERIFY="2" \
    timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
for v in base:0 arena:1; do
    IFS=: read name a <<< "$v"
    DECODE_PROFILE_CUSTOM="$name:GEMMA_CUDA_SMALL_ARENA=$a" DECODE_PROFILE_TRACE=$T/trace_$name.csv \
        timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_$name.txt 2>&1; el "traced $name rc $?"; ms $T/traced_$name.txt
    python3 bench/trace_step.py $T/trace_$name.csv 30 > $T/trace_step_$name.txt 2>&1; el "trace_step rc $?"
    sed -n '/^layers/,$p' $T/trace_step_$name.txt | head -14
    gzip $T/trace_$name.csv
done
cd $OUT && tar czf c3.tgz c3
