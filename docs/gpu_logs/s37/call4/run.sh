# session 37, call 4: the code landed (S2 of call 3: main's 2-input rows forms + the MLP reducer
# warp behind bar.sync, a slot of h a block). test_gpu.sh steps 3 and 5 alone (call 3 ran them
# beside seven other processes and its time limit cut step 3), then bench/bench_gpu.sh.
B=.carry/s37 CALL=c4; . docs/gpu_logs/common.sh
N=$B/S2
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="3 5" LOG_DIR=$T/tests timeout 200 \
    scripts/test_gpu.sh > $T/test35.txt 2>&1; el "steps 3 5 rc $?"
grep -E "FAIL|greedy output|all GPU|identical;" $T/test35.txt | cut -c1-160 | head -8
rm -rf $T/tests
cd $OUT && tar czf c4.tgz c4 && cd - > /dev/null
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 300 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|engine decode tps|engine prefill|transformers|^\| CUDA cores|^\| tensor cores" $T/bench/bench_gpu.md | head -14
rm -rf /tmp/e4b_bench
cd $OUT && tar czf c4.tgz c4
