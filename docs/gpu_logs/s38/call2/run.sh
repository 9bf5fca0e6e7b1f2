# session 38, call 2. base = main (b401a28: a form for every n in the rows and MLP kernels);
# cand = base + the cluster attention over several rows with 4 heads of a KV head a cluster
# (attn_cluster_heads_kernel: each key and value row loaded once for the 4; the per-head form
# loads them for each head), plus an experiment hook not committed: EXP_ATTN_HEADS_ALL=1 takes
# that form for the decode step too. First, untimed and side by side on cand: racecheck and
# memcheck over the small op test, the full op test, test_gpu.sh steps 2 3 5. Then, alone:
# verify passes over 2 .. 8, 16 and 64 rows, base and cand alternating; cand's decode step with
# the heads form; a traced verify over 8 rows on cand.
B=.carry/s38 CALL=c2; . docs/gpu_logs/common.sh
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
grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
grep -c "Race reported" $T/racecheck.log; tail -1 $T/racecheck.log | cut -c1-200
tail -1 $T/memcheck.log | cut -c1-200
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
rm -rf $T/tests
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
for round in a b; do
    for b in base cand; do
        DECODE_PROFILE_VERIFY="2 3 4 5 6 7 8 16 64" DECODE_PROFILE_CUSTOM="$b$round:" \
            timeout 60 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_${b}_$round.txt 2>&1
        el "verify $b $round rc $?"; ms $T/verify_${b}_$round.txt
    done
done
EXP_ATTN_HEADS_ALL=1 DECODE_PROFILE_CUSTOM="all:;allb:" timeout 60 $N/cuda_ops decode-profile \
    /tmp/e4b/model 256 128 > $T/decode_heads_all.txt 2>&1
el "decode heads all rc $?"; ms $T/decode_heads_all.txt
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8
cd $OUT && tar czf c2.tgz c2
