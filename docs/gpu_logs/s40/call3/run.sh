# session 40, call 3. new = mlp_mma.cu taking each gate/up tile as mlp.cu takes a row: a lane
# waits for its row, copies its 32 words (the 16 k steps' B fragments) to registers, __syncwarp,
# lane 0 frees the tile, then the mmas (165 registers, 384 threads at most); mlp.cu with a
# __syncwarp before the consumers' named barrier (call 2's synccheck: mlp_kernel<2,8> reached it
# diverged). Checks side by side and untimed, then E4B timings old / new default / new mma.
B=.carry/s40 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
CS="compute-sanitizer --error-exitcode 3"
P=""
timeout 300 $CS --tool racecheck $N/cuda_ops ops mlp > $T/rc_mlp.log 2>&1 & P="$P $!"
timeout 300 $CS --tool synccheck $N/cuda_ops ops mlp > $T/sync_mlp.log 2>&1 & P="$P $!"
timeout 330 $CS --tool racecheck $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P="$P $!"
timeout 330 $CS --tool memcheck $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P="$P $!"
timeout 330 $CS --tool synccheck $N/cuda_ops ops small > $T/synccheck.log 2>&1 & P="$P $!"
timeout 330 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 330 \
    scripts/test_gpu.sh > $T/test235.txt 2>&1 & P="$P $!"
( python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
      > $T/make_mid.log 2>&1
  GEMMA_CUDA_MLP=mma timeout 200 $N/cuda_ops model /tmp/mid/model tests/engine/fixtures/a_ple_kvshare \
      tests/engine/fixtures/b_keqv_untied > $T/model_mma.txt 2>&1; echo "model mma rc $?"
  timeout 120 $N/cuda_ops model /tmp/mid/model > $T/model_dflt.txt 2>&1; echo "model dflt rc $?" ) & P="$P $!"
for p in $P; do wait $p; echo "pid rc $?"; done
el "checks done"
for f in rc_mlp sync_mlp racecheck memcheck synccheck; do
    echo "== $f: $(grep -c 'Race reported\|hazard detected\|Barrier error' $T/$f.log)"; tail -1 $T/$f.log | cut -c1-200; done
grep -o "Read access at [^ ]* in [^ ]*\|Write access at [^ ]* in [^ ]*\|Device Frame: [^(]*" \
    $T/racecheck.log $T/synccheck.log $T/rc_mlp.log $T/sync_mlp.log | sort | uniq -c | head -12
grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -8
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -8
grep -hE "FAIL|differ|bit for bit|GPU agrees|greedy" $T/model_mma.txt $T/model_dflt.txt | cut -c1-160 | head -12
rm -rf $T/tests/spec_*
cd $OUT && tar czf c3.tgz c3 && cd - > /dev/null
wait $PM; el "e4b model rc $?"
V="2 4 5 8"
for r in a b; do
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="old$r:" \
    timeout 60 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old_$r.txt 2>&1
el "verify old rc $?"; ms $T/verify_old_$r.txt
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="dflt$r:;mma$r:GEMMA_CUDA_MLP=mma" \
    timeout 90 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new_$r.txt 2>&1
el "verify new rc $?"; ms $T/verify_new_$r.txt
done
cd $OUT && tar czf c3.tgz c3
