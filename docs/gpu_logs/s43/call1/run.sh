# session 43, call 1. old = main; new = main with an experiment switch in mlp.cu's launcher
# (GEMMA_X_RED, read once a process; decode step only, results wrong for x != 0):
#   0 = as main; 1 = no mlp_reduce_kernel (the upper bound of removing it);
#   2 = the MLP kernel adds its partials as fixed-point int64 atomics (red.global.add.u64,
#       each thread its own 8 columns), no reduce kernel; 4 = the same through shared memory
#       (coalesced: lane l of a warp adds column c + l). 90 / 84 / 86 registers.
# Each variant in a process of its own, three rounds.
B=.carry/s43 CALL=c1; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
for r in a b c; do
    DECODE_PROFILE_CUSTOM="old$r:" timeout 40 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 \
        > $T/old$r.txt 2>&1
    el "old$r rc $?"; ms $T/old$r.txt
    for x in 0 1 2 4; do
        GEMMA_X_RED=$x DECODE_PROFILE_CUSTOM="x$x$r:" timeout 40 $N/cuda_ops decode-profile \
            /tmp/e4b/model 256 128 > $T/x$x$r.txt 2>&1
        el "x$x$r rc $?"; ms $T/x$x$r.txt
    done
done
gzip -f $T/make.log
cd $OUT && tar czf c1.tgz c1
