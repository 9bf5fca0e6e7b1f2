# session 19, call 4: three passes over B (verify over 6-8 positions with GEMMA_CUDA_MV_MMA=1)
# with fewer loads a group - the gate + up pair 1 step (2 KB a warp), the other products 2 (ab) -
# against call 3's new code (peel: 2 and 4); E4B decode and verify costs alternating by process.
set -u
B=.carry/s19; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-8s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
for r in 1 2; do
  for v in peel ab; do
    DECODE_PROFILE_VERIFY="5 6 8" DECODE_PROFILE_CUSTOM="$v$r:GEMMA_CUDA_MV_MMA=1" timeout 60 $B/$v/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_$v$r.txt 2>&1
  done
done
el "e4b"; ms $T/e4b_peel1.txt $T/e4b_ab1.txt $T/e4b_peel2.txt $T/e4b_ab2.txt
DECODE_PROFILE_VERIFY="6 8" DECODE_PROFILE_CUSTOM="peel:GEMMA_CUDA_MV_MMA=1" timeout 60 $B/peel/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_peel.txt 2>&1
DECODE_PROFILE_VERIFY="6 8" DECODE_PROFILE_CUSTOM="ab:GEMMA_CUDA_MV_MMA=1" timeout 60 $B/ab/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_ab.txt 2>&1
el "tiny"; ms $T/tiny_peel.txt $T/tiny_ab.txt
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
