# session 28, call 3: call 2 found a limit on rows in flight helps (step_slice 10 rows: 2.480
# against 2.562 ms; the engine's MLP kernel 12 rows: 3.08 against 3.14 ms). The finer sweep:
# step_slice at 6-16 rows, the engine's MLP kernel at 10-18 (GEMMA_CUDA_MLP_DEPTH; same bits),
# verify passes of 2 / 8 rows and engine bench's prefill at the best against none.
B=.carry/s28 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $B/step_slice > $T/step_slice.txt 2>&1; el "step_slice rc $?"; grep "in flight" $T/step_slice.txt
wait $PM; el "e4b model rc $?"
C="base:;d10:GEMMA_CUDA_MLP_DEPTH=10;d12:GEMMA_CUDA_MLP_DEPTH=12;d14:GEMMA_CUDA_MLP_DEPTH=14;d16:GEMMA_CUDA_MLP_DEPTH=16"
DECODE_PROFILE_CUSTOM="$C;$C" timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
C="base:;d12:GEMMA_CUDA_MLP_DEPTH=12"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C;$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_verify.txt 2>&1; el "verify rc $?"; ms $T/e4b_verify.txt
i=0
for d in 0 12 0 12; do
  i=$((i + 1))
  GEMMA_CUDA_MLP_DEPTH=$d ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=128 timeout 120 $N/engine bench /tmp/e4b/model \
    --prompts /tmp/e4b/prompts.jsonl > $T/bench${i}_d$d.out 2> $T/bench${i}_d$d.err; el "engine bench depth=$d rc $?"; tail -1 $T/bench${i}_d$d.out | cut -c1-300
done
cd $OUT && tar czf c3.tgz c3
