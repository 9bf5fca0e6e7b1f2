# session 19, call 2: (a) bench/step_mega with consumers well faster than memory (a fold of the
# weights: no x, wrong sums) - does the ring then absorb the waits, with counters or LL outputs?
# (b) the tensor cores in their new form (one kernel, a prefill in launches of 8; inputs packed
# into B's columns across passes): GEMMA_CUDA_MV_MMA=1 (x split exactly into three bf16) and =2
# (two, as session 18) against the CUDA cores, E4B and small-model decode and verify costs in one
# process (twice for E4B); the op test; test_gpu.sh steps 2-3 with =1 (twice) and =2, step 5 with
# each; memcheck and racecheck of the op test.
set -u
B=.carry/s19; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-8s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 150 $N/step_mega > $T/step_mega.txt 2>&1; el "step_mega rc $?"; grep -v "L2 " $T/step_mega.txt
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|MMA|all agree" $T/ops.txt | head -8
V="2 3 4 5 6 8"
for r in 1 2; do
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="cc$r:;mma1_$r:GEMMA_CUDA_MV_MMA=1;mma2_$r:GEMMA_CUDA_MV_MMA=2" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_$r.txt 2>&1
done
el "e4b"; ms $T/e4b_1.txt $T/e4b_2.txt
DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="cc:;mma1:GEMMA_CUDA_MV_MMA=1;mma2:GEMMA_CUDA_MV_MMA=2" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1
el "tiny"; ms $T/tiny.txt
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
for m in 1 1 2; do
  GEMMA_CUDA_MV_MMA=$m GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests_mma$m timeout 150 scripts/test_gpu.sh > $T/test23_mma$m.txt 2>&1; el "steps 2-3 (mma $m) rc $?"
  grep -E "FAIL|max.gpu-cpu|greedy output|all GPU" $T/test23_mma$m.txt | cut -c1-150 | head -10
done
for m in 1 2; do
  GEMMA_CUDA_MV_MMA=$m GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5_mma$m timeout 140 scripts/test_gpu.sh > $T/test5_mma$m.txt 2>&1; el "step 5 (mma $m) rc $?"
  grep -E "FAIL|all GPU" $T/test5_mma$m.txt | head -4
done
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
