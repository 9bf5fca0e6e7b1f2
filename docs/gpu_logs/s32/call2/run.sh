# session 32, call 2: why call 1's L2 prefetcher cost 1.25 ms a step whatever its rate and size.
# GEMMA_CUDA_L2A's POLICY bits: 4 = the node returns at once (what a second branch of the graph
# costs), 8 = wait and pace but ask nothing, 2 = sleep while pacing instead of spinning. Then
# timelines of the switch off and of the prefetcher with sleeps (its own kernel taken out of the
# trace before bench/trace_step.py reads it).
B=.carry/s32 CALL=c2; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="off:;z:GEMMA_CUDA_L2A=16:1000:16:4;p8:GEMMA_CUDA_L2A=16:1000:16:8:20;p10:GEMMA_CUDA_L2A=16:1000:16:10:20;s2:GEMMA_CUDA_L2A=16:1000:16:2:20;w1:GEMMA_CUDA_L2A=4:200:1:2:20;offb:;zb:GEMMA_CUDA_L2A=16:1000:16:4" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
for v in "off:" "z:GEMMA_CUDA_L2A=16:1000:16:4" "s2:GEMMA_CUDA_L2A=16:1000:16:2:20"; do
    name=${v%%:*}
    DECODE_PROFILE_CUSTOM="$v" DECODE_PROFILE_TRACE=$T/raw_$name.csv timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_$name.txt 2>&1
    el "traced $name rc $?"; ms $T/traced_$name.txt
    grep -v l2_ahead $T/raw_$name.csv > $T/trace_$name.csv; grep -c l2_ahead $T/raw_$name.csv; rm $T/raw_$name.csv
    python3 bench/trace_step.py $T/trace_$name.csv 30 > $T/trace_step_$name.txt 2>&1; el "trace_step $name rc $?"
    sed -n '/^layers/,$p' $T/trace_step_$name.txt | head -16
done
python3 bench/trace_step.py --diff $T/trace_off.csv $T/trace_z.csv > $T/diff_off_z.txt 2>&1; head -30 $T/diff_off_z.txt
gzip -f $T/trace_*.csv
cd $OUT && tar czf c2.tgz c2
