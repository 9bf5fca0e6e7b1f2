# session 18, call 4: the cleaned-up tensor-core kernel (one kernel, full groups) planned for 3
# blocks a multiprocessor (new) or 2 (w2): E4B decode and verify costs against the CUDA-core
# kernels, the small model's, the op test, test_gpu.sh steps 2-3 and 5 with GEMMA_CUDA_MV_MMA=1,
# memcheck and racecheck of the op test (its mma variants included).
set -u
B=.carry/s18; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; W=$B/w2; T=$OUT/c4; mkdir -p $T
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
  DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="cc$r:;mma$r:GEMMA_CUDA_MV_MMA=1" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_new$r.txt 2>&1
  DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="w2mma$r:GEMMA_CUDA_MV_MMA=1" timeout 100 $W/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_w2$r.txt 2>&1
done
el "e4b"; ms $T/e4b_new1.txt $T/e4b_w21.txt $T/e4b_new2.txt $T/e4b_w22.txt
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="cc:;mma:GEMMA_CUDA_MV_MMA=1" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 (mma) rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test23.txt | cut -c1-180 | head -6
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 140 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 (mma) rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
