# session 33, call 2: how the E4B-sized step grows with the context, and what the decoder's
# capacity costs. The benchmark decodes 512 tokens after 256 (full-attention layers
# attend to 256-768 positions, a capacity of 776); the challenge's record ran with
# MAX_MODEL_LEN=4096, which puts E4B's 512-wide full-attention layers on the split form (slices
# + merge, two kernels) at every context, since the cluster form takes at most 16 positions a
# warp of the capacity (1024 for those heads). Code: main + two experiment switches
# (GEMMA_CUDA_ATTN_POS=N: the cluster form's positions a warp; DECODE_PROFILE_MAX_LEN=N).
B=.carry/s33 CALL=c2; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
# the context, capacity = prompt + steps + 8 (the full layers in clusters up to 1024)
for ps in "256 128" "256 512" "1024 128" "2048 128" "3968 120"; do
    set -- $ps
    DECODE_PROFILE_CUSTOM="p$1s$2:" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model $1 $2 > $T/p$1s$2.txt 2>&1
    el "p$1 s$2 rc $?"; ms $T/p$1s$2.txt
done
# capacity 4096 (the record's MAX_MODEL_LEN): the full layers split (default) or in clusters
# of up to 64 positions a warp; alternating in one process
for ps in "256 128" "1024 128" "2048 128" "3840 128"; do
    set -- $ps
    DECODE_PROFILE_CUSTOM="split$1:DECODE_PROFILE_MAX_LEN=4096;clu$1:DECODE_PROFILE_MAX_LEN=4096 GEMMA_CUDA_ATTN_POS=64;split$1b:DECODE_PROFILE_MAX_LEN=4096;clu$1b:DECODE_PROFILE_MAX_LEN=4096 GEMMA_CUDA_ATTN_POS=64" \
        timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model $1 $2 > $T/cap4096_p$1.txt 2>&1
    el "cap 4096 p$1 rc $?"; ms $T/cap4096_p$1.txt
done
cd $OUT && tar czf c2.tgz c2
