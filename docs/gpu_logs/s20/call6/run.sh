# session 20, call 6: bench/bench_spec_gpu.sh on the small model with its assistant (4 prompts x
# 256 new tokens, one run per k), attention in clusters (the default on sm_90) and split.
set -u
B=.carry/s20; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
for a in cluster split; do
  GEMMA_CUDA_ATTN=$a GPU_BIN_DIR=$N PROMPTS=4 NEW_TOKENS=256 REPEATS=1 OUT=$T/spec_$a.md LOG_DIR=$T/spec_$a timeout 110 bench/bench_spec_gpu.sh > $T/spec_$a.log 2>&1; el "spec $a rc $?"
  grep -E "^\| *[0-9] \|" $T/spec_$a.md | head -9 | cut -c1-150
done
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
