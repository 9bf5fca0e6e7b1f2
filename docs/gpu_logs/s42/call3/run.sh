# session 42, call 3 (the last of the session's device time). old = main; new = main with the
# tensor-core MLP's gate / up tile as two chains of 8 mmas (even and odd k steps) added at the
# end, instead of one chain of 16 (call 2's Nsight Compute: the kernel alone is bound by a
# fixed-latency dependency). 166 registers against 165, no spills. mma plain step and verify
# over 2 / 5 / 8, old and new alternating, each in a process of its own; then the op test's
# whole-MLP check on new.
B=.carry/s42b CALL=c3; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
for r in a b; do
    for b in old new; do
        DECODE_PROFILE_VERIFY="2 5 8" DECODE_PROFILE_CUSTOM="$b$r:GEMMA_CUDA_MLP=mma" timeout 40 \
            $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/$b$r.txt 2>&1
        el "$b$r rc $?"; ms $T/$b$r.txt
    done
done
cd $OUT && tar czf c3.tgz c3 && cd - > /dev/null
timeout 60 $N/cuda_ops ops mlp > $T/ops_mlp.txt 2>&1; el "ops mlp rc $?"; tail -3 $T/ops_mlp.txt
gzip -f $T/make.log
cd $OUT && tar czf c3.tgz c3
