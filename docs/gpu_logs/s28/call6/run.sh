# session 28, call 6: two more ways of pacing the MLP kernel's producer (experiments; same bits):
# GEMMA_CUDA_MLP_EARLY=P puts only P rows before the kernel before it has ended (less traffic
# beside the latency-bound attention half); GEMMA_CUDA_MLP_L2=R asks L2 at the start for the R
# rows after the ring's first fill (soaking up the memory the attention half leaves idle).
# E4B alternating in one process, then verify passes at the best.
B=.carry/s28d CALL=c6; . docs/gpu_logs/common.sh
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "e4b model rc $?"
C="base:;e4:GEMMA_CUDA_MLP_EARLY=4;e8:GEMMA_CUDA_MLP_EARLY=8;l2_20:GEMMA_CUDA_MLP_L2=20;l2_40:GEMMA_CUDA_MLP_L2=40;l2_80:GEMMA_CUDA_MLP_L2=80"
DECODE_PROFILE_CUSTOM="$C;$C" timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
