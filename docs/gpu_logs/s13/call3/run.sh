# session 13, call 3: verify steps (up to 16 tokens) captured in CUDA graphs (HEAD = new) against ea92357 (prev).
# Correctness of new: test_gpu.sh steps 2-3 (ops, fixtures, small model incl. the 5-token chunk eager / captured / replayed
# at two positions) and step 5 (k = 1..8 serve plain greedy's tokens), memcheck of the op test; then the small model's
# speculative bench, new and prev, same settings as last session's call 5 (PROMPTS=2 NEW_TOKENS=128 REPEATS=1).
set -u
B=.carry/s13c3; (cd $B && tar xzf bins.tgz); (cd .carry/s13c2 && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; P=.carry/s13c2/prev; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:|chunk|graphs:" $T/test23.txt | cut -c1-220 | head -12
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 150 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical|SUMMARY" $T/test5.txt | head -6
wait $P1; el "memcheck rc $?"; tail -n 1 $T/memcheck.log
for v in new prev; do
  d=$N; [ $v = prev ] && d=$P
  GPU_BIN_DIR=$d PROMPTS=2 NEW_TOKENS=128 REPEATS=1 WARMUP=1 OUT=$T/spec_$v.md timeout 100 bench/bench_spec_gpu.sh > $T/spec_$v.log 2>&1; el "spec $v rc $?"
  grep -E "^\| [0-9] \|" $T/spec_$v.md | cut -d'|' -f2-10
done
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
