# session 25, call 2: the norm + add folded into the per-layer-input gate (kernels/matvec_fold.cu,
# GEMMA_CUDA_FOLD): memcheck / racecheck of the small op test and the model build beside the op test
# (correctness only), then E4B and the small model with the fold on / off alternating in one process.
B=.carry/s25 CALL=c2; . docs/gpu_logs/common.sh
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
e4b_model
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differ|fold|all agree" $T/ops.txt | cut -c1-200 | head -12
wait $PM; el "model rc $?"; wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -2 $T/memcheck.log; tail -2 $T/racecheck.log
C="f1_a:;f0_a:GEMMA_CUDA_FOLD=0;f1_b:;f0_b:GEMMA_CUDA_FOLD=0;f1_c:;f0_c:GEMMA_CUDA_FOLD=0"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 220 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_VERIFY="2 4" DECODE_PROFILE_CUSTOM="$C" timeout 80 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
