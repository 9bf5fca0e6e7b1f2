# session 13, call 7: what a verify pass of n rows costs, in decode steps, on the E4B-sized model and the small one
# (cuda_ops decode-profile with DECODE_PROFILE_VERIFY; graph-captured passes), for new (HEAD: n <= 4 rows through the
# 4-input kernel, 5..8 through the 8-input one) and nt4 (5..8 through the 4-input kernel in two passes over each row).
set -u
B=.carry/s13c7; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c7; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; el "make rc $?"
export DECODE_PROFILE_VERIFY="2 3 4 5 6 8 9"
for i in 1 2; do
  for v in new nt4; do
    for m in tiny e4b; do
      dir=/tmp/e4b/model; [ $m = tiny ] && dir=models/gemma4-tiny
      DECODE_PROFILE_CUSTOM="$v:" timeout 60 $B/$v/cuda_ops decode-profile $dir 256 64 > $T/${m}_${v}_$i.txt 2>&1
      el "$m $v round $i rc $?: $(grep -h '"run"' $T/${m}_${v}_$i.txt | python3 -c '
import json,sys
out=[]
for l in sys.stdin:
    d=json.loads(l)
    out.append("step %.4f" % d["ms_per_step"] if "ms_per_step" in d else "n%d %.3f(%.2f)" % (d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))
print(" ".join(out))')"
    done
  done
done
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
