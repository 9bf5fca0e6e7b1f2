# session 24, call 1: the end of a layer as one cluster kernel (ple.cu, GEMMA_CUDA_PLE=auto|0)
# and an experiment, GEMMA_CUDA_MV_BLOCK_WARPS=4 also for split launches. The op test (with the
# new ple check) and memcheck / racecheck of the small op test while the model is built; E4B
# alternating fused / separate in one process; the small model; where the step goes without
# the fused kernel; test_gpu.sh steps 2, 3, 5.
set -u
B=.carry/s24; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|ple|fused kernel|all agree" $T/ops.txt | cut -c1-220 | head -16
wait $PM; el "model rc $?"
C="ple_a:;sep_a:GEMMA_CUDA_PLE=0;ple_b:;sep_b:GEMMA_CUDA_PLE=0;bw4_a:GEMMA_CUDA_MV_BLOCK_WARPS=4;ple_c:;bw4_b:GEMMA_CUDA_MV_BLOCK_WARPS=4"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt; grep -E "cuda:|error|rror" $T/e4b.txt | head -3 | cut -c1-300
DECODE_PROFILE_CUSTOM="ple_a:;sep_a:GEMMA_CUDA_PLE=0;ple_b:;sep_b:GEMMA_CUDA_PLE=0" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -2 $T/memcheck.log; tail -2 $T/racecheck.log
DECODE_PROFILE_CUSTOM="ple:;skip_ple:DECODE_PROFILE_SKIP=ple;sep:GEMMA_CUDA_PLE=0;skip_sep_normadd:GEMMA_CUDA_PLE=0 DECODE_PROFILE_SKIP=normadd" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_skip.txt 2>&1; el "skip rc $?"; ms $T/e4b_skip.txt
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|greedy output|all GPU|identical;|nll" $T/test235.txt | cut -c1-160 | head -12
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
