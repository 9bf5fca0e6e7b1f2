# session 40, call 4. new = mlp_mma.cu taking a gate/up tile row by row exactly as mlp.cu's
# ring_take does - every lane waits for row r, lanes (r, t) copy their 32 words, __syncwarp,
# lane 0 frees row r - then the mmas (call 3's take, one wait per lane and one free for the
# tile, was still reported); mlp.cu back to main's (call 3's __syncwarp before its barrier left
# synccheck's verdict as it was). racecheck (analysis and hazard mode) and memcheck over the
# whole-MLP test, the op test's MLP rows, the mid-sized model with mma; E4B timings.
B=.carry/s40 CALL=c4; . docs/gpu_logs/common.sh
e4b_model
CS="compute-sanitizer --error-exitcode 3"
P=""
timeout 240 $CS --tool racecheck $N/cuda_ops ops mlp > $T/rc_mlp.log 2>&1 & P="$P $!"
timeout 240 $CS --tool racecheck --kernel-name kns=mlp_mma --racecheck-report hazard --print-limit 40 \
    $N/cuda_ops ops mlp > $T/rc_hazard.log 2>&1 & P="$P $!"
timeout 240 $CS --tool memcheck $N/cuda_ops ops mlp > $T/memcheck_mlp.log 2>&1 & P="$P $!"
timeout 100 $N/cuda_ops ops mlp > $T/ops_mlp.txt 2>&1 & P="$P $!"
( python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
      > $T/make_mid.log 2>&1
  GEMMA_CUDA_MLP=mma timeout 200 $N/cuda_ops model /tmp/mid/model tests/engine/fixtures/a_ple_kvshare \
      tests/engine/fixtures/b_keqv_untied > $T/model_mma.txt 2>&1; echo "model mma rc $?" ) & P="$P $!"
for p in $P; do wait $p; echo "pid rc $?"; done
el "checks done"
for f in rc_mlp rc_hazard memcheck_mlp; do
    echo "== $f: $(grep -c 'Race reported\|hazard detected' $T/$f.log)"; tail -1 $T/$f.log | cut -c1-200; done
grep -o "Read access at [^ ]* in [^ ]*\|Write access at [^ ]* in [^ ]*" $T/rc_mlp.log | sort | uniq -c | head -6
grep -E "hazard detected|Thread" $T/rc_hazard.log | head -12 | cut -c1-160
grep -hE "FAIL|differ|all agree|bit for bit|GPU agrees|greedy" $T/ops_mlp.txt $T/model_mma.txt | cut -c1-160 | head -12
cd $OUT && tar czf c4.tgz c4 && cd - > /dev/null
wait $PM; el "e4b model rc $?"
V="2 4 5 8"
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="old:" \
    timeout 60 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old.txt 2>&1
el "verify old rc $?"; ms $T/verify_old.txt
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="dflt:;mma:GEMMA_CUDA_MLP=mma" \
    timeout 90 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new.txt 2>&1
el "verify new rc $?"; ms $T/verify_new.txt
cd $OUT && tar czf c4.tgz c4
