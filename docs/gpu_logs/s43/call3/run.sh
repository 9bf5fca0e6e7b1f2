# session 43, call 3. Why call 2's engine form (3.084 ms) is slower than call 1's experiment
# (2.993) and main (3.052). old = main; new = branch fixsum (04ad... the engine form) with three
# experiment switches, read once a process: GEMMA_X_CONV (the norm never reads the sums: the MLP
# converts them, mlp_fix_out_kernel, then the float norm), GEMMA_X_NOCHK (the one-input MLP adds
# without the range check), GEMMA_X_NOZERO (the norm does not clear the sums: wrong results).
# Each in a process of its own, two rounds, plain step and verify over 2 and 8; then one traced
# run each of old and new (bench/trace_step.py's per-layer table).
B=.carry/s43c CALL=c3; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
run() { # label, binary, env...
    local l=$1 b=$2; shift 2
    env "$@" DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$l:" timeout 60 $b/cuda_ops \
        decode-profile /tmp/e4b/model 256 128 > $T/$l.txt 2>&1
    el "$l rc $?"; ms $T/$l.txt
}
for r in a b; do
    run old$r $B/old
    run new$r $N
    run conv$r $N GEMMA_X_CONV=1
    run nochk$r $N GEMMA_X_NOCHK=1
    run nozero$r $N GEMMA_X_NOZERO=1
    run both$r $N GEMMA_X_NOCHK=1 GEMMA_X_NOZERO=1
done
cd $OUT && tar czf c3.tgz c3 && cd - > /dev/null
BIN=$B/old traced old
traced new
gzip -f $T/make.log
cd $OUT && tar czf c3.tgz c3
