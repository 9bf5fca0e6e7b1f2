# session 27, call 7: mlp_reduce_kernel issuing all its loads before its adds (sum_every8; the
# same adds in the same order, so the same bits) against the loop (GEMMA_CUDA_MLP_REDUCE_LOOP=1,
# an experiment switch). The op test, the mid twin both ways (the same max |gpu - cpu| expected),
# E4B alternating with verify passes of 2 and 8.
B=.carry/s27 CALL=c7; . docs/gpu_logs/common.sh
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1 & P1=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 60 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -3 $T/mid_model.txt
GEMMA_CUDA_MLP_REDUCE_LOOP=1 timeout 60 $N/cuda_ops model /tmp/mid/model > $T/mid_model_loop.txt 2>&1; el "mid model (loop) rc $?"; tail -3 $T/mid_model_loop.txt
wait $PM; el "e4b model rc $?"
wait $P1; el "ops rc $?"; grep -E "FAIL|differ|all agree" $T/ops.txt | cut -c1-200 | head -6
C="new:;loop:GEMMA_CUDA_MLP_REDUCE_LOOP=1;new2:;loop2:GEMMA_CUDA_MLP_REDUCE_LOOP=1"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
cd $OUT && tar czf c7.tgz c7
