# session 41, call 4. bench/bench_gpu.sh with main's binaries at bd80647 (every thread frees
# mlp.cu's ring stages, its barrier unaligned, GEMMA_CUDA_MLP=mma landed as a knob): the issue's
# benchmark, whose verify table now has the whole MLP on the tensor cores too.
B=.carry/s41 CALL=c4; . docs/gpu_logs/common.sh
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 250 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|engine decode tps|engine prefill|transformers|^\| CUDA cores|^\| tensor cores|^\| the whole|^\| both" $T/bench/bench_gpu.md | head -16
cd $OUT && tar czf c4.tgz c4
