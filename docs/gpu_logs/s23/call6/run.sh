# session 23, call 6: the final code (GEMMA_CUDA_MV_BLOCK_WARPS as a tuning switch read with the
# others; the kernels are call 5's). The op test (its variants =8 and =2 against the default,
# bit for bit) while the model is built; E4B auto against =8, alternating in one process.
set -u
B=.carry/s23; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|BLOCK_WARPS|all agree" $T/ops.txt | cut -c1-200 | head -12
grep -m1 "^cuda:" $T/ops.txt | cut -c1-250
wait $PM; el "model rc $?"
C="auto_a:;w8a:GEMMA_CUDA_MV_BLOCK_WARPS=8;auto_b:;w8b:GEMMA_CUDA_MV_BLOCK_WARPS=8;auto_c:;w8c:GEMMA_CUDA_MV_BLOCK_WARPS=8"
DECODE_PROFILE_CUSTOM="$C" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
