# lead call 4: HEAD c597a6d (new: one-wave split-K, pipelined attention, one-round-trip norm_add_norm) against e981197 (base), both sm_90-only builds.
# Correctness of new: test_gpu.sh steps 1-3, memcheck + racecheck of the op test (small shapes); then E4B step times alternating base / new, new with the old split rule, bench-matvec, ncu per-kernel times of one step.
set -u
(cd .carry/lead4 && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/.carry/lead4:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=.carry/lead4/new; O=.carry/lead4/base; T=$OUT/lead4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|greedy|identical|differ" $T/test123.txt | head -12
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
for i in 1 2; do
  DECODE_PROFILE_CUSTOM="base_def:" timeout 40 $O/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_base_$i.txt 2>&1
  DECODE_PROFILE_CUSTOM="new_def:;new_split8:GEMMA_CUDA_MV_SPLIT=8" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_new_$i.txt 2>&1
  el "round $i: $(grep -h '"run"' $T/e4b_base_$i.txt $T/e4b_new_$i.txt | sed 's/.*"run": "\([a-z_0-9]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
done
DECODE_PROFILE_RUNS=graphs,graphs_no_pdl,graphs_no_fusion,profiled timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_new_variants.txt 2>&1; el "variants rc $?"
grep -h '"run"' $T/e4b_new_variants.txt | sed 's/.*"run": "\([a-z_0-9]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' '; echo
timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"
DECODE_PROFILE_CUSTOM="new_def:" timeout 150 ncu --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread --csv --launch-skip 6600 --launch-count 700 $N/cuda_ops decode-profile /tmp/e4b/model 256 2 > $T/ncu_step_warm.csv 2> $T/ncu_step_warm.err; el "ncu rc $?"
cd $OUT && tar czf lead4.tgz lead4 && rm -rf lead4
