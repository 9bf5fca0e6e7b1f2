# session 13, call 12: matvec_rows_kernel takes up to 8 inputs in one pass, and 4 rows a warp on request (HEAD).
# Correctness: test_gpu.sh steps 2-3 and 5, memcheck of the op test (variants ROWS_MIN=0 and ROWS=4 at every size).
# Speed: E4B verify passes of n rows: default (2 rows a warp), GEMMA_CUDA_MV_ROWS=4, GEMMA_CUDA_MV_ROWS=1 (general kernel).
set -u
B=.carry/s13c12; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c12; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 3 $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 100 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "^ops:|FAIL|greedy output|variant GEMMA_CUDA_MV_ROWS|expected" $T/test23.txt | cut -c1-200 | head -10
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 100 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|identical" $T/test5.txt | head -5
wait $P1; el "memcheck rc $?"; tail -n 1 $T/memcheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
DECODE_PROFILE_VERIFY="2 4 5 8" DECODE_PROFILE_CUSTOM="default:;rows4:GEMMA_CUDA_MV_ROWS=4;rows1:GEMMA_CUDA_MV_ROWS=1" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 32 > $T/e4b_verify.txt 2>&1
el "e4b rc $?: $(grep -h '"run"' $T/e4b_verify.txt | python3 -c '
import json,sys
out=[]
for l in sys.stdin:
    d=json.loads(l)
    out.append("%s step %.4f" % (d["run"], d["ms_per_step"]) if "ms_per_step" in d else "n%d %.3f(%.2f)" % (d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))
print(" ".join(out))')"
cd $OUT && tar czf c12.tgz c12 && rm -rf c12
