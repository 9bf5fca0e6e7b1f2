# session 14, call 13: decode through the rows kernel only in the largest launches (gate + up,
# 100 MiB, and the head), by the threshold GEMMA_CUDA_MV_ROWS_MIN: the E4B step A/B/A/B.
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c13; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; el "make rc $?"
summ() { python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("%-10s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
D=GEMMA_CUDA_MV_DECODE; M=GEMMA_CUDA_MV_ROWS_MIN
DECODE_PROFILE_CUSTOM="default:;rows60M:$D=rows $M=61440;rows100M:$D=rows $M=102400;head:$D=rows $M=1000000;default2:;rows60M_2:$D=rows $M=61440;rows100M_2:$D=rows $M=102400" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; grep -h '"run"' $T/e4b.txt | summ
