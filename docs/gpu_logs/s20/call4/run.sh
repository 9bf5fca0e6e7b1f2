# session 20, call 4: the final cluster form (clusters of 8, 16 / 8 warps a block, rings of at
# most 16 positions a warp; the default on sm_90) against the split form in the same build: E4B
# decode and verify at a 256-token prompt, decode at 700 (full layers' ring ~780: cluster) and
# 2048 (full layers' ring ~2120: split), the small model; then test_gpu.sh steps 1-5.
set -u
B=.carry/s20; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-12s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-12s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
ab() { # name model prompt steps verify
  for r in 1 2; do
    DECODE_PROFILE_VERIFY="$5" DECODE_PROFILE_CUSTOM="split_$r:GEMMA_CUDA_ATTN=split;clus_$r:" timeout 100 $N/cuda_ops decode-profile $2 $3 $4 > $T/$1_$r.txt 2>&1
  done; el "$1"; ms $T/$1_1.txt $T/$1_2.txt; }
ab e4b256 /tmp/e4b/model 256 64 "2 4 8"
ab e4b700 /tmp/e4b/model 700 64 ""
ab e4b2048 /tmp/e4b/model 2048 64 ""

ab tiny models/gemma4-tiny 256 256 "2 4 8"
grep -h "cuda:" $T/e4b256_1.txt | cut -c200-400 | sort -u
GPU_BIN_DIR=$N KEEP_GOING=1 SAN_TIMEOUT=150 LOG_DIR=$T/tests timeout 430 scripts/test_gpu.sh > $T/test_all.txt 2>&1; el "steps 1-5 rc $?"
grep -E "FAIL|differs|greedy output|all GPU|ERROR SUMMARY|RACECHECK SUMMARY|^=== " $T/test_all.txt | cut -c1-160 | head -30
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
