# session 31, call 3: the o slice copies queued behind the attention's first loads ("late",
# the default now) against before them ("early", call 1's order, GEMMA_CUDA_ATTN_O_EARLY=1),
# clusters of 8 and 16, and off - one process, alternating; the previous binary in its own.
B=.carry/s31 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
grep -E "FAIL|differ|all agree|expected|o by heads" $T/ops.txt | cut -c1-200 | head -8
wait $PM; el "e4b model rc $?"
baseline old1
DECODE_PROFILE_CUSTOM="late8:GEMMA_CUDA_ATTN_O=8;early8:GEMMA_CUDA_ATTN_O=8 GEMMA_CUDA_ATTN_O_EARLY=1;late16:GEMMA_CUDA_ATTN_O=16;off:GEMMA_CUDA_ATTN_O=0;late8b:GEMMA_CUDA_ATTN_O=8;early8b:GEMMA_CUDA_ATTN_O=8 GEMMA_CUDA_ATTN_O_EARLY=1;late16b:GEMMA_CUDA_ATTN_O=16;offb:GEMMA_CUDA_ATTN_O=0" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
traced late8 GEMMA_CUDA_ATTN_O=8
cd $OUT && tar czf c3.tgz c3
