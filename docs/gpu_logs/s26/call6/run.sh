# session 26, call 6: the final code. Correctness side by side first (the op test, test_gpu.sh steps
# 2 3 5, the mid-sized twin with prefill on our kernels - chunks of 16 - and on cuBLAS from the
# transposed down), then bench/bench_gpu.sh alone for the headline.
B=.carry/s26 CALL=c6; . docs/gpu_logs/common.sh
cp $B/make_e4b_random.py tools/make_e4b_random.py
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 300 scripts/test_gpu.sh > $T/test235.txt 2>&1 & P2=$!
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -4 $T/mid_model.txt
GEMMA_CUDA_GEMM=auto timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model_auto.txt 2>&1; el "mid model (gemm auto) rc $?"; tail -2 $T/mid_model_auto.txt
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|MLP|all agree" $T/ops.txt | cut -c1-200 | head -8
wait $P2; el "steps 2 3 5 rc $?"; grep -E "FAIL|greedy output|all GPU|identical;|nll" $T/test235.txt | cut -c1-160 | head -12
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 300 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|GEMMA_CUDA_MLP=0" $T/bench/bench_gpu.md | head -6
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
