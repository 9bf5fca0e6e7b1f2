# session 24, call 3 (the fused end of a layer taken out): three experiments in one process
# each - GEMMA_CUDA_MV_BLOCK_WARPS=4 now also for launches that split rows in two (down, o,
# q + k + v), EXP_NORM_PER=4 / 8 (norm_add_norm in 640 / 320 threads instead of 1024), and
# EXP_ATT_NB2 (the split form's 256-wide heads two positions a batch). Before them: the op test
# (its =4 and =2 variants now reach split launches) with memcheck and racecheck of the small one
# and the model build. After: test_gpu.sh step 5 with GEMMA_CUDA_GEMM=auto (lossless?).
set -u
B=.carry/s24; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c3; mkdir -p $T
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
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|BLOCK_WARPS|all agree" $T/ops.txt | cut -c1-200 | head -12
wait $PM; el "model rc $?"; wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -1 $T/memcheck.log; tail -1 $T/racecheck.log
C="auto_a:;bw4_a:GEMMA_CUDA_MV_BLOCK_WARPS=4;per4_a:EXP_NORM_PER=4;per8_a:EXP_NORM_PER=8;auto_b:;bw4_b:GEMMA_CUDA_MV_BLOCK_WARPS=4;per4_b:EXP_NORM_PER=4;per8_b:EXP_NORM_PER=8;auto_c:;bw4_c:GEMMA_CUDA_MV_BLOCK_WARPS=4"
DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
C="s4_a:GEMMA_CUDA_ATTN=split;s2_a:GEMMA_CUDA_ATTN=split EXP_ATT_NB2=1;s4_b:GEMMA_CUDA_ATTN=split;s2_b:GEMMA_CUDA_ATTN=split EXP_ATT_NB2=1"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_split.txt 2>&1; el "split rc $?"; ms $T/e4b_split.txt
DECODE_PROFILE_CUSTOM="auto_a:;per4_a:EXP_NORM_PER=4;bw4_a:GEMMA_CUDA_MV_BLOCK_WARPS=4;auto_b:;per4_b:EXP_NORM_PER=4;bw4_b:GEMMA_CUDA_MV_BLOCK_WARPS=4" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
GEMMA_CUDA_GEMM=auto GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="5" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test5_gemm_auto.txt 2>&1; el "step 5 (GEMM=auto) rc $?"
grep -E "FAIL|identical;|cuBLAS|matmul" $T/test5_gemm_auto.txt | cut -c1-200 | head -8; grep -h "matmul" $T/tests/spec_plain_k1.err | head -1 | cut -c1-300
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
