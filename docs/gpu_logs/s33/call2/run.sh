# session 33, call 2: how the E4B-sized step grows with the context (main's code, 36f81d9). The
# issue's benchmark decodes 512 tokens after 256, so its full-attention layers attend to 256-768
# positions; a user's prompt can be far longer. decode-profile at prompts of 256 to 4096 (128
# steps each; 512 steps after 256 as the benchmark's span), then one timeline at 2048 + 64
# (bench/trace_step.py: what each kernel adds a step, by kind of layer).
B=.carry/s33 CALL=c2; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
for ps in "256 128" "256 512" "1024 128" "2048 128" "4096 128"; do
    set -- $ps
    DECODE_PROFILE_CUSTOM="p$1s$2:" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model $1 $2 > $T/p$1s$2.txt 2>&1
    el "p$1 s$2 rc $?"; ms $T/p$1s$2.txt
done
DECODE_PROFILE_CUSTOM="t2048:" DECODE_PROFILE_TRACE=$T/trace_p2048.csv timeout 120 \
    $N/cuda_ops decode-profile /tmp/e4b/model 2048 64 > $T/traced_p2048.txt 2>&1
el "traced rc $?"
python3 bench/trace_step.py $T/trace_p2048.csv 30 > $T/trace_step_p2048.txt 2>&1
el "trace_step rc $?"; sed -n '/^layers/,$p' $T/trace_step_p2048.txt | head -60
gzip -f $T/trace_p2048.csv
cd $OUT && tar czf c2.tgz c2
