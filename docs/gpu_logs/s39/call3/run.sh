# session 39, call 3. old = main (3a0e75c); new = mlp_mma.cu with batches of 16, each lane
# waiting for the ring row it reads (calls 1-2: every lane waiting for all 8 rows of a tile drew
# racecheck reports against the bulk copies), and up to 4 inputs one x-part tile a k step (hi,
# lo, mid of inputs 0-3 in rows 0-3, 4-7, 8-11). Checks untimed and side by side, then the E4B
# timings alone (old / mma / mma with the tensor-core products), then bench/bench_gpu.sh.
B=.carry/s39 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
P=""
timeout 330 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P="$P $!"
timeout 330 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P="$P $!"
timeout 330 $N/cuda_ops ops > $T/ops.txt 2>&1 & P="$P $!"
( python3 tools/make_e4b_random.py /tmp/mid --mid --prompts 1 --prompt-len 32 --hf-new-tokens 2 \
      > $T/make_mid.log 2>&1
  GEMMA_CUDA_MLP=mma timeout 200 $N/cuda_ops model /tmp/mid/model tests/engine/fixtures/a_ple_kvshare \
      tests/engine/fixtures/b_keqv_untied > $T/model_mma.txt 2>&1; echo "model mma rc $?"
  GEMMA_CUDA_MLP=mma timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 \
      $N/cuda_ops model /tmp/mid/model > $T/racecheck_mid.log 2>&1; echo "racecheck mid rc $?" ) & P="$P $!"
for p in $P; do wait $p; echo "pid rc $?"; done
el "checks done"
grep -E "FAIL|differ|all agree|expected" $T/ops.txt | cut -c1-200 | head -12
for f in racecheck racecheck_mid; do grep -c "Race reported" $T/$f.log; tail -1 $T/$f.log | cut -c1-200; done
grep -o "Read access at [^ ]* in [^ ]*\|Write access at [^ ]* in [^ ]*" $T/racecheck.log | sort | uniq -c | head
tail -1 $T/memcheck.log | cut -c1-200
grep -E "FAIL|differ|bit for bit|GPU agrees|greedy" $T/model_mma.txt | cut -c1-160 | head -12
wait $PM; el "e4b model rc $?"
cd $OUT && tar czf c3.tgz c3 && cd - > /dev/null
V="2 3 4 5 6 7 8 16 64"
for round in a b; do
    DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="old$round:" \
        timeout 60 $B/old/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old_$round.txt 2>&1
    el "verify old $round rc $?"; ms $T/verify_old_$round.txt
    DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="mma$round:GEMMA_CUDA_MLP=mma;all$round:GEMMA_CUDA_MLP=mma GEMMA_CUDA_MV_MMA=1" \
        timeout 90 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new_$round.txt 2>&1
    el "verify new $round rc $?"; ms $T/verify_new_$round.txt
done
traced mma GEMMA_CUDA_MLP=mma
cd $OUT && tar czf c3.tgz c3 && cd - > /dev/null
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 280 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|engine decode tps|engine prefill|transformers|^\| CUDA cores|^\| tensor cores|^\| the whole|^\| both" $T/bench/bench_gpu.md | head -16
cd $OUT && tar czf c3.tgz c3
