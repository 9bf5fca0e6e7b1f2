# session 40, call 2. new = mlp_mma.cu with the warp reconverged (__syncwarp) after each lane's
# wait for its own ring row and before the consumers' named barrier (call 1: synccheck named
# bar_consumers "divergent thread(s)", racecheck a WAR between gate/up's ring reads and the
# next fill). Checks side by side and untimed: racecheck/synccheck over the whole-MLP test,
# racecheck/memcheck/synccheck over the small op test, the full op test, the mid-sized model
# with GEMMA_CUDA_MLP=mma (and under racecheck); then E4B timings old / mma.
B=.carry/s40 CALL=c2; . docs/gpu_logs/common.sh
e4b_model
CS="compute-sanitizer --error-exitcode 3"
P=""
timeout 300 $CS --tool racecheck $N/cuda_ops ops mlp > $T/rc_mlp.log 2>&1 & P="$P $!"
timeout 300 $CS --tool synccheck $N/cuda_ops ops mlp > $T/sync_mlp.log 2>&1 & P="$P $!"
timeout 330 $CS --tool racecheck $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P="$P $!"
timeout 330 $CS --tool memcheck $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P="$P $!"
timeout 330 $CS --tool synccheck $N/cuda_ops ops small > $T/synccheck.log 2>&1 & P="$P $!"
timeout 330 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
( python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
      > $T/make_mid.log 2>&1
  GEMMA_CUDA_MLP=mma timeout 200 $N/cuda_ops model /tmp/mid/model tests/engine/fixtures/a_ple_kvshare \
      tests/engine/fixtures/b_keqv_untied > $T/model_mma.txt 2>&1; echo "model mma rc $?"
  GEMMA_CUDA_MLP=mma timeout 250 $CS --tool racecheck \
      $N/cuda_ops model /tmp/mid/model > $T/racecheck_mid.log 2>&1; echo "racecheck mid rc $?" ) & P="$P $!"
for p in $P; do wait $p; echo "pid rc $?"; done
el "checks done"
for f in rc_mlp sync_mlp racecheck memcheck synccheck racecheck_mid; do
    echo "== $f: $(grep -c 'Race reported\|hazard detected\|Barrier error' $T/$f.log)"; tail -1 $T/$f.log | cut -c1-200; done
grep -o "Read access at [^ ]* in [^ ]*\|Write access at [^ ]* in [^ ]*\|at [a-z_]*([^)]*)+0x[0-9a-f]* in [^ ]*" \
    $T/racecheck.log $T/synccheck.log $T/racecheck_mid.log | sort | uniq -c | head -12
grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -8
grep -E "FAIL|differ|bit for bit|GPU agrees|greedy" $T/model_mma.txt | cut -c1-160 | head -12
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
wait $PM; el "e4b model rc $?"
V="2 4 5 8"
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="old:" \
    timeout 60 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old.txt 2>&1
el "verify old rc $?"; ms $T/verify_old.txt
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="dflt:;mma:GEMMA_CUDA_MLP=mma" \
    timeout 90 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new.txt 2>&1
el "verify new rc $?"; ms $T/verify_new.txt
cd $OUT && tar czf c2.tgz c2
