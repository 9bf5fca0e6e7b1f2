# session 42, call 2. old = main (676c494's kernels); new = old plus GEMMA_CUDA_MLP_GRID=N (the
# whole-MLP kernels launched as N blocks instead of one a multiprocessor; launcher only).
# 1. The grid, old beside new, two rounds: mma's block takes a whole multiprocessor's registers
#    (165 x 384), as do the CUDA cores' forms of 5-8 inputs (168 in the 8-input form), so the
#    block that lands where the one-block norm_add_norm kernel before it runs cannot start early
#    under PDL and fill its ring; with 131 blocks none needs that multiprocessor.
# 2. bench/bench_gpu.sh with main's binaries (the README's figures row still cites session 39's
#    run), its model built first (the same command as the script's) so that step 1 can use it.
# 3. Nsight Compute's full set on one decode step's whole-MLP kernel of each form, alone (ncu
#    serialises kernels): is mma slower by itself (44 us a layer against 37.5 in session 39's
#    timelines), or only beside its neighbours?
B=.carry/s42 CALL=c2; . docs/gpu_logs/common.sh
PYTHONUNBUFFERED=1 python3 tools/make_e4b_random.py /tmp/e4b_bench --prompts 2 --prompt-len 256 \
    --hf-new-tokens 32 > $T/make.log 2>&1; el "model rc $?"
ln -sfn /tmp/e4b_bench /tmp/e4b
for r in a b; do
    VERIFY="2 5 8" versus $r "dflt$r:;g131$r:GEMMA_CUDA_MLP_GRID=131;mma$r:GEMMA_CUDA_MLP=mma;mg131$r:GEMMA_CUDA_MLP=mma GEMMA_CUDA_MLP_GRID=131;mg130$r:GEMMA_CUDA_MLP=mma GEMMA_CUDA_MLP_GRID=130"
done
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
# If mma's plain step is 1 % faster with 131 blocks: the checks a landing needs, with the switch.
mean() { grep -h "\"run\": \"$1" $T/verify_new_[ab].txt | python3 -c '
import json,sys; v=[json.loads(l)["ms_per_step"] for l in sys.stdin if "ms_per_step" in l]; print(sum(v)/len(v))'; }
if python3 -c "import sys; sys.exit(0 if $(mean mg131) < 0.99 * $(mean mma) else 1)"; then
    el "mg131 pays: checks"
    GEMMA_CUDA_MLP=mma GEMMA_CUDA_MLP_GRID=131 timeout 150 $N/cuda_ops ops > $T/ops_g131.txt 2>&1
    el "ops rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_g131.txt | cut -c1-200 | head -6
    GEMMA_CUDA_MLP=mma GEMMA_CUDA_MLP_GRID=131 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" \
        LOG_DIR=$T/tests timeout 200 scripts/test_gpu.sh > $T/test235_g131.txt 2>&1
    el "steps 2 3 5 rc $?"; grep -E "FAIL|greedy output|all GPU|identical;" $T/test235_g131.txt | cut -c1-160 | head -8
    rm -rf $T/tests
    cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
fi
GPU_BIN_DIR=$B/old WORK_DIR=/tmp/e4b_bench timeout 300 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1
el "bench rc $?"
grep -E "share of the floor|decode step, CUDA graphs|engine decode tps|engine prefill|transformers|^\| CUDA cores|^\| tensor cores|^\| the whole|^\| both" $T/bench/bench_gpu.md | head -16
gzip -f $T/bench/*.csv $T/bench/*.err 2>/dev/null
cd $OUT && tar czf c2.tgz c2 && cd - > /dev/null
for f in dflt:mlp_kernel mma:mlp_mma_kernel; do
    l=${f%%:*} k=${f#*:}
    DECODE_PROFILE_CUSTOM="ncu:$([ $l = mma ] && echo GEMMA_CUDA_MLP=mma)" DECODE_PROFILE_NCU=1 \
        timeout 100 ncu --profile-from-start off --graph-profiling node --cache-control none \
        --clock-control none --kernel-name regex:"^$k" --launch-skip 10 --launch-count 1 --set full \
        $B/old/cuda_ops decode-profile /tmp/e4b_bench/model 256 1 > $T/ncu_$l.txt 2>&1
    el "ncu $l rc $?"
    grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible" $T/ncu_$l.txt | head -10
done
cd $OUT && tar czf c2.tgz c2
