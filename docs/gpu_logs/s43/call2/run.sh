# session 43, call 2. old = main; new = the MLP's partial sums as fixed-point int64 atomics
# (mlp.cuh), read by the norm + add after the MLP (k_norm_add_norm_fix) or converted by
# mlp_fix_out_kernel where no norm follows; mlp_reduce_kernel is gone. Both MLP forms (CUDA
# cores, tensor cores). First the whole-MLP op test alone, then old against new (plain step and
# verify over 2 / 4 / 8 positions, default and GEMMA_CUDA_MLP=mma), two rounds; then the
# correctness block (full op test, test_gpu.sh steps 2 3 5, the mid-sized twin).
B=.carry/s43b CALL=c2; . docs/gpu_logs/common.sh
e4b_model
timeout 120 $N/cuda_ops ops mlp > $T/ops_mlp.txt 2>&1; el "ops mlp rc $?"; tail -4 $T/ops_mlp.txt
wait $PM; el "e4b model rc $?"
for r in a b; do
    VERIFY="2 4 8" versus $r "new$r:;newmma$r:GEMMA_CUDA_MLP=mma"
    DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="oldmma$r:GEMMA_CUDA_MLP=mma" timeout 60 \
        $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_oldmma_$r.txt 2>&1
    el "old mma $r rc $?"; ms $T/verify_oldmma_$r.txt
done
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
correctness
gzip -f $T/make.log
cd $OUT && tar czf c2.tgz c2
