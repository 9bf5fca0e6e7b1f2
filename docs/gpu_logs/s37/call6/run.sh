# session 37, call 6: R = main (S2) + the rows kernel's new defaults (launches of 1024 KiB and
# more, not 4096: E4B's per-layer products too; 4 rows a warp from 5 inputs). Side by side: the
# op test over small shapes (every row of an n-row product equal to the row alone, bit for bit,
# under the new defaults), test_gpu.sh steps 2 and 5 (fixtures GPU = CPU with chunks reproducing
# single steps; lossless speculation on the small model, whose head now takes the rows kernel).
# Then, alone: verify passes, S2 and R, one process each.
B=.carry/s37 CALL=c6; . docs/gpu_logs/common.sh
N=$B/R
e4b_model
timeout 150 $N/cuda_ops ops small > $T/ops_small.txt 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 5" LOG_DIR=$T/tests timeout 150 \
    scripts/test_gpu.sh > $T/test25.txt 2>&1 & P2=$!
wait $P1; el "ops small rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_small.txt | cut -c1-200 | head -6
wait $P2; el "steps 2 5 rc $?"; grep -E "FAIL|GPU agrees|all GPU|identical;" $T/test25.txt | cut -c1-160 | head -10
rm -rf $T/tests
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c6.tgz c6 && cd - > /dev/null
for b in S2 R; do
    DECODE_PROFILE_VERIFY="2 3 4 5 8" DECODE_PROFILE_CUSTOM="$b:" \
        timeout 30 $B/$b/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_$b.txt 2>&1
    el "verify $b rc $?"; ms $T/verify_$b.txt
done
cd $OUT && tar czf c6.tgz c6
