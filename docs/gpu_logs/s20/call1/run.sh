# session 20, call 1: attention in thread block clusters (GEMMA_CUDA_ATTN=cluster, new) against
# the split form (slices kernel + merge kernel, =split) in one build, and session 19's build
# (base) for the split form's refactor: E4B and small decode and verify costs, alternating;
# then correctness of the cluster form (the default on sm_90): the op test (both forms, chunk
# rows against rows alone), test_gpu.sh steps 2-3 and 5, memcheck and racecheck of the op test.
set -u
B=.carry/s20; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; O=$B/base; T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|differs|attention|all agree|cuda:" $T/ops.txt | cut -c1-200 | head -8
V="2 4 8"
for r in 1 2; do
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="base_$r:" timeout 100 $O/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_base$r.txt 2>&1
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="split_$r:GEMMA_CUDA_ATTN=split;clus_$r:GEMMA_CUDA_ATTN=cluster" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_new$r.txt 2>&1
done
el "e4b"; ms $T/e4b_base1.txt $T/e4b_new1.txt $T/e4b_base2.txt $T/e4b_new2.txt
grep -h "cuda:" $T/e4b_new1.txt | cut -c1-400 | sort -u | head -3
# a longer context: 2048-token prompt (the full layers' slices grow)
DECODE_PROFILE_CUSTOM="split_L:GEMMA_CUDA_ATTN=split;clus_L:GEMMA_CUDA_ATTN=cluster" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 2048 64 > $T/e4b_long.txt 2>&1
el "e4b long"; ms $T/e4b_long.txt
for r in 1 2; do
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="base_$r:" timeout 60 $O/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_base$r.txt 2>&1
  DECODE_PROFILE_VERIFY="$V" DECODE_PROFILE_CUSTOM="split_$r:GEMMA_CUDA_ATTN=split;clus_$r:GEMMA_CUDA_ATTN=cluster" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_new$r.txt 2>&1
done
el "tiny"; ms $T/tiny_base1.txt $T/tiny_new1.txt $T/tiny_base2.txt $T/tiny_new2.txt
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 200 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests23 timeout 150 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "FAIL|max.gpu-cpu|greedy output|all GPU" $T/test23.txt | cut -c1-150 | head -10
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 140 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
