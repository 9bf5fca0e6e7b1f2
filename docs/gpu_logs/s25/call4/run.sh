# session 25, call 4: a weight first used between two PDL kernels (call 3's fold test: the second
# backend's products wrong now and then). The op test with the new check test_first_use, without
# (nofix) and with (new) the weight copy waited for, side by side; test_gpu.sh steps 2, 3, 5 with
# the fix (the code to commit: fold off by default, rmsnorm's explicit fmaf / __fmul_rn / __fadd_rn).
B=.carry/s25 CALL=c4; . docs/gpu_logs/common.sh
timeout 400 $B/nofix/cuda_ops ops > $T/ops_nofix.txt 2>&1 & P1=$!
timeout 400 $N/cuda_ops ops > $T/ops.txt 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 400 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
wait $P1; el "ops nofix rc $?"; wait $P2; el "ops rc $?"
for f in ops_nofix ops; do echo "== $f"; grep -v "^cuda: NVIDIA" $T/$f.txt | grep -E "expected|gpu .* cpu|FAIL|agree" | cut -c1-220 | head -12; done
grep -E "FAIL|greedy output|all GPU|identical;|nll" $T/test235.txt | cut -c1-160 | head -12
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
