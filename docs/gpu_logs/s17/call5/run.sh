# session 17, call 5: the final kernels (bf16 unpack by shift and mask in kcommon.cuh unpack16, the
# plain lean kernel bounded to 6 blocks): bench/bench_gpu.sh (the headline), then the E4B step
# against the s16 kernels once more on its model, test_gpu.sh steps 1-3 and 5, memcheck and
# racecheck of the op test.
set -u
B=.carry/s17; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; O=$B/old; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
GPU_BIN_DIR=$N WORK_DIR=/tmp/e4b timeout 420 bench/bench_gpu.sh $T/bench > $T/bench.log 2>&1; el "bench_gpu rc $?"
grep -E "copy bandwidth|engine decode tps|share of the floor|CUDA graphs \(|transformers .* decode tps|our decode speed" $T/bench/bench_gpu.md | cut -c1-200
rm -f $T/bench/*.csv
for r in 1 2; do
  DECODE_PROFILE_CUSTOM="old$r:;old${r}b:" timeout 100 $O/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_old$r.txt 2>&1
  DECODE_PROFILE_CUSTOM="new$r:;new${r}b:" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_new$r.txt 2>&1
  el "e4b round $r"; ms $T/e4b_old$r.txt $T/e4b_new$r.txt
done
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 200 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test123.txt | cut -c1-180 | head -8
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 140 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
