# session 25, call 5: test_first_use rewritten for the case most likely to show the race (a long
# product on a fresh input, then a short first-use copy whose product reads its output); the op
# test without (nofix) and with (new) the weight copy waited for, one after the other.
B=.carry/s25 CALL=c5; . docs/gpu_logs/common.sh
timeout 170 $B/nofix/cuda_ops ops > $T/ops_nofix.txt 2>&1; el "ops nofix rc $?"
timeout 170 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
for f in ops_nofix ops; do echo "== $f"; grep -v "^cuda: NVIDIA" $T/$f.txt | grep -E "expected|gpu .* cpu|FAIL|agree" | cut -c1-220 | head -12; done
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
