# session 19, call 3: the exact three-way split of x made cheaper - each lane peels its own part
# (a mask and a subtraction a peel, the parts truncated, no conversion or select: new) against
# each part rounded and one chosen (base, call 2's code); GEMMA_CUDA_MV_MMA=1 (and =2, whose
# code did not change in substance) E4B and small-model decode and verify costs alternating by
# process; then the correctness of new: the op test, test_gpu.sh steps 2-3 and 5 with =1,
# memcheck and racecheck of the op test.
set -u
B=.carry/s19; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; O=$B/base; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-8s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|MMA|all agree" $T/ops.txt | head -8
V="2 3 4 5 6 8"
for r in 1 2; do
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="rn1_$r:GEMMA_CUDA_MV_MMA=1;rn2_$r:GEMMA_CUDA_MV_MMA=2" timeout 100 $O/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_base$r.txt 2>&1
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="peel1_$r:GEMMA_CUDA_MV_MMA=1;new2_$r:GEMMA_CUDA_MV_MMA=2" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_new$r.txt 2>&1
done
el "e4b"; ms $T/e4b_base1.txt $T/e4b_new1.txt $T/e4b_base2.txt $T/e4b_new2.txt
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="rn1:GEMMA_CUDA_MV_MMA=1" timeout 60 $O/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_base.txt 2>&1
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="peel1:GEMMA_CUDA_MV_MMA=1" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_new.txt 2>&1
el "tiny"; ms $T/tiny_base.txt $T/tiny_new.txt
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests_mma1 timeout 150 scripts/test_gpu.sh > $T/test23_mma1.txt 2>&1; el "steps 2-3 (mma 1) rc $?"
grep -E "FAIL|max.gpu-cpu|greedy output|all GPU" $T/test23_mma1.txt | cut -c1-150 | head -10
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5_mma1 timeout 140 scripts/test_gpu.sh > $T/test5_mma1.txt 2>&1; el "step 5 (mma 1) rc $?"
grep -E "FAIL|all GPU" $T/test5_mma1.txt | head -4
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
