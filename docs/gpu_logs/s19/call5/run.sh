# session 19, call 5: the final code - bench/bench_gpu.sh (the headline with the default
# switches, and the verify-cost table: CUDA cores, tensor cores with x exact (=1) and to 16 bits
# (=2)), and bench/bench_spec_gpu.sh on the small model three ways (4 prompts x 256 tokens, one
# run per k).
set -u
B=.carry/s19; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 420 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench_gpu rc $?"
grep -E "copy bandwidth|engine decode tps|share of the floor|CUDA graphs \(|transformers .* decode tps|our decode speed|^\| (CUDA|tensor)" $T/bench/bench_gpu.md | cut -c1-220
rm -f $T/bench/*.csv
for m in 0 1 2; do
  GEMMA_CUDA_MV_MMA=$m GPU_BIN_DIR=$N PROMPTS=4 NEW_TOKENS=256 REPEATS=1 OUT=$T/spec_mma$m.md LOG_DIR=$T/spec_mma$m timeout 100 bench/bench_spec_gpu.sh > $T/spec_mma$m.log 2>&1; el "spec mma $m rc $?"
  grep -E "^\| *[0-9] \|" $T/spec_mma$m.md | head -9 | cut -c1-150
done
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
