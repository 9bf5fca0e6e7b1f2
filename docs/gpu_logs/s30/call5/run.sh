# session 30, call 5: call 4's small block was slower everywhere (4.1 us after the MLP against
# 1.6) and started no earlier after o (lead 2.6 us): o's last blocks are placed only when the
# attention leaves, so the norm + add is launched then whatever its size. Its scales are asked
# for in o's burst. GEMMA_CUDA_SMALL_W=6: o's blocks ask L2 for the scales (as =3) and the norm
# loads them after its wait, with o and x (one round trip, L2 hits if the lines stayed).
B=.carry/s30e CALL=c5; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="base:;pflate:GEMMA_CUDA_SMALL_W=6;none:GEMMA_CUDA_SMALL_W=2;late:GEMMA_CUDA_SMALL_W=5;base2:;pflate2:GEMMA_CUDA_SMALL_W=6;none2:GEMMA_CUDA_SMALL_W=2;late2:GEMMA_CUDA_SMALL_W=5" \
    timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
for v in pflate:6; do
    IFS=: read name a <<< "$v"
    DECODE_PROFILE_CUSTOM="$name:GEMMA_CUDA_SMALL_W=$a" DECODE_PROFILE_TRACE=$T/trace_$name.csv \
        timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_$name.txt 2>&1; el "traced $name rc $?"; ms $T/traced_$name.txt
    python3 bench/trace_step.py $T/trace_$name.csv 30 > $T/trace_step_$name.txt 2>&1; el "trace_step rc $?"
    sed -n '/^layers/,$p' $T/trace_step_$name.txt | head -14
    gzip $T/trace_$name.csv
done
cd $OUT && tar czf c5.tgz c5
