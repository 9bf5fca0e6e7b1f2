# session 41, call 5. The review's test change (f = this commit's parent's cuda_ops): the whole-MLP
# test (both forms, small shapes, then all shapes) asserting that the backend ran each MLP as one
# whole-MLP kernel of the form asked for (backend_cuda_counters mlp_form / mlp_ops).
B=.carry/s41 CALL=c5; . docs/gpu_logs/common.sh
timeout 120 $N/cuda_ops ops mlp > $T/ops_mlp.txt 2>&1; el "ops mlp rc $?"; tail -2 $T/ops_mlp.txt
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
grep -E "FAIL|differ|all agree|expected|whole MLP" $T/ops.txt | cut -c1-200 | head -8
