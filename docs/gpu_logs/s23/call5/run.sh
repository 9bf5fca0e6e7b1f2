# session 23, call 5: narrow blocks (4 warps) as the default for decode launches whose matrices
# all take one warp a row and whose 8-warp blocks run more than one wave (GEMMA_CUDA_MV_BW unset;
# =8 the old blocks, =4 every such launch). memcheck / racecheck / the op test while the model is
# built; E4B and the small model alternating in one process; test_gpu.sh steps 2, 3, 5;
# bench/bench_gpu.sh.
set -u
B=.carry/s23; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|MV_BW|all agree" $T/ops.txt | cut -c1-200 | head -12
wait $PM; el "model rc $?"; wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -1 $T/memcheck.log; tail -1 $T/racecheck.log
C="auto_a:;w8a:GEMMA_CUDA_MV_BW=8;w4a:GEMMA_CUDA_MV_BW=4;auto_b:;w8b:GEMMA_CUDA_MV_BW=8;w4b:GEMMA_CUDA_MV_BW=4;auto_c:;w8c:GEMMA_CUDA_MV_BW=8"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_CUSTOM="auto_a:;w8a:GEMMA_CUDA_MV_BW=8;auto_b:;w8b:GEMMA_CUDA_MV_BW=8" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
GEMMA_CUDA_MV_BW=4 BENCH_MATVEC_SMALL=1 timeout 60 $N/cuda_ops bench-matvec > $T/bench_matvec_w4.txt 2>&1; el "bench-matvec w4 rc $?"
grep -E "^\| (gate|per-layer|head|lm)" $T/bench_matvec_w4.txt | cut -c1-120
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -12
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b_bench timeout 220 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench rc $?"
grep -E "our decode share|decode step, CUDA graphs|default settings again|engine decode tps" $T/bench/bench_gpu.md | head -8
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
