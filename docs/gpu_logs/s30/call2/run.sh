# session 30, call 2: call 1 found the step 0.1 ms faster with the norm kernels' scales not
# loaded at all (GEMMA_CUDA_SMALL_W=2, wrong results) but no gain from evict-last loads. Here
# the products ask L2 for the scales of the norms after them before their wait
# (GEMMA_CUDA_SMALL_W=3, k_mv_prefetch_next), A / B, and all three traced on the same machine.
B=.carry/s30b CALL=c2; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="base:;pf:GEMMA_CUDA_SMALL_W=3;none:GEMMA_CUDA_SMALL_W=2;base2:;pf2:GEMMA_CUDA_SMALL_W=3;none2:GEMMA_CUDA_SMALL_W=2;base3:;pf3:GEMMA_CUDA_SMALL_W=3" DECODE_PROFILE_VERIFY="2" \
    timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
for v in base:0 pf:3 none:2; do
    IFS=: read name w <<< "$v"
    DECODE_PROFILE_CUSTOM="$name:GEMMA_CUDA_SMALL_W=$w" DECODE_PROFILE_TRACE=$T/trace_$name.csv \
        timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_$name.txt 2>&1; el "traced $name rc $?"; ms $T/traced_$name.txt
    python3 bench/trace_step.py $T/trace_$name.csv 30 > $T/trace_step_$name.txt 2>&1; el "trace_step rc $?"
    sed -n '/^layers/,$p' $T/trace_step_$name.txt | head -14
    gzip $T/trace_$name.csv
done
cd $OUT && tar czf c2.tgz c2
