# session 34, call 1: main's code after session 33's review (579c56f) plus cuda_ops'
# DECODE_PROFILE_TRACE_ROWS (a timeline of a verify pass). First, untimed and side by side: the
# whole scripts/test_gpu.sh (steps 1 2 3 5; step 4, the sanitizers, beside it) - its new
# assertions on attn_split_ops and the generate fix have not run on a GPU. Then, alone: what a
# speculative verify pass costs and where (s33's bench: over 5 positions 2.87 decode steps,
# against 1.68 over 4), with and without the whole-MLP kernel and the tensor cores, and the
# timelines of the passes over 4 and 8 positions.
B=.carry/s34 CALL=c1; . docs/gpu_logs/common.sh
e4b_model
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3 5" LOG_DIR=$T/tests timeout 420 \
    scripts/test_gpu.sh > $T/test_gpu.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="4" SAN_TIMEOUT=300 LOG_DIR=$T/tests4 timeout 420 \
    scripts/test_gpu.sh > $T/test_gpu4.txt 2>&1 & P2=$!
wait $PM; el "e4b model rc $?"
wait $P1; el "test_gpu 1 2 3 5 rc $?"; grep -E "FAIL|===|passed|identical" $T/test_gpu.txt | cut -c1-160 | head -30
wait $P2; el "test_gpu 4 rc $?"; grep -E "FAIL|===|ERROR SUMMARY|hazard" $T/test_gpu4.txt | cut -c1-160 | head -12
rm -rf $T/tests/spec_* $T/tests4/spec_*
V="1 2 3 4 5 6 8"
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="def:;mlp0:GEMMA_CUDA_MLP=0;mma:GEMMA_CUDA_MV_MMA=1;mma_mlp0:GEMMA_CUDA_MV_MMA=1 GEMMA_CUDA_MLP=0;defb:" \
    timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 32 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
for c in "v8:8:" "v4:4:" "v8mlp0:8:GEMMA_CUDA_MLP=0" "v1:1:"; do
    IFS=: read name rows set <<< "$c"
    DECODE_PROFILE_VERIFY="$rows" DECODE_PROFILE_TRACE_ROWS=$rows DECODE_PROFILE_CUSTOM="$name:$set" \
        DECODE_PROFILE_TRACE=$T/trace_$name.csv timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 16 \
        > $T/traced_$name.txt 2>&1
    el "traced $name rc $?"; ms $T/traced_$name.txt
    python3 bench/trace_step.py $T/trace_$name.csv 40 > $T/trace_step_$name.txt 2>&1
    head -24 $T/trace_step_$name.txt | cut -c1-120
    gzip -f $T/trace_$name.csv
done
cd $OUT && tar czf c1.tgz c1
