# session 39, call 2. old = main (3a0e75c); new = call 1's mlp_mma.cu with batches of 8 or 16
# indices a barrier (GEMMA_CUDA_MLP_MMA_B, an experiment's switch; 16 unless set; tiles of 8 rows
# either way, the same bits), the gate / up weight fragments as plain 32-bit loads (call 1's
# racecheck flagged their ldmatrix against the ring's bulk copies, not the down's ldmatrix.trans)
# and rings of 16 - 24 stages (call 1: 16 for 7 and 8 inputs). Checks untimed and side by side,
# then the E4B timings alone.
B=.carry/s39 CALL=c2; . docs/gpu_logs/common.sh
e4b_model
P=""
timeout 330 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P="$P $!"
GEMMA_CUDA_MLP_MMA_B=8 timeout 330 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck8.log 2>&1 & P="$P $!"
timeout 330 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P="$P $!"
timeout 330 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
( python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
      > $T/make_mid.log 2>&1
  GEMMA_CUDA_MLP=mma timeout 200 $N/cuda_ops model /tmp/mid/model tests/engine/fixtures/a_ple_kvshare \
      > $T/model_mma.txt 2>&1; echo "model mma rc $?"
  GEMMA_CUDA_MLP_MMA_B=8 GEMMA_CUDA_MLP=mma timeout 200 $N/cuda_ops model /tmp/mid/model \
      > $T/model_mma8.txt 2>&1; echo "model mma8 rc $?" ) & P="$P $!"
for p in $P; do wait $p; echo "pid rc $?"; done
el "checks done"
grep -E "FAIL|differ|all agree|expected|whole MLP" $T/ops.txt | cut -c1-200 | head -12
for f in racecheck racecheck8; do grep -c "Race reported" $T/$f.log; tail -1 $T/$f.log | cut -c1-200; done
grep -o "Read access at [a-z_0-9]*([^)]*)+0x[0-9a-f]*\|Write access at [a-z_0-9]*([^)]*)+0x[0-9a-f]*" $T/racecheck.log | sort | uniq -c | head
tail -1 $T/memcheck.log | cut -c1-200
grep -E "FAIL|differ|bit for bit|GPU agrees" $T/model_mma*.txt | cut -c1-200 | head -12
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
V="2 3 4 5 6 7 8 16 64"
for round in a b; do
    DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="old$round:" \
        timeout 60 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old_$round.txt 2>&1
    el "verify old $round rc $?"; ms $T/verify_old_$round.txt
    DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="m16$round:GEMMA_CUDA_MLP=mma;m8$round:GEMMA_CUDA_MLP=mma GEMMA_CUDA_MLP_MMA_B=8" \
        timeout 90 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new_$round.txt 2>&1
    el "verify new $round rc $?"; ms $T/verify_new_$round.txt
done
traced m16 GEMMA_CUDA_MLP=mma
cd $OUT && tar czf c2.tgz c2
