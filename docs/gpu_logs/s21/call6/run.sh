# session 21, call 6: the final code (kernels as d549f98, the op test's new reproduction check):
# the op test; then where E4B's step goes now that attention is one cluster kernel -
# DECODE_PROFILE_SKIP leaves kernel families out (wrong results, time only; session 14 call 3's
# runs), in one process, E4B and the small model.
set -u
B=.carry/s21; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
S=DECODE_PROFILE_SKIP
R="default:;attn:$S=split,merge;nrk:$S=nrk;normadd:$S=normadd;rmsnorm:$S=rmsnorm;elem:$S=elementwise"
R="$R;small:$S=split,merge,nrk,normadd,rmsnorm,elementwise;products:$S=matvec;default2:"
for m in e4b tiny; do
  dir=/tmp/e4b/model; [ $m = tiny ] && dir=models/gemma4-tiny
  DECODE_PROFILE_CUSTOM="$R" timeout 200 $N/cuda_ops decode-profile $dir 256 128 > $T/${m}_skip.txt 2>&1
  el "$m rc $?"; grep -h '"run"' $T/${m}_skip.txt | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-10s %.4f ms" % (d["run"], d["ms_per_step"]))'
done
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|alone|agree" $T/ops.txt | head -20
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
