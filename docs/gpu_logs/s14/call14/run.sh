# session 14, call 14 (final code): session 13's kernels plus the profiling-only skip checks
# (k_skip, 0 unless cuda_ops decode-profile sets it). test_gpu.sh steps 1-3 and 5, memcheck and
# racecheck of the small op test, and the E4B step with its families left out once more.
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c14; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 220 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test123.txt | cut -c1-180 | head -6
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 150 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
wait $MK; el "$(tail -1 $T/make_e4b.log)"
S=DECODE_PROFILE_SKIP
DECODE_PROFILE_CUSTOM="default:;attn:$S=split,merge;normadd:$S=normadd;small:$S=split,merge,nrk,normadd,rmsnorm,elementwise" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_skip.txt 2>&1
el "e4b rc $?"; grep -h '"run"' $T/e4b_skip.txt | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-8s %.4f ms" % (d["run"], d["ms_per_step"]))'
cd $OUT && tar czf c14.tgz c14 && rm -rf c14
