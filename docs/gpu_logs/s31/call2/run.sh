# session 31, call 2: the o projection by heads in clusters of 16 blocks a head (80 KB of o a
# block, 128 of the 132 multiprocessors) against clusters of 8 (call 1's form) and off, in one
# process, alternating; the previous binary (HEAD e5198d4) in its own; the op test (default: 16).
B=.carry/s31 CALL=c2; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
grep -E "FAIL|differ|all agree|expected|o by heads" $T/ops.txt | cut -c1-200 | head -8
wait $PM; el "e4b model rc $?"
baseline old1
DECODE_PROFILE_CUSTOM="c16:GEMMA_CUDA_ATTN_O=16;c8:GEMMA_CUDA_ATTN_O=8;off:GEMMA_CUDA_ATTN_O=0;c16b:GEMMA_CUDA_ATTN_O=16;c8b:GEMMA_CUDA_ATTN_O=8;offb:GEMMA_CUDA_ATTN_O=0" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
baseline old2
traced c16 GEMMA_CUDA_ATTN_O=16
cd $OUT && tar czf c2.tgz c2
