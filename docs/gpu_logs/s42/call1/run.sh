# session 42, call 1. old = main (676c494); new = main with three launcher-only switches for the
# tensor-core whole MLP (GEMMA_CUDA_MLP=mma), read once a process: GEMMA_CUDA_MLPM_S8 (ring
# stages a multiple of 8, so a down tile that wraps the ring keeps its ldmatrix rows in 8 bank
# groups), GEMMA_CUDA_MLPM_RING=N (most stages, default 24), GEMMA_CUDA_MLPM_DEPTH=N (rows in
# flight, default 12). The question: is mma's plain step (3.42 ms against 3.05) or its verify over
# 6-7 positions (rings of 22 / 19 stages) held back by its ring? Each variant in a process of its
# own (the stages are asked once a process), two rounds.
B=.carry/s42 CALL=c1; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
run() { # run LABEL BIN ENV...
    local l=$1 b=$2; shift 2
    env "$@" DECODE_PROFILE_VERIFY="5 6 7 8" DECODE_PROFILE_CUSTOM="$l:GEMMA_CUDA_MLP=mma" \
        timeout 80 $b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/$l.txt 2>&1
    el "$l rc $?"; ms $T/$l.txt
}
for r in a b; do
    run old_mma$r $B/old
    run s8_$r $N GEMMA_CUDA_MLPM_S8=1
    run r32s8_$r $N GEMMA_CUDA_MLPM_S8=1 GEMMA_CUDA_MLPM_RING=32
    run r32d20_$r $N GEMMA_CUDA_MLPM_S8=1 GEMMA_CUDA_MLPM_RING=32 GEMMA_CUDA_MLPM_DEPTH=20
    run d16_$r $N GEMMA_CUDA_MLPM_DEPTH=16
done
DECODE_PROFILE_CUSTOM="dflt:" timeout 60 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 \
    > $T/old_dflt.txt 2>&1; el "old dflt rc $?"; ms $T/old_dflt.txt
cd $OUT && tar czf c1.tgz c1
