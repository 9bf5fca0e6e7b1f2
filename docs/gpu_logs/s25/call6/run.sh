# session 25, call 6: the final code (the fold taken out; weight copies waited for; test_first_use
# with its norm + add case): the op test.
B=.carry/s25 CALL=c6; . docs/gpu_logs/common.sh
timeout 120 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
grep -v "^cuda: NVIDIA" $T/ops.txt | grep -E "expected|gpu .* cpu|FAIL|agree" | cut -c1-220 | head -12
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
