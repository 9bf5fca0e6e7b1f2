# session 30, call 6: asking L2 early for the scales did not make them cheap to load (call 5:
# 4.39 us for the norm + add after o, 2.99 without scales). GEMMA_CUDA_NORM_COPY=1: the product
# before a norm + add (o; the per-layer projection) copies both scales as fp32 into a scratch
# buffer - loaded before its wait, stored after - and the norm + add reads them there with o
# and x. Same values, same bits. A / B, traced, and the mid twin with it (GPU against CPU).
# Calls 1-5 measured the default 0.1 ms slower than session 29 did (3.14-3.20 against 3.05-3.07
# ms): another machine, or the experiments' code? $O is session 29's final code (5cba74d, built
# the same way), run in its own processes before and after.
B=.carry/s30f CALL=c6; . docs/gpu_logs/common.sh
e4b_model
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 > $T/make_mid.log 2>&1 &
PMID=$!
wait $PM; el "e4b model rc $?"
O=$B/old
DECODE_PROFILE_CUSTOM="s29:;s29b:" timeout 100 $O/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/s29_1.txt 2>&1; el "s29 rc $?"; ms $T/s29_1.txt
DECODE_PROFILE_CUSTOM="base:;copy:GEMMA_CUDA_NORM_COPY=1;none:GEMMA_CUDA_SMALL_W=2;base2:;copy2:GEMMA_CUDA_NORM_COPY=1;none2:GEMMA_CUDA_SMALL_W=2;base3:;copy3:GEMMA_CUDA_NORM_COPY=1" DECODE_PROFILE_VERIFY="2" \
    timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
DECODE_PROFILE_CUSTOM="s29c:;s29d:" timeout 100 $O/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/s29_2.txt 2>&1; el "s29 rc $?"; ms $T/s29_2.txt
DECODE_PROFILE_CUSTOM="copy:GEMMA_CUDA_NORM_COPY=1" DECODE_PROFILE_TRACE=$T/trace_copy.csv \
    timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_copy.txt 2>&1; el "traced rc $?"; ms $T/traced_copy.txt
python3 bench/trace_step.py $T/trace_copy.csv 30 > $T/trace_step_copy.txt 2>&1; el "trace_step rc $?"
sed -n '/^layers/,$p' $T/trace_step_copy.txt | head -14
gzip $T/trace_copy.csv
wait $PMID; el "mid model rc $?"
GEMMA_CUDA_NORM_COPY=1 timeout 200 $N/cuda_ops model /tmp/mid/model > $T/mid_copy.txt 2>&1; el "mid twin (copy) rc $?"; tail -4 $T/mid_copy.txt
DECODE_PROFILE_CUSTOM="s29:" DECODE_PROFILE_TRACE=$T/trace_s29.csv \
    timeout 100 $O/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/traced_s29.txt 2>&1; el "traced s29 rc $?"
python3 bench/trace_step.py $T/trace_s29.csv 30 > $T/trace_step_s29.txt 2>&1; el "trace_step rc $?"
sed -n '/^layers/,$p' $T/trace_step_s29.txt | head -14
gzip $T/trace_s29.csv
cd $OUT && tar czf c6.tgz c6
