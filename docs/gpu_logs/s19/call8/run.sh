# session 19, call 8: the tensor-core kernels planned for 4 blocks a multiprocessor instead of 2
# (MMA_WAVE_BLOCKS 4, w4), so that split-K gives the gate + up pair 4 warps a tile (320 blocks)
# instead of 2 (160 blocks, 0.61 waves: call 7's ncu) - E4B decode and verify costs with
# GEMMA_CUDA_MV_MMA=1 and 2 against the current code (new), alternating by process.
set -u
B=.carry/s19; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c8; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-8s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
for r in 1 2; do
  for v in new w4; do
    DECODE_PROFILE_VERIFY="4 8" DECODE_PROFILE_CUSTOM="${v}_1_$r:GEMMA_CUDA_MV_MMA=1;${v}_2_$r:GEMMA_CUDA_MV_MMA=2" timeout 60 $B/$v/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_$v$r.txt 2>&1
  done
done
el "e4b"; ms $T/e4b_new1.txt $T/e4b_w41.txt $T/e4b_new2.txt $T/e4b_w42.txt
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
