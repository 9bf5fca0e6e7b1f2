# session 16, call 6: GEMMA_CUDA_MV_GROUP=auto (the new default) against 0 (the kernels before),
# E4B and small-model step A/B, bench-matvec with a small kernel after each product; correctness:
# test_gpu.sh steps 1-3 (default), step 1 with groups everywhere (GROUP=1), memcheck + racecheck of
# the op test with GROUP=1, step 5 (verify reproduces decode bit for bit; default).
set -u
B=.carry/s16; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
G=GEMMA_CUDA_MV_GROUP
BENCH_MATVEC_SMALL=1 timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec_small.txt 2>&1; el "bench-matvec small rc $?"; grep '^|' $T/bench_matvec_small.txt | cut -c1-200
DECODE_PROFILE_CUSTOM="auto:;g0:$G=0;auto2:;g02:$G=0;auto3:;g03:$G=0" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_ab.txt 2>&1
el "tiny rc $?"; ms $T/tiny_ab.txt
wait $MK; el "$(tail -1 $T/make_e4b.log)"
DECODE_PROFILE_CUSTOM="auto:;g0:$G=0;auto2:;g02:$G=0;auto3:;g03:$G=0;auto4:;g04:$G=0" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_ab.txt 2>&1
el "e4b rc $?"; ms $T/e4b_ab.txt
GEMMA_CUDA_MV_GROUP=1 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
GEMMA_CUDA_MV_GROUP=1 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 240 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test123.txt | cut -c1-180 | head -8
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
GEMMA_CUDA_MV_GROUP=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1" LOG_DIR=$T/tests_g1 timeout 60 scripts/test_gpu.sh > $T/test1_g1.txt 2>&1; el "step 1 with GROUP=1 rc $?"
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 140 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
