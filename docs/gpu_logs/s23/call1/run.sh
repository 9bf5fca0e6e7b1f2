# session 23, call 1: a warp's attention positions loaded a batch at a time
# (GEMMA_CUDA_ATT_BATCH=1|2|4, an experiment; 1 = the one-ahead pipeline of before). The op test
# (bit-for-bit across batches); E4B decode / verify A/B/A/B in one process at 128 and 512 new
# tokens; the small model.
set -u
B=.carry/s23; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|batch|attention|all agree" $T/ops.txt | cut -c1-200 | head -24
wait $PM; el "model rc $?"
C="b1a:GEMMA_CUDA_ATT_BATCH=1;b4a:GEMMA_CUDA_ATT_BATCH=4;b2a:GEMMA_CUDA_ATT_BATCH=2;b1b:GEMMA_CUDA_ATT_BATCH=1;b4b:GEMMA_CUDA_ATT_BATCH=4;b2b:GEMMA_CUDA_ATT_BATCH=2"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_128.txt 2>&1; el "e4b 128 rc $?"; ms $T/e4b_128.txt
DECODE_PROFILE_CUSTOM="$C" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 512 > $T/e4b_512.txt 2>&1; el "e4b 512 rc $?"; ms $T/e4b_512.txt
DECODE_PROFILE_VERIFY="4" DECODE_PROFILE_CUSTOM="$C" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
DECODE_PROFILE_CUSTOM="s1:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=1;s4:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=4;s1b:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=1;s4b:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=4" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_split.txt 2>&1; el "e4b split rc $?"; ms $T/e4b_split.txt
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
