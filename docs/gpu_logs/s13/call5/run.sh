# session 13, call 5 (final): HEAD = new. Correctness: test_gpu.sh steps 1-3 (build check, ops incl. the L2 variants,
# fixtures + small model incl. the verify chunk eager / captured / replayed and the new graph-drop check) and step 5
# (k = 1..8 lossless, keepset and window), memcheck + racecheck of the op test; the graph-drop check against a mutant
# (nodrop: scratch() no longer drops the graphs - the check must fail); the small model's speculative bench at the
# size of the earlier full run (PROMPTS=4, 512 new tokens).
set -u
B=.carry/s13c5; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:|graphs dropped|variant .*L2" $T/test123.txt | cut -c1-200 | head -14
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 150 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical|SUMMARY" $T/test5.txt | head -6
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
timeout 60 $B/nodrop/cuda_ops model models/gemma4-tiny > $T/nodrop.txt 2>&1; el "nodrop mutant rc $? (want 1)"; grep -E "graph drop|graphs dropped|models:" $T/nodrop.txt | cut -c1-200
GPU_BIN_DIR=$N PROMPTS=4 NEW_TOKENS=512 REPEATS=1 WARMUP=1 OUT=$T/spec.md timeout 200 bench/bench_spec_gpu.sh > $T/spec.log 2>&1; el "spec rc $?"
grep -E "^\| [0-9] \|" $T/spec.md | cut -d'|' -f2-10
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
