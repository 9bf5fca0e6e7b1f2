# session 32, call 9: o's whole row before the wait. GEMMA_CUDA_MV_PF4_COLS=N: matrix-vector
# launches over N columns load 4 16-byte chunks a lane before their PDL wait instead of 2 - on
# E4B's sliding layers (o: 2048 columns, rows split in 2) that is all of o, 10.5 MB, streamed
# while the attention leaves memory idle. Same sums, same order. One process alternating, main's
# binary in its own, a timeline, and the mid twin against the CPU with the switch on (its o has
# 512 columns).
B=.carry/s32 CALL=c9; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
DECODE_PROFILE_CUSTOM="off:;o4:GEMMA_CUDA_MV_PF4_COLS=2048;f4:GEMMA_CUDA_MV_PF4_COLS=4096;offb:;o4b:GEMMA_CUDA_MV_PF4_COLS=2048;q4:GEMMA_CUDA_MV_PF4_COLS=2560" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab.txt 2>&1; el "ab rc $?"; ms $T/ab.txt
baseline old
traced o4 GEMMA_CUDA_MV_PF4_COLS=2048
python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 > $T/make_mid.log 2>&1; el "mid rc $?"
GEMMA_CUDA_MV_PF4_COLS=512 timeout 120 $N/cuda_ops model /tmp/mid/model > $T/mid_model.txt 2>&1; el "mid model (pf4 512) rc $?"; tail -4 $T/mid_model.txt
cd $OUT && tar czf c9.tgz c9
