# session 41, call 3. new = main (6b6ab2e: every thread frees mlp.cu's ring stages) plus the
# tensor-core whole MLP (GEMMA_CUDA_MLP=mma, session 40's call-3 form from 8f0575c) with each
# lane freeing the one row it read (4 arrivals a stage a warp, no __syncwarp before the frees);
# old = main. Checks side by side and untimed (the op test's whole-MLP shapes now wrap both
# rings, and it runs both forms), then E4B timings old / new default / new mma.
B=.carry/s41 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
CS="compute-sanitizer --error-exitcode 3"
P=""
timeout 420 $CS --tool racecheck $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P="$P $!"
timeout 420 $CS --tool memcheck $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P="$P $!"
timeout 420 $CS --tool synccheck $N/cuda_ops ops small > $T/synccheck.log 2>&1 & P="$P $!"
timeout 330 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 330 \
    scripts/test_gpu.sh > $T/test235.txt 2>&1 & P="$P $!"
( python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
      > $T/make_mid.log 2>&1
  GEMMA_CUDA_MLP=mma timeout 200 $N/cuda_ops model /tmp/mid/model tests/engine/fixtures/a_ple_kvshare \
      tests/engine/fixtures/b_keqv_untied > $T/model_mma.txt 2>&1; echo "model mma rc $?"
  timeout 120 $N/cuda_ops model /tmp/mid/model > $T/model_dflt.txt 2>&1; echo "model dflt rc $?" ) & P="$P $!"
for p in $P; do wait $p; echo -n "rc $? "; done; echo
el "checks done"
for f in racecheck memcheck synccheck; do
    echo "== $f: $(grep -c 'Race reported\|hazard detected\|Barrier error' $T/$f.log) $(grep -h '^ops' $T/$f.log | cut -c1-90)"
    tail -1 $T/$f.log | cut -c1-200; done
grep -o "Read access at [^ ]* in [^ ]*\|Write access at [^ ]* in [^ ]*\|Device Frame: [^(]*" \
    $T/racecheck.log $T/synccheck.log | sort | uniq -c | head -8
grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -6
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
grep -hE "FAIL|differ|bit for bit|GPU agrees|greedy" $T/model_mma.txt $T/model_dflt.txt | cut -c1-160 | head -12
rm -rf $T/tests/spec_*
gzip -f $T/*.log 2>/dev/null
cd $OUT && tar czf c3.tgz c3 && cd - > /dev/null
wait $PM; el "e4b model rc $?"
for r in a b; do versus $r "dflt$r:;mma$r:GEMMA_CUDA_MLP=mma"; done
cd $OUT && tar czf c3.tgz c3
