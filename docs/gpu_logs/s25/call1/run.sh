# session 25, call 1: HEAD (8158f1e) on the GPU - the op test (k_rmsnorm in norm_threads, the fused
# o against the lone norm bit for bit), then bench/bench_gpu.sh for the headline.
B=.carry/s25 CALL=c1; . docs/gpu_logs/common.sh
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|all agree" $T/ops.txt | cut -c1-200 | head -12
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 380 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs" $T/bench/bench_gpu.md | head -4
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
