# session 27, call 5: call 4 showed the MLP kernel's decode loop is sensitive to its code (the
# same loop as a template variant with a prologue: 0.2 ms a step slower; as a runtime branch:
# not). An experiment on the 1-input form: the ring's rows taken in groups of 2, 4 or 8 (a wait
# and a shared load each, back to back, then the stages freed together), so that several loads
# are in flight (GEMMA_CUDA_MLP_GROUP_ROWS; same arithmetic, same bits). E4B alternating.
B=.carry/s27 CALL=c5; . docs/gpu_logs/common.sh
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "e4b model rc $?"
C="g1:GEMMA_CUDA_MLP_GROUP_ROWS=1;g2:GEMMA_CUDA_MLP_GROUP_ROWS=2;g4:GEMMA_CUDA_MLP_GROUP_ROWS=4;g8:GEMMA_CUDA_MLP_GROUP_ROWS=8"
DECODE_PROFILE_CUSTOM="$C;$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_SKIP=split,merge,nrk,normadd,rmsnorm,elementwise DECODE_PROFILE_CUSTOM="$C" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_products.txt 2>&1; el "products alone rc $?"; ms $T/e4b_products.txt
cd $OUT && tar czf c5.tgz c5
