# session 23, call 2: attention positions a batch at a time, now the default (4).
# memcheck / racecheck of the op test (small shapes) while the model is built; then E4B decode /
# verify with batches 1, 4 and 42 (4, or 2 for the 512-wide heads) alternating in one process,
# both attention forms, 128 and 512 new tokens; the small model; test_gpu.sh steps 2, 3 and 5.
set -u
B=.carry/s23; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P1; el "memcheck rc $?"; wait $P2; el "racecheck rc $?"
tail -2 $T/memcheck.log; tail -2 $T/racecheck.log
C="b1a:GEMMA_CUDA_ATT_BATCH=1;b4a:GEMMA_CUDA_ATT_BATCH=4;m42a:GEMMA_CUDA_ATT_BATCH=42;b1b:GEMMA_CUDA_ATT_BATCH=1;b4b:GEMMA_CUDA_ATT_BATCH=4;m42b:GEMMA_CUDA_ATT_BATCH=42"
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$C" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_128.txt 2>&1; el "e4b 128 rc $?"; ms $T/e4b_128.txt
DECODE_PROFILE_CUSTOM="$C" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 512 > $T/e4b_512.txt 2>&1; el "e4b 512 rc $?"; ms $T/e4b_512.txt
S="s1a:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=1;s4a:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=4;s42a:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=42;s1b:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=1;s4b:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=4;s42b:GEMMA_CUDA_ATTN=split GEMMA_CUDA_ATT_BATCH=42"
DECODE_PROFILE_VERIFY="4" DECODE_PROFILE_CUSTOM="$S" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 512 > $T/e4b_split.txt 2>&1; el "e4b split rc $?"; ms $T/e4b_split.txt
DECODE_PROFILE_VERIFY="4" DECODE_PROFILE_CUSTOM="$C" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|greedy output|all GPU|identical;" $T/test235.txt | cut -c1-160 | head -12
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
