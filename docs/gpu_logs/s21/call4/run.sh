# session 21, call 4: two rows a warp with the verify pass's warps kept (matvec_rows_kernel takes
# two slices a warp in turn): E4B decode and verify over 2 / 4 / 8 positions with
# GEMMA_CUDA_MV_TWO=0 / 1 / 2 (new build, one process each round) against session 20's build
# (base: d549f98), two rounds; the small model; the op test.
set -u
B=.carry/s21; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-12s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-12s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
C="off:GEMMA_CUDA_MV_TWO=0;t1:GEMMA_CUDA_MV_TWO=1;t2:GEMMA_CUDA_MV_TWO=2"
for r in 1 2; do
  DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="base_$r:" timeout 100 $B/base/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_base_$r.txt 2>&1
  DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_new_$r.txt 2>&1; el "e4b round $r"; ms $T/e4b_base_$r.txt $T/e4b_new_$r.txt
done
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$C" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|TWO|agree" $T/ops.txt | head -30
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
