# session 16, call 7: the benchmark (bench/bench_gpu.sh) on the final kernels (groups auto).
set -u
B=.carry/s16; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c7; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
GPU_BIN_DIR=$N timeout 480 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench_gpu rc $?"
grep -E "copy bandwidth|engine decode tps|share of the floor|CUDA graphs \(|transformers .* decode tps|our decode speed" $T/bench/bench_gpu.md | cut -c1-200
rm -f $T/bench/*.csv
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
