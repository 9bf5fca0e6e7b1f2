# session 39, call 1. old = main (3a0e75c); new = old + mlp_mma.cu, the whole MLP on the tensor
# cores (GEMMA_CUDA_MLP=mma; the default stays the CUDA cores, whose code is unchanged: same PTX).
# First, untimed and side by side on new: racecheck and memcheck over the small op test (both
# MLP forms), the full op test, and with GEMMA_CUDA_MLP=mma the fixtures and the mid-sized twin
# against the CPU (its 5-token chunks must reproduce its steps bit for bit). Then, alone: the
# E4B decode step and verify passes over 2 .. 8, 16 and 64 rows, old / new / new with mma, twice.
B=.carry/s39 CALL=c1; . docs/gpu_logs/common.sh
e4b_model
P=""
timeout 330 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P="$P $!"
timeout 330 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P="$P $!"
timeout 330 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
( python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
      > $T/make_mid.log 2>&1
  GEMMA_CUDA_MLP=mma timeout 200 $N/cuda_ops model /tmp/mid/model tests/engine/fixtures/a_ple_kvshare \
      tests/engine/fixtures/b_keqv_untied > $T/model_mma.txt 2>&1; echo "model mma rc $?" ) & P="$P $!"
for p in $P; do wait $p; echo "pid rc $?"; done
el "checks done"
grep -E "FAIL|differ|all agree|expected|whole MLP" $T/ops.txt | cut -c1-200 | head -12
grep -c "Race reported" $T/racecheck.log; tail -1 $T/racecheck.log | cut -c1-200
grep -E "whole MLP" $T/racecheck.log $T/memcheck.log | head -4
tail -1 $T/memcheck.log | cut -c1-200
grep -E "FAIL|differ|max|bit for bit|ok" $T/model_mma.txt | cut -c1-200 | head -12
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c1.tgz c1 && cd - > /dev/null
for round in a b; do
    DECODE_PROFILE_VERIFY="2 3 4 5 6 7 8 16 64" DECODE_PROFILE_CUSTOM="old$round:" \
        timeout 60 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old_$round.txt 2>&1
    el "verify old $round rc $?"; ms $T/verify_old_$round.txt
    DECODE_PROFILE_VERIFY="2 3 4 5 6 7 8 16 64" DECODE_PROFILE_CUSTOM="new$round:;mma$round:GEMMA_CUDA_MLP=mma" \
        timeout 90 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new_$round.txt 2>&1
    el "verify new $round rc $?"; ms $T/verify_new_$round.txt
done
traced mma1 GEMMA_CUDA_MLP=mma
cd $OUT && tar czf c1.tgz c1
