# session 44, call 4. new = call 3's code with the op test keeping GEMMA_CUDA_GEMM=own for every
# backend it makes (call 3: the whole-MLP forms' own backends took the new default, auto, and
# sent n = 33 / 64 to cuBLAS). The full op test, then the small one.
B=.carry/s44 CALL=c4; . docs/gpu_logs/common.sh
timeout 300 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
grep -E "FAIL|all agree" $T/ops.txt | cut -c1-200 | head -5
timeout 120 $N/cuda_ops ops small > $T/ops_small.txt 2>&1; el "ops small rc $?"; tail -1 $T/ops_small.txt
