# lead call 5 (final): HEAD 05c7098 (new) - correctness (test_gpu.sh steps 1-3 and 5, memcheck + racecheck of the op test),
# the issue's benchmark (bench/bench_gpu.sh), E4B step A/B against c597a6d (prev), ncu per-kernel times of one step, and the small model's speculative bench.
set -u
(cd .carry/lead5 && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/.carry/lead5:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=.carry/lead5/new; P=.carry/lead5/prev; T=$OUT/lead5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:" $T/test123.txt | head -8
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 120 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical|SUMMARY" $T/test5.txt | head -6
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
GPU_BIN_DIR=$N timeout 300 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench_gpu rc $?"
grep -E "share|floor|decode step|transformers" $T/bench/bench_gpu.md | head -12
for i in 1 2; do
  for v in prev new; do DECODE_PROFILE_CUSTOM="${v}:" timeout 40 .carry/lead5/$v/cuda_ops decode-profile /tmp/e4b-random/model 256 128 > $T/ab_${v}_$i.txt 2>&1; done
  el "round $i: $(grep -h '"run"' $T/ab_prev_$i.txt $T/ab_new_$i.txt | sed 's/.*"run": "\([a-z_0-9]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
done
DECODE_PROFILE_CUSTOM="new:" timeout 120 ncu --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread --csv --launch-skip 6600 --launch-count 700 $N/cuda_ops decode-profile /tmp/e4b-random/model 256 2 > $T/ncu_step_warm.csv 2> $T/ncu_step_warm.err; el "ncu rc $?"
GPU_BIN_DIR=$N PROMPTS=2 NEW_TOKENS=128 REPEATS=1 WARMUP=1 OUT=$T/spec.md timeout 60 bench/bench_spec_gpu.sh > $T/spec.log 2>&1; el "spec rc $?"; grep -E "^\| [0-9] \|" $T/spec.md | cut -c1-100
cd $OUT && tar czf lead5.tgz lead5 && rm -rf lead5
