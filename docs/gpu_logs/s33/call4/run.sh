# session 33, call 4: the attention's merge kernel (the split form's second kernel: every
# attention on GPUs without clusters - A10G, L4, RTX 4090 - and long contexts on sm_90) asks for
# all its loads at once, a thread per output dim: one memory round trip instead of 1 + 8 for
# E4B's 512-wide heads. The same sums in the same order (the bits do not change). new = that;
# old = call 3's cuda_ops. The op test's small shapes first (both attention forms against the
# CPU, every row of a chunk bit for bit the row alone), then alternating processes: E4B with the
# split form everywhere (GEMMA_CUDA_ATTN=split, the path before sm_90), at a 4096 cache and
# 3840 + 128 (the full layers split), and the default (clusters: unaffected). Then the whole op
# test, if time is left.
B=.carry/s33 CALL=c4; . docs/gpu_logs/common.sh
e4b_model
timeout 120 $N/cuda_ops ops small > $T/ops_small.txt 2>&1; el "ops small rc $?"; grep -E "FAIL|differ|all agree" $T/ops_small.txt | cut -c1-200 | head -5
wait $PM; el "e4b model rc $?"
run() { # LABEL BIN P S SETTINGS
    DECODE_PROFILE_CUSTOM="$1:$5" timeout 100 $B/$2/cuda_ops decode-profile /tmp/e4b/model $3 $4 > $T/$1.txt 2>&1
    el "$1 rc $?"; ms $T/$1.txt
}
for r in 1 2; do
    run split_new$r new 256 128 "GEMMA_CUDA_ATTN=split"
    run split_old$r old 256 128 "GEMMA_CUDA_ATTN=split"
done
run long_new new 3840 128 "DECODE_PROFILE_MAX_LEN=4096"
run long_old old 3840 128 "DECODE_PROFILE_MAX_LEN=4096"
run def_new new 256 128 ""
run def_old old 256 128 ""
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differ|all agree" $T/ops.txt | cut -c1-200 | head -5
cd $OUT && tar czf c4.tgz c4
