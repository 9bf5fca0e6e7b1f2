# session 28, call 2: is a boundary's cost queueing behind too many bytes in flight (Little's
# law)? (1) bench/step_slice.cu with each producer keeping at most D rows asked for and not
# landed (ring still 20 rows); (2) the engine's MLP kernel the same way (GEMMA_CUDA_MLP_DEPTH,
# an experiment: same bits, only the producer's pace), E4B alternating in one process.
B=.carry/s28 CALL=c2; . docs/gpu_logs/common.sh
e4b_model
timeout 200 $B/step_slice > $T/step_slice.txt 2>&1; el "step_slice rc $?"; cat $T/step_slice.txt
wait $PM; el "e4b model rc $?"
C="base:;d2:GEMMA_CUDA_MLP_DEPTH=2;d4:GEMMA_CUDA_MLP_DEPTH=4;d8:GEMMA_CUDA_MLP_DEPTH=8;d12:GEMMA_CUDA_MLP_DEPTH=12"
DECODE_PROFILE_CUSTOM="$C;$C" timeout 250 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
cd $OUT && tar czf c2.tgz c2
