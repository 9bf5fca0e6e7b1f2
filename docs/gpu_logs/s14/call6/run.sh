# session 14, call 6: E4B decode step with the matvec kernel's existing persistent grid (P mode:
# rows strided over a resident grid, the layout step_shape's split rows emulate) at several grid
# sizes and split rules, against the default; products alone too (DECODE_PROFILE_SKIP).
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; el "make rc $?"
G=GEMMA_CUDA_MV_GRID; SK="DECODE_PROFILE_SKIP=split,merge,nrk,normadd,rmsnorm,elementwise"
R="default:;persist:$G=persist;g264:$G=264;g396:$G=396;g528:$G=528;g792:$G=792;persist_split16:$G=persist GEMMA_CUDA_MV_SPLIT=16"
R="$R;prod_default:$SK;prod_persist:$SK $G=persist;prod_g396:$SK $G=396;default2:"
DECODE_PROFILE_CUSTOM="$R" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_grid.txt 2>&1
el "rc $?"; grep -h '"run"' $T/e4b_grid.txt | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-16s %.4f ms" % (d["run"], d["ms_per_step"]))'
