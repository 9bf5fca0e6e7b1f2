# session 29, call 4: the matrix-vector switches again, on today's step (the MLP kernel with its
# 60 KB in-flight limit; they were last swept before it existed). Session 28's lesson - requests
# in flight beyond what memory needs only queue the critical path - may now favour less
# prefetch before the wait, or fewer resident warps. Existing switches only; the code is
# 62f483b's (the fused norm taken out).
B=.carry/s29b CALL=c4; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
C="base:;pf0:GEMMA_CUDA_MV_PREFETCH=0;pf4:GEMMA_CUDA_MV_PREFETCH=4;bw8:GEMMA_CUDA_MV_BLOCK_WARPS=8;bw2:GEMMA_CUDA_MV_BLOCK_WARPS=2;persist:GEMMA_CUDA_MV_GRID=persist;u4:GEMMA_CUDA_MV_UNROLL=4;u8:GEMMA_CUDA_MV_UNROLL=8;grp0:GEMMA_CUDA_MV_GROUP=0;grp1:GEMMA_CUDA_MV_GROUP=1"
DECODE_PROFILE_CUSTOM="$C;$C" DECODE_PROFILE_VERIFY="2" timeout 300 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
cd $OUT && tar czf c4.tgz c4
