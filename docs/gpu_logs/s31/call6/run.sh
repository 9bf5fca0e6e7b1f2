# session 31, call 6: call 4's fused kernel (o by heads, clusters of 8 now the default) with the
# slice of o copied in pieces all in flight at once (GEMMA_CUDA_ATTN_O_CHUNK=KiB, default 16)
# instead of one transfer (call 5: 11 GB/s into one SM). Timing only: the device time left
# (about 4 minutes after a refused start) holds no correctness block.
B=.carry/s31 CALL=c6; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="k16:GEMMA_CUDA_ATTN_O=8;off:GEMMA_CUDA_ATTN_O=0;k4:GEMMA_CUDA_ATTN_O=8 GEMMA_CUDA_ATTN_O_CHUNK=4;k160:GEMMA_CUDA_ATTN_O=8 GEMMA_CUDA_ATTN_O_CHUNK=160;k16b:GEMMA_CUDA_ATTN_O=8;offb:GEMMA_CUDA_ATTN_O=0" \
    timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
cd $OUT && tar czf c6.tgz c6
