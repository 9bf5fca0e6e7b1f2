# session 20, call 7: the small model's eager decode step (graphs off) was 0.485 ms in call 5
# against 0.309 in session 19. Suspect: k_set_attention asked the driver for the compute
# capability before every op. new: asks once; base: call 5's build. Eager and graph steps of
# the small model, split and cluster, two rounds; then the op test and test_gpu.sh steps 2-3.
set -u
B=.carry/s20; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; O=$B/base; T=$OUT/c7; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-14s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
C="g_split:GEMMA_CUDA_ATTN=split;g_clus:;e_split:GEMMA_CUDA_GRAPHS=0 GEMMA_CUDA_ATTN=split;e_clus:GEMMA_CUDA_GRAPHS=0"
for r in 1 2; do
  DECODE_PROFILE_CUSTOM="$C" timeout 60 $O/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_base$r.txt 2>&1
  DECODE_PROFILE_CUSTOM="$C" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_new$r.txt 2>&1
done
el "tiny"; for r in 1 2; do echo "base $r"; ms $T/tiny_base$r.txt; echo "new $r"; ms $T/tiny_new$r.txt; done
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|all agree" $T/ops.txt | head -4
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests23 timeout 200 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test23.txt | cut -c1-150 | head -6
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
