# session 18, call 3: the attention split kernel loading a warp's first key / value rows before the
# PDL wait (new) against call 2's build (base) - E4B and small-model steps alternating by
# process, test_gpu.sh steps 1-3 and 5, memcheck and racecheck of the op test - and the cost of a
# verify pass (2, 4, 8 positions) with the CUDA-core products against the tensor cores.
set -u
B=.carry/s18; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; O=$B/base; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-8s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P1; r1=$?; el "memcheck rc $r1"; tail -n 1 $T/memcheck.log
for r in 1 2 3; do
  DECODE_PROFILE_CUSTOM="base$r:" timeout 100 $O/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_base$r.txt 2>&1
  DECODE_PROFILE_CUSTOM="new$r:" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_new$r.txt 2>&1
done
el "e4b"; ms $T/e4b_base*.txt $T/e4b_new*.txt
for r in 1 2; do
  DECODE_PROFILE_CUSTOM="base$r:" timeout 60 $O/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_base$r.txt 2>&1
  DECODE_PROFILE_CUSTOM="new$r:" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_new$r.txt 2>&1
done
el "tiny"; ms $T/tiny_*.txt
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="cc:;mma:GEMMA_CUDA_MV_MMA=1" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/verify.txt 2>&1; el "verify rc $?"; ms $T/verify.txt
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 200 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test123.txt | cut -c1-180 | head -8
wait $P2; r2=$?; el "racecheck rc $r2"; tail -n 1 $T/racecheck.log
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 140 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
