# session 37, call 5: main's code (call 4's binaries, S2) with the products' rows switches, for
# the next session's leads: 4 rows a warp (GEMMA_CUDA_MV_ROWS=4) and the per-layer products
# through the rows kernel too (GEMMA_CUDA_MV_ROWS_MIN=0), verify over 2 / 3 / 4 / 5 / 8 rows,
# two rounds in one process each, alternating.
B=.carry/s37 CALL=c5; . docs/gpu_logs/common.sh
N=$B/S2
e4b_model; wait $PM; el "e4b model rc $?"
for round in a b; do
    DECODE_PROFILE_VERIFY="2 3 4 5 8" DECODE_PROFILE_CUSTOM="d$round:;r4$round:GEMMA_CUDA_MV_ROWS=4;m0$round:GEMMA_CUDA_MV_ROWS_MIN=0;r4m0$round:GEMMA_CUDA_MV_ROWS=4 GEMMA_CUDA_MV_ROWS_MIN=0" \
        timeout 80 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/rows_$round.txt 2>&1
    el "round $round rc $?"; ms $T/rows_$round.txt
done
cd $OUT && tar czf c5.tgz c5
