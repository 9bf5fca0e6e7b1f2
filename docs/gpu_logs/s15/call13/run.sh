# session 15, call 13: attention as one cluster kernel (sm_90). test_gpu.sh steps 1-3 and 5,
# memcheck and racecheck of the small op test, then the step A/B (GEMMA_CUDA_ATT_CLUSTER=0 is the
# split + merge kernels) on E4B at 256 + 128 and 256 + 512 positions, and on the small model.
set -u
B=.carry/s15; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c13; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 240 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test123.txt | cut -c1-180 | head -8
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 150 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
wait $MK; el "$(tail -1 $T/make_e4b.log)"
C=GEMMA_CUDA_ATT_CLUSTER=0
show() { grep -h '"run"' $1 | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
DECODE_PROFILE_CUSTOM="cluster:;split:$C;cluster2:;split2:$C" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_128.txt 2>&1; el "e4b 256+128 rc $?"; show $T/e4b_128.txt
DECODE_PROFILE_CUSTOM="cluster:;split:$C;cluster2:;split2:$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 512 > $T/e4b_512.txt 2>&1; el "e4b 256+512 rc $?"; show $T/e4b_512.txt
DECODE_PROFILE_CUSTOM="cluster:;split:$C;cluster2:;split2:$C" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_512.txt 2>&1; el "tiny rc $?"; show $T/tiny_512.txt
cd $OUT && tar czf c13.tgz c13 && rm -rf c13
