# session 27, call 1: what session 26 prepared. Correctness first, in parallel (the op test with the
# whole MLP at n = 33 / 64, the mid twin with prefill through the MLP kernel, and the control run of
# GEMMA_CUDA_GEMM=auto without any transposed-down branch), then alone: bench/step_slice.cu and
# bench/step_shape.cu (the chain with every product in the slice layout against the engine's
# layout), and engine bench prefill / decode with the MLP kernel on and off.
B=.carry/s27 CALL=c1; . docs/gpu_logs/common.sh
timeout 240 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -3 $T/mid_model.txt
GEMMA_CUDA_GEMM=auto timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model_auto.txt 2>&1; el "mid model (gemm auto, control) rc $?"; tail -3 $T/mid_model_auto.txt
GEMMA_CUDA_GEMM=auto GEMMA_CUDA_MLP=0 timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model_auto_nomlp.txt 2>&1; el "mid model (gemm auto, mlp 0) rc $?"; tail -3 $T/mid_model_auto_nomlp.txt
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|MLP|mlp|all agree" $T/ops.txt | cut -c1-200 | head -12
wait $PM; el "e4b model rc $?"
timeout 100 $N/step_slice > $T/step_slice.txt 2>&1; el "step_slice rc $?"; tail -12 $T/step_slice.txt
timeout 150 $N/step_shape > $T/step_shape.txt 2>&1; el "step_shape rc $?"; tail -20 $T/step_shape.txt
for m in 1 0; do
  GEMMA_CUDA_MLP=$m ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=128 timeout 120 $N/engine bench /tmp/e4b/model \
    --prompts /tmp/e4b/prompts.jsonl > $T/bench_mlp$m.out 2> $T/bench_mlp$m.err; el "engine bench mlp=$m rc $?"; tail -1 $T/bench_mlp$m.out | cut -c1-400
done
cd $OUT && tar czf c1.tgz c1
