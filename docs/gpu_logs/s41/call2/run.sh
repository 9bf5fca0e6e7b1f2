# session 41, call 2. new = main (6def6c1, barrier.sync) with mlp.cu's ring stages freed by every
# thread (arrival count 32 a warp, no __syncwarp) and the op test's widest MLP shape wrapping the
# ring (20 indices a block); mid = main's kernels with that test; old = main (call 1's new).
# ring_race forms 8 / 9 (every lane frees) beside 0 / 3 under racecheck; racecheck over the
# whole-MLP test for mid (main's lane-0 frees, ring now wrapping) and new; the sanitized checks
# of new and synccheck; then E4B timings old / new.
B=.carry/s41 CALL=c2; . docs/gpu_logs/common.sh
e4b_model
CS="compute-sanitizer --error-exitcode 3"
P=""
for f in 0 3 8 9; do
    ( timeout 60 $N/ring_race $f > $T/rr_plain_$f.log 2>&1
      timeout 90 $CS --tool racecheck $N/ring_race $f > $T/rr_race_$f.log 2>&1 ) & P="$P $!"
done
timeout 400 $CS --tool racecheck $B/mid/cuda_ops ops mlp > $T/rc_mlp_mid.log 2>&1 & P="$P $!"
timeout 400 $CS --tool racecheck $N/cuda_ops ops mlp > $T/rc_mlp_new.log 2>&1 & P="$P $!"
timeout 400 $CS --tool synccheck $N/cuda_ops ops small > $T/synccheck.log 2>&1 & P="$P $!"
timeout 400 $CS --tool racecheck $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P="$P $!"
timeout 400 $CS --tool memcheck $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P="$P $!"
timeout 300 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 330 \
    scripts/test_gpu.sh > $T/test235.txt 2>&1 & P="$P $!"
for p in $P; do wait $p; echo -n "rc $? "; done; echo
el "checks done"
for f in 0 3 8 9; do
    echo "form $f: $(tail -1 $T/rr_plain_$f.log | cut -c1-60) | race: $(tail -1 $T/rr_race_$f.log | cut -c1-90)"
done
for f in rc_mlp_mid rc_mlp_new racecheck memcheck synccheck; do
    echo "== $f: $(grep -c 'Race reported\|hazard detected\|Barrier error' $T/$f.log) $(grep -h '^ops' $T/$f.log | cut -c1-90)"
    tail -1 $T/$f.log | cut -c1-200; done
grep -o "Read access at [^ ]* in [^ ]*\|Write access at [^ ]* in [^ ]*" $T/rc_mlp_mid.log $T/rc_mlp_new.log \
    $T/racecheck.log | sort | uniq -c | head -8
grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
rm -rf $T/tests/spec_*
gzip -f $T/*.log 2>/dev/null
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
wait $PM; el "e4b model rc $?"
for r in a b; do versus $r "new$r:"; done
cd $OUT && tar czf c2.tgz c2
