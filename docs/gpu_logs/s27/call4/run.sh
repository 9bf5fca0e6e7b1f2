# session 27, call 4: the fold again, its prologue a runtime branch of the one kernel (not a template: the decode loop the same code with and without it)
# (GEMMA_CUDA_MLP_NORM, new). The op test (its new test_fused_norm_mlp), the mid twin, E4B with
# the fold on / off alternating in one process (verify passes of 2 and 8), the same with every
# remaining norm_add_norm left out (the bound of folding them all), engine bench on / off.
B=.carry/s27 CALL=c4; . docs/gpu_logs/common.sh
timeout 240 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -3 $T/mid_model.txt
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|MLP|mlp|all agree" $T/ops.txt | cut -c1-300 | head -12
wait $PM; el "e4b model rc $?"
C="fold:GEMMA_CUDA_MLP_NORM=1;nofold:GEMMA_CUDA_MLP_NORM=0;fold2:GEMMA_CUDA_MLP_NORM=1;nofold2:GEMMA_CUDA_MLP_NORM=0"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_SKIP=normadd DECODE_PROFILE_CUSTOM="fold:GEMMA_CUDA_MLP_NORM=1;nofold:GEMMA_CUDA_MLP_NORM=0" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_skip_normadd.txt 2>&1; el "e4b skip normadd rc $?"; ms $T/e4b_skip_normadd.txt
DECODE_PROFILE_RUNS=profiled timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 32 > $T/e4b_families.txt 2>&1; el "families rc $?"; grep -E "rmsnorm|matvec" $T/e4b_families.txt | head -4
for m in 1 0; do
  GEMMA_CUDA_MLP_NORM=$m ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=128 timeout 120 $N/engine bench /tmp/e4b/model \
    --prompts /tmp/e4b/prompts.jsonl > $T/bench_norm$m.out 2> $T/bench_norm$m.err; el "engine bench norm=$m rc $?"; tail -1 $T/bench_norm$m.out | cut -c1-300
done
cd $OUT && tar czf c4.tgz c4
