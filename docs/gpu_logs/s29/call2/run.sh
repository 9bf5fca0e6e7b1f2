# session 29, call 2: the MLP's partial sums inside the norm + add after it (rmsnorm.cu
# norm_add_parts_kernel, a cluster a row; k_mlp with na). Correctness (the op test with its new
# bit-for-bit checks, test_gpu.sh steps 2 3 5, the mid-sized twin), then E4B A/B in one process:
# on (default) / off (GEMMA_CUDA_MLP_NORM=0) / every other norm + add in clusters too
# (GEMMA_CUDA_NORM_CLUSTER=1).
B=.carry/s29 CALL=c2; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 300 scripts/test_gpu.sh > $T/test235.txt 2>&1 & P2=$!
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|MLP|all agree|norm/add" $T/ops.txt | cut -c1-200 | head -12
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -4 $T/mid_model.txt
wait $P2; el "steps 2 3 5 rc $?"; grep -E "FAIL|greedy output|all GPU|identical;|nll" $T/test235.txt | cut -c1-160 | head -12
wait $PM; el "e4b model rc $?"
C="on:;off:GEMMA_CUDA_MLP_NORM=0;ncl:GEMMA_CUDA_NORM_CLUSTER=1"
DECODE_PROFILE_CUSTOM="$C;$C;$C" DECODE_PROFILE_VERIFY="2 8" timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
cd $OUT && tar czf c2.tgz c2
