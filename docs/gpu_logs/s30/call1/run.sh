# session 30, call 1: do the norm kernels placed late (the norm + add after o: lead 3 us, adds
# 3.2 us against 1.5 for the others) wait for their scales from HBM? Experiment switches:
# GEMMA_CUDA_SMALL_W=1 loads the norm scales with an L2 evict-last policy (=2: not at all,
# wrong results, profiling only), GEMMA_CUDA_L2_KEEP=MB sets aside L2 for evict-last lines.
B=.carry/s30a CALL=c1; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="base:GEMMA_CUDA_L2_KEEP=0;keep:GEMMA_CUDA_SMALL_W=1 GEMMA_CUDA_L2_KEEP=0;none:GEMMA_CUDA_SMALL_W=2 GEMMA_CUDA_L2_KEEP=0;keep8:GEMMA_CUDA_SMALL_W=1 GEMMA_CUDA_L2_KEEP=8;base2:GEMMA_CUDA_L2_KEEP=0;keep8b:GEMMA_CUDA_SMALL_W=1 GEMMA_CUDA_L2_KEEP=8" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
for v in none:2:0 keep8:1:8; do
    IFS=: read name w k <<< "$v"
    DECODE_PROFILE_CUSTOM="$name:GEMMA_CUDA_SMALL_W=$w GEMMA_CUDA_L2_KEEP=$k" DECODE_PROFILE_TRACE=$T/trace_$name.csv \
        timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_$name.txt 2>&1; el "traced $name rc $?"; ms $T/traced_$name.txt
    python3 bench/trace_step.py $T/trace_$name.csv 30 > $T/trace_step_$name.txt 2>&1; el "trace_step rc $?"
    sed -n '/^layers/,$p' $T/trace_step_$name.txt | head -16
    gzip $T/trace_$name.csv
done
cd $OUT && tar czf c1.tgz c1
