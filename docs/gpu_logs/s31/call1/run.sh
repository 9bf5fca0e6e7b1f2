# session 31, call 1: the o projection by heads inside the cluster attention (attention_o.cu,
# GEMMA_CUDA_ATTN_O, default on) - correctness (op test with the new fused test, test_gpu.sh
# steps 2 3 5, mid twin), then E4B A / B in one process (on / off), the previous binary
# (HEAD e5198d4, $B/old) in its own process, and one traced run of each switch.
B=.carry/s31 CALL=c1; . docs/gpu_logs/common.sh
e4b_model
correctness
grep -E "o by heads|attention \+ o" $T/ops.txt | head -5
wait $PM; el "e4b model rc $?"
baseline old1
DECODE_PROFILE_CUSTOM="on:;off:GEMMA_CUDA_ATTN_O=0;on2:;off2:GEMMA_CUDA_ATTN_O=0" timeout 150 \
    $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
baseline old2
traced on
traced off GEMMA_CUDA_ATTN_O=0
python3 bench/trace_step.py --diff $T/trace_off.csv.gz $T/trace_on.csv.gz > $T/diff.txt 2>&1
head -40 $T/diff.txt
cd $OUT && tar czf c1.tgz c1
