# session 16, call 2: x staged in shared memory for decode launches (GEMMA_CUDA_MV_XS).
#  - E4B step A/B: l1 (default) against shared / overlap above 32 MiB and shared everywhere;
#  - small model A/B; bench-matvec (x in shared columns);
#  - correctness with XS on everywhere (XS_MIN=0): test_gpu.sh steps 1-3 (overlap) and 1 (shared),
#    memcheck + racecheck of the op test (overlap), step 5 (verify reproduces decode bit for bit).
set -u
B=.carry/s16; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
V=GEMMA_CUDA_MV_XS; M=GEMMA_CUDA_MV_XS_MIN
DECODE_PROFILE_CUSTOM="l1:;sh0:$V=shared $M=0;ov0:$V=overlap $M=0;l1b:;sh0b:$V=shared $M=0;ov0b:$V=overlap $M=0" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_ab.txt 2>&1
el "tiny rc $?"; ms $T/tiny_ab.txt
timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"; grep '^|' $T/bench_matvec.txt | cut -c1-230
wait $MK; el "$(tail -1 $T/make_e4b.log)"
DECODE_PROFILE_CUSTOM="l1:;sh32:$V=shared $M=32768;ov32:$V=overlap $M=32768;sh0:$V=shared $M=0;l1b:;sh32b:$V=shared $M=32768;ov32b:$V=overlap $M=32768;sh8:$V=shared $M=8192;l1c:" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_ab.txt 2>&1
el "e4b rc $?"; ms $T/e4b_ab.txt
export GEMMA_CUDA_MV_XS=overlap GEMMA_CUDA_MV_XS_MIN=0
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 240 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "overlap steps 1-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test123.txt | cut -c1-180 | head -8
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 140 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "overlap step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
GEMMA_CUDA_MV_XS=shared GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1" LOG_DIR=$T/tests_sh timeout 60 scripts/test_gpu.sh > $T/test1_shared.txt 2>&1; el "shared step 1 rc $?"
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
