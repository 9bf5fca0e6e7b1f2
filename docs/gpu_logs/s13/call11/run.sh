# session 13, call 11 (final): HEAD. Correctness: test_gpu.sh steps 1-3 and 5, memcheck + racecheck of the op test (with
# the two-rows kernel at every size, variant ROWS_MIN=0). Speed: verify passes of n rows on E4B and the small model
# (default against GEMMA_CUDA_MV_ROWS=1), and the small model's speculative bench (4 prompts x 512 tokens, k = 0..8).
set -u
B=.carry/s13c11; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c11; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:|variant|expected" $T/test123.txt | cut -c1-200 | head -14
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 150 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical|SUMMARY" $T/test5.txt | head -6
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
summ() { python3 -c '
import json,sys
out=[]
for l in sys.stdin:
    d=json.loads(l)
    out.append("%s step %.4f" % (d["run"], d["ms_per_step"]) if "ms_per_step" in d else "n%d %.3f(%.2f)" % (d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))
print(" ".join(out))'; }
for m in e4b tiny; do
  dir=/tmp/e4b/model; [ $m = tiny ] && dir=models/gemma4-tiny
  DECODE_PROFILE_VERIFY="2 3 4 5 8" DECODE_PROFILE_CUSTOM="default:;rows1:GEMMA_CUDA_MV_ROWS=1" timeout 90 $N/cuda_ops decode-profile $dir 256 64 > $T/${m}_verify.txt 2>&1
  el "$m rc $?: $(grep -h '"run"' $T/${m}_verify.txt | summ)"
done
GPU_BIN_DIR=$N GIT_REV=$(cat $B/rev) PROMPTS=4 NEW_TOKENS=512 REPEATS=1 WARMUP=1 OUT=$T/spec.md timeout 200 bench/bench_spec_gpu.sh > $T/spec.log 2>&1; el "spec rc $?"
grep -E "^\| [0-9] \|" $T/spec.md | cut -d'|' -f2-10
cd $OUT && tar czf c11.tgz c11 && rm -rf c11
