# session 28, call 7: with the rows in flight limited apart from the ring, does the ring still
# need 100 KB? A shorter one leaves the multiprocessor more L1 for the kernels beside it (the
# o product loads x through L1). GEMMA_CUDA_MLP_RING_KB / _DEPTH (experiments; same bits): E4B
# alternating; the op test and the mid twin with the 80 KB ring beside them.
B=.carry/s28e CALL=c7; . docs/gpu_logs/common.sh
GEMMA_CUDA_MLP_RING_KB=80 timeout 200 $N/cuda_ops ops > $T/ops_r80.txt 2>&1 & P1=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "e4b model rc $?"
C="base:;r64:GEMMA_CUDA_MLP_RING_KB=64;r80:GEMMA_CUDA_MLP_RING_KB=80;r80d10:GEMMA_CUDA_MLP_RING_KB=80 GEMMA_CUDA_MLP_DEPTH=10"
DECODE_PROFILE_CUSTOM="$C;$C" timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
wait $P1; el "ops (ring 80 KB) rc $?"; grep -E "FAIL|differ|all agree" $T/ops_r80.txt | cut -c1-200 | head -4
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
