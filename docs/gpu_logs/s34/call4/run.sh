# session 34, call 4: the whole-MLP kernel with each batch's down rows after the next batch's
# gate and up rows (mlp.cu LAG, experiment switch GEMMA_CUDA_MLP_LAG=1): one barrier a batch
# instead of two, and the chains of sums that make a batch's h spread over the warps. Same sums
# in the same order. With and without call 3's GEMMA_CUDA_MLP_SPLIT=4. Untimed first: the op
# test under LAG and LAG + SPLIT=4 (every row of an n-row launch against n = 1, bit for bit).
# Then, one process alternating, the decode step and verify passes; old = call 1's binary.
B=.carry/s34 CALL=c4; . docs/gpu_logs/common.sh
e4b_model
GEMMA_CUDA_MLP_LAG=1 timeout 250 $N/cuda_ops ops > $T/ops_lag.txt 2>&1 & P1=$!
GEMMA_CUDA_MLP_LAG=1 GEMMA_CUDA_MLP_SPLIT=4 timeout 250 $N/cuda_ops ops > $T/ops_lag_s4.txt 2>&1 & P2=$!
wait $P1; el "ops lag rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_lag.txt | cut -c1-200 | head -6
wait $P2; el "ops lag s4 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_lag_s4.txt | cut -c1-200 | head -6
wait $PM; el "e4b model rc $?"
L=GEMMA_CUDA_MLP_LAG=1 S4=GEMMA_CUDA_MLP_SPLIT=4
DECODE_PROFILE_VERIFY="1 2 4 5 8" DECODE_PROFILE_CUSTOM="base:;lag:$L;lags4:$L $S4;s4:$S4;baseb:;lagb:$L;lags4b:$L $S4;s4b:$S4" \
    timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
baseline old
DECODE_PROFILE_CUSTOM="lag:$L;base:;lagb:$L;baseb:" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/decode.txt 2>&1
el "decode rc $?"; ms $T/decode.txt
cd $OUT && tar czf c4.tgz c4
