# session 29, call 5: the final code (the weight table in backend_cuda_weights.c, the attention
# checks in cuda_ops_attention.h; the kernels are session 28's): the op test, test_gpu.sh steps
# 2 3 5, the mid-sized twin, and one E4B decode-profile run as a check of the step's time.
B=.carry/s29c CALL=c5; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 300 scripts/test_gpu.sh > $T/test235.txt 2>&1 & P2=$!
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -8
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -4 $T/mid_model.txt
wait $P2; el "steps 2 3 5 rc $?"; grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="base:;base:" DECODE_PROFILE_VERIFY="2" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
rm -rf $T/tests/spec_*; cd $OUT && tar czf c5.tgz c5
