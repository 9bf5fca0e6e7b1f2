# session 13, call 6: the attention split kernel compiled per head width (new = HEAD) against a5d4466 (prev, call 5's build).
# Correctness of new: test_gpu.sh steps 2-3 and 5, memcheck + racecheck of the op test. Speed: E4B decode step, alternating
# processes, two rounds; the small model's engine bench at k = 0, 3, 4 (2 prompts x 512 tokens), new and prev.
set -u
B=.carry/s13c6; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; P=$B/prev; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:|attention" $T/test23.txt | cut -c1-200 | head -10
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 150 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical|SUMMARY" $T/test5.txt | head -6
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
for i in 1 2; do
  for v in prev new; do DECODE_PROFILE_CUSTOM="${v}:" timeout 40 $B/$v/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab_${v}_$i.txt 2>&1; done
  el "round $i: $(grep -h '"run"' $T/ab_prev_$i.txt $T/ab_new_$i.txt | sed 's/.*"run": "\([a-z_0-9]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
done
head -n 2 models/gemma4-tiny/eval/prompts_tune.jsonl > /tmp/p2.jsonl
for k in 0 3 4; do
  for v in prev new; do
    ENGINE_DEVICE=cuda NUM_SPECULATIVE_TOKENS=$k MAX_NEW_TOKENS=512 WARMUP_NUM_PROMPTS=1 timeout 60 $B/$v/engine bench models/gemma4-tiny --prompts /tmp/p2.jsonl > $T/tiny_${v}_k$k.json 2> $T/tiny_${v}_k$k.err
    echo "k=$k $v rc $?: $(tail -n 1 $T/tiny_${v}_k$k.json | python3 -c 'import json,sys; d=json.load(sys.stdin); print({k: d[k] for k in d if k in ("decode_tps","tps","output_hash")})' 2>&1 | cut -c1-200)"
  done
done
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
