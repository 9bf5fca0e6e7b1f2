# session 38, call 1. base = main (b3d4a0b); cand = base + a form for every pass of 2 .. 8 inputs
# in the rows kernel and 1 .. 8 in the whole-MLP kernel (NL live inputs, the warp's sums in the
# next power of two of slots; passes over 3 and 5 .. 7 took the 4- and 8-input forms, dead inputs
# loaded and dotted). First, untimed and side by side on cand: racecheck and memcheck over the
# small op test, the full op test, test_gpu.sh steps 2 3 5. Then, alone: verify passes over
# 2 .. 8 rows, base and cand alternating; then cand with 2 and with 4 rows a warp for every n.
B=.carry/s38 CALL=c1; . docs/gpu_logs/common.sh
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
cd $OUT && tar czf c1.tgz c1 && cd - > /dev/null
for round in a b; do
    for b in base cand; do
        DECODE_PROFILE_VERIFY="2 3 4 5 6 7 8" DECODE_PROFILE_CUSTOM="$b$round:" \
            timeout 60 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_${b}_$round.txt 2>&1
        el "verify $b $round rc $?"; ms $T/verify_${b}_$round.txt
    done
done
DECODE_PROFILE_VERIFY="2 3 4 5 6 7 8" DECODE_PROFILE_CUSTOM="rows2:GEMMA_CUDA_MV_ROWS=2;rows4:GEMMA_CUDA_MV_ROWS=4" \
    timeout 90 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_rows.txt 2>&1
el "verify rows rc $?"; ms $T/verify_rows.txt
cd $OUT && tar czf c1.tgz c1
