# session 31, call 6: call 4's fused kernel (o by heads, clusters of 8 now the default) with the
# slice of o copied in pieces all in flight at once (GEMMA_CUDA_ATTN_O_CHUNK=KiB, default 16)
# instead of one transfer (call 5: 11 GB/s into one SM). Op test beside the model's creation,
# then the timing (nothing else on the GPU), then test_gpu.sh steps 2 3 5 and the mid twin.
B=.carry/s31 CALL=c6; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
wait $PM; el "e4b model rc $?"
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected|o by heads" $T/ops.txt | cut -c1-200 | head -8
DECODE_PROFILE_CUSTOM="k16:GEMMA_CUDA_ATTN_O=8;off:GEMMA_CUDA_ATTN_O=0;k4:GEMMA_CUDA_ATTN_O=8 GEMMA_CUDA_ATTN_O_CHUNK=4;k160:GEMMA_CUDA_ATTN_O=8 GEMMA_CUDA_ATTN_O_CHUNK=160;k16b:GEMMA_CUDA_ATTN_O=8;offb:GEMMA_CUDA_ATTN_O=0" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
baseline old1
cd $OUT && tar czf c6a.tgz c6 && cd - > /dev/null
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 300 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -4 $T/mid_model.txt
rm -rf $T/tests/spec_*
cd $OUT && tar czf c6.tgz c6
