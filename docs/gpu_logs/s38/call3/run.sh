# session 38, call 3. base = main (b401a28); cand = base + the cluster attention over several rows
# with 2 or 4 heads of a KV head a cluster where that takes fewer waves of clusters than a head a
# cluster (attn_cluster_for; call 2 had 4 heads for every n > 1). First, untimed and side by side
# on cand: racecheck and memcheck over the small op test, the full op test, test_gpu.sh steps
# 2 3 5. Then, alone: verify passes over 2 .. 8, 16 and 64 rows, base and cand alternating.
# (bench/bench_gpu.sh left out: three tries at a machine had cost 5 device minutes.)
B=.carry/s38 CALL=c3; . docs/gpu_logs/common.sh
N=$B/cand
e4b_model
P=""
timeout 330 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P="$P $!"
timeout 330 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P="$P $!"
timeout 330 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 330 \
    scripts/test_gpu.sh > $T/test235.txt 2>&1 & P="$P $!"
for p in $P; do wait $p; echo "pid rc $?"; done
el "correctness done"
grep -E "FAIL|differ|all agree|expected|heads a cluster" $T/ops.txt | cut -c1-200 | head -12
grep -c "Race reported" $T/racecheck.log; tail -1 $T/racecheck.log | cut -c1-200
tail -1 $T/memcheck.log | cut -c1-200
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
rm -rf $T/tests
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c3.tgz c3 && cd - > /dev/null
for round in a b; do
    for b in base cand; do
        DECODE_PROFILE_VERIFY="2 3 4 5 6 7 8 16 64" DECODE_PROFILE_CUSTOM="$b$round:" \
            timeout 60 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_${b}_$round.txt 2>&1
        el "verify $b $round rc $?"; ms $T/verify_${b}_$round.txt
    done
done
cd $OUT && tar czf c3.tgz c3
