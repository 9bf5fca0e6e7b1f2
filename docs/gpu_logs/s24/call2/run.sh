# session 24, call 2: the fused end of a layer with the race fixed, in three forms
# (GEMMA_CUDA_PLE=stage: weights copied to shared memory before the wait; direct: read in place
# after it; l2: asked of L2 before the wait, read in place) against the separate kernels (=0).
# The op test while the model is built; E4B and the small model alternating in one process;
# test_gpu.sh steps 2, 3, 5 with memcheck / racecheck of the small op test beside it.
set -u
B=.carry/s24; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|ple block|fused kernel|all agree" $T/ops.txt | cut -c1-220 | head -16
wait $PM; el "model rc $?"
C="sep_a:GEMMA_CUDA_PLE=0;stage_a:GEMMA_CUDA_PLE=stage;direct_a:GEMMA_CUDA_PLE=direct;l2_a:GEMMA_CUDA_PLE=l2;sep_b:GEMMA_CUDA_PLE=0;stage_b:GEMMA_CUDA_PLE=stage;direct_b:GEMMA_CUDA_PLE=direct;l2_b:GEMMA_CUDA_PLE=l2"
DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_CUSTOM="$C" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
timeout 330 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 330 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 200 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|greedy output|all GPU|identical;|nll" $T/test235.txt | cut -c1-160 | head -12
wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -2 $T/memcheck.log; tail -2 $T/racecheck.log; grep -E "differs|ple block" $T/memcheck.log $T/racecheck.log | head -5
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
