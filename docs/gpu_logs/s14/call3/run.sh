# session 14, call 3: what each kernel family costs on E4B's decode step (critical path):
# DECODE_PROFILE_SKIP leaves families out (wrong results, time only), A/B/A in one process.
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; el "make rc $?"
S=DECODE_PROFILE_SKIP
R="default:;attn:$S=split,merge;split:$S=split;merge:$S=merge;nrk:$S=nrk;normadd:$S=normadd;rmsnorm:$S=rmsnorm;elem:$S=elementwise"
R="$R;small:$S=split,merge,nrk,normadd,rmsnorm,elementwise;products:$S=matvec;default2:"
for m in e4b tiny; do
  dir=/tmp/e4b/model; [ $m = tiny ] && dir=models/gemma4-tiny
  DECODE_PROFILE_CUSTOM="$R" timeout 200 $N/cuda_ops decode-profile $dir 256 128 > $T/${m}_skip.txt 2>&1
  el "$m rc $?"; grep -h '"run"' $T/${m}_skip.txt | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-10s %.4f ms" % (d["run"], d["ms_per_step"]))'
done
