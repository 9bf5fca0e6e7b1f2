# session 34, call 3: the whole-MLP kernel with its inputs shared out among two groups of
# consumer threads (mlp.cu TS = 2, experiment switch GEMMA_CUDA_MLP_SPLIT: 1 = two groups for
# passes of 2, 4 and 8 inputs; 4 = the same without the 8-input pass, 5-8 inputs as two passes of
# 4). First, untimed: the op test under each (every row of an n-row launch against n = 1, bit for
# bit). Then verify passes of 1-8 rows, one process alternating, and the old binary's decode step.
B=.carry/s34 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
GEMMA_CUDA_MLP_SPLIT=1 timeout 250 $N/cuda_ops ops > $T/ops_s1.txt 2>&1 & P1=$!
GEMMA_CUDA_MLP_SPLIT=4 timeout 250 $N/cuda_ops ops > $T/ops_s4.txt 2>&1 & P2=$!
wait $P1; el "ops s1 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_s1.txt | cut -c1-200 | head -6
wait $P2; el "ops s4 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_s4.txt | cut -c1-200 | head -6
wait $PM; el "e4b model rc $?"
DECODE_PROFILE_VERIFY="1 2 3 4 5 8" DECODE_PROFILE_CUSTOM="s0:;s1:GEMMA_CUDA_MLP_SPLIT=1;s4:GEMMA_CUDA_MLP_SPLIT=4;s0b:;s1b:GEMMA_CUDA_MLP_SPLIT=1;s4b:GEMMA_CUDA_MLP_SPLIT=4" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
baseline old
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 DECODE_PROFILE_CUSTOM="v8s1:GEMMA_CUDA_MLP_SPLIT=1" \
    DECODE_PROFILE_TRACE=$T/trace_v8s1.csv timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 16 > $T/traced_v8s1.txt 2>&1
el "traced rc $?"
python3 bench/trace_step.py $T/trace_v8s1.csv 40 > $T/trace_step_v8s1.txt 2>&1
head -14 $T/trace_step_v8s1.txt | cut -c1-120
gzip -f $T/trace_v8s1.csv
cd $OUT && tar czf c3.tgz c3
