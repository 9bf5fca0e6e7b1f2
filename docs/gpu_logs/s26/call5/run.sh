# session 26, call 5: the 8-input form (verify passes of 5-8 in one pass over the weights); E4B on /
# off alternating with verify passes of 2, 4 and 8; the products alone (every other family
# skipped) on / off; the mid-sized twin (its 5-token chunks take the 8-input form); the op test.
B=.carry/s26 CALL=c5; . docs/gpu_logs/common.sh
cp $B/make_e4b_random.py tools/make_e4b_random.py
e4b_model
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model rc $?"; tail -4 $T/mid_model.txt
wait $PM; el "model rc $?"
C="on:GEMMA_CUDA_MLP=1;off:GEMMA_CUDA_MLP=0;on2:GEMMA_CUDA_MLP=1;off2:GEMMA_CUDA_MLP=0"
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_SKIP=split,merge,nrk,normadd,rmsnorm,elementwise DECODE_PROFILE_CUSTOM="$C" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_products.txt 2>&1; el "e4b products alone rc $?"; ms $T/e4b_products.txt
DECODE_PROFILE_SKIP=matvec DECODE_PROFILE_CUSTOM="on:GEMMA_CUDA_MLP=1" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_small.txt 2>&1; el "e4b small kernels alone rc $?"; ms $T/e4b_small.txt
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differ|MLP|mlp|all agree|double" $T/ops.txt | cut -c1-200 | head -12
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
