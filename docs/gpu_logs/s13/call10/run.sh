# session 13, call 10: two rows a warp for products of 2 .. 8 inputs (new = HEAD, GEMMA_CUDA_MV_ROWS=2 by default).
# Correctness: test_gpu.sh steps 2-3 (ops incl. the ROWS=1 variant, fixtures, the verify chunk bit for bit against the
# steps) and 5 (k = 1..8 lossless), memcheck + racecheck of the op test. Speed: verify passes of n rows on E4B and the
# small model, rows2 (default) against rows1 (GEMMA_CUDA_MV_ROWS=1, the general kernel), two rounds; small model spec k = 0, 3, 4.
set -u
B=.carry/s13c10; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c10; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:|variant|chunk|expected" $T/test23.txt | cut -c1-200 | head -14
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 150 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical|SUMMARY" $T/test5.txt | head -6
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
export DECODE_PROFILE_VERIFY="2 3 4 5 8 9"
summ() { python3 -c '
import json,sys
out=[]
for l in sys.stdin:
    d=json.loads(l)
    out.append("%s step %.4f" % (d["run"], d["ms_per_step"]) if "ms_per_step" in d else "n%d %.3f(%.2f)" % (d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))
print(" ".join(out))'; }
for i in 1 2; do
  for m in e4b tiny; do
    dir=/tmp/e4b/model; [ $m = tiny ] && dir=models/gemma4-tiny
    DECODE_PROFILE_CUSTOM="rows2:;rows1:GEMMA_CUDA_MV_ROWS=1" timeout 90 $N/cuda_ops decode-profile $dir 256 64 > $T/${m}_$i.txt 2>&1
    el "$m round $i rc $?: $(grep -h '"run"' $T/${m}_$i.txt | summ)"
  done
done
unset DECODE_PROFILE_VERIFY
head -n 2 models/gemma4-tiny/eval/prompts_tune.jsonl > /tmp/p2.jsonl
for k in 0 3 4; do
  ENGINE_DEVICE=cuda NUM_SPECULATIVE_TOKENS=$k MAX_NEW_TOKENS=512 WARMUP_NUM_PROMPTS=1 timeout 60 $N/engine bench models/gemma4-tiny --prompts /tmp/p2.jsonl > $T/tiny_k$k.json 2> $T/tiny_k$k.err
  echo "k=$k rc $?: $(tail -n 1 $T/tiny_k$k.json | python3 -c 'import json,sys; d=json.load(sys.stdin); print({k: d[k] for k in d if k in ("decode_tps","tps","output_hash")})' 2>&1 | cut -c1-200)"
done
cd $OUT && tar czf c10.tgz c10 && rm -rf c10
