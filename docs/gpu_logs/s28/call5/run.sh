# session 28, call 5: the MLP kernel's ring for a chunk's last launch (the only one at decode)
# longer than the 100 KB that leaves room for a second MLP launch: none follows it, and the
# kernels before it (o, the norms) leave memory mostly idle, so a longer ring could soak that up
# (GEMMA_CUDA_MLP_RING_KB, with GEMMA_CUDA_MLP_DEPTH: experiments; same bits). E4B alternating.
B=.carry/s28c CALL=c5; . docs/gpu_logs/common.sh
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "e4b model rc $?"
C="base:;r150:GEMMA_CUDA_MLP_RING_KB=150;r200:GEMMA_CUDA_MLP_RING_KB=200;r200d16:GEMMA_CUDA_MLP_RING_KB=200 GEMMA_CUDA_MLP_DEPTH=16;r200nolim:GEMMA_CUDA_MLP_RING_KB=200 GEMMA_CUDA_MLP_DEPTH=1000"
DECODE_PROFILE_CUSTOM="$C;$C" timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
C="base:;r200:GEMMA_CUDA_MLP_RING_KB=200"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C;$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_verify.txt 2>&1; el "verify rc $?"; ms $T/e4b_verify.txt
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
