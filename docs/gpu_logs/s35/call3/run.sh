# session 35, call 3: x asked of L1 at once after the wait (GEMMA_CUDA_MV_ROWS_V=3: V=1 plus the
# prefetch; GEMMA_CUDA_MV_XPF=1: the general kernel's n > 1 launches, E4B's per-layer products),
# and V=1 with the MLP as grouped products (GEMMA_CUDA_MLP=0: the gate + up pair through the rows
# kernel). Untimed first: the op test under V=3 + XPF=1. Then verify passes over 2 / 4 / 8 rows
# alternating, and a timeline of the 8-row pass under V=3 + XPF=1.
B=.carry/s35 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
GEMMA_CUDA_MV_ROWS_V=3 GEMMA_CUDA_MV_XPF=1 timeout 250 $N/cuda_ops ops > $T/ops_v3x.txt 2>&1
el "ops v3x rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_v3x.txt | cut -c1-200 | head -6
wait $PM; el "e4b model rc $?"
V1=GEMMA_CUDA_MV_ROWS_V=1 V3=GEMMA_CUDA_MV_ROWS_V=3 X=GEMMA_CUDA_MV_XPF=1 M0=GEMMA_CUDA_MLP=0
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="v1:$V1;v3:$V3;v1x:$V1 $X;v3x:$V3 $X;v1b:$V1;v3b:$V3;v1xb:$V1 $X;v3xb:$V3 $X" \
    timeout 300 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="m0:$M0;m0v1:$M0 $V1;m0b:$M0;m0v1b:$M0 $V1" \
    timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_m0.txt 2>&1
el "verify m0 rc $?"; ms $T/verify_m0.txt
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8v3x $V3 $X
cd $OUT && tar czf c3.tgz c3
