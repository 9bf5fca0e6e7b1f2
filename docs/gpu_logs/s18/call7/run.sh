# session 18, call 7: verify passes of up to 8 inputs through the one-pass tensor-core kernel (new)
# against call 5's build (base: the predicated kernel for 2 .. 8 inputs), both with
# GEMMA_CUDA_MV_MMA=1 - E4B and small-model decode and verify costs alternating by process - then
# the correctness of new: the op test, test_gpu.sh steps 2-3 and 5 with the switch on, memcheck
# and racecheck of the op test.
set -u
B=.carry/s18; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; O=$B/base; T=$OUT/c7; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-8s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|MMA" $T/ops.txt | head -6
for r in 1 2; do
  for v in base new; do
    b=$O; [ $v = new ] && b=$N
    DECODE_PROFILE_VERIFY="2 4 5 8" DECODE_PROFILE_CUSTOM="$v$r:GEMMA_CUDA_MV_MMA=1" timeout 60 $b/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_$v$r.txt 2>&1
  done
done
el "e4b"; ms $T/e4b_base1.txt $T/e4b_new1.txt $T/e4b_base2.txt $T/e4b_new2.txt
for v in base new; do
  b=$O; [ $v = new ] && b=$N
  DECODE_PROFILE_VERIFY="2 4 5 8" DECODE_PROFILE_CUSTOM="$v:GEMMA_CUDA_MV_MMA=1" timeout 60 $b/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_$v.txt 2>&1
done
el "tiny"; ms $T/tiny_base.txt $T/tiny_new.txt
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests_mma timeout 150 scripts/test_gpu.sh > $T/test23_mma.txt 2>&1; el "steps 2-3 (mma) rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test23_mma.txt | cut -c1-180 | head -6
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5_mma timeout 140 scripts/test_gpu.sh > $T/test5_mma.txt 2>&1; el "step 5 (mma) rc $?"
grep -E "FAIL|all GPU" $T/test5_mma.txt | head -4
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
