# session 31, call 4: o held in tiles (k_attention_o_tile), each block's slice brought in by
# one copy-engine transfer (cp.async.bulk) at the block's start, instead of calls 1-3's
# per-thread 64-byte copies from o's rows. Clusters of 8 and 16 against off, one process,
# alternating; the previous binary in its own; the op test (default 16) and one trace.
B=.carry/s31 CALL=c4; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
grep -E "FAIL|differ|all agree|expected|o by heads" $T/ops.txt | cut -c1-200 | head -8
wait $PM; el "e4b model rc $?"
baseline old1
DECODE_PROFILE_CUSTOM="c8:GEMMA_CUDA_ATTN_O=8;off:GEMMA_CUDA_ATTN_O=0;c16:GEMMA_CUDA_ATTN_O=16;c8b:GEMMA_CUDA_ATTN_O=8;offb:GEMMA_CUDA_ATTN_O=0;c16b:GEMMA_CUDA_ATTN_O=16" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
traced c8 GEMMA_CUDA_ATTN_O=8
cd $OUT && tar czf c4.tgz c4
