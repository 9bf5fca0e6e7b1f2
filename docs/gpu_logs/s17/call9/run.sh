# session 17, call 9: weight loads cached in L2 only (__ldcg, ld.global.cg) instead of streaming
# (__ldcs, ld.global.cs: evict-first in L1 and L2), so that the weights do not pass through the L1
# where x lives (cg: every __ldcs of kernels/matvec.cu as __ldcg, timing only) against the final
# kernels (new); E4B step alternating by process.
set -u
B=.carry/s17; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c9; mkdir -p $T
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?"
for r in 1 2 3; do for v in new cg; do
  DECODE_PROFILE_CUSTOM="$v$r:;$v${r}b:" timeout 40 $B/$v/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_$v$r.txt 2>&1
done; done
grep -h '"run"' $T/e4b_*.txt | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
