# session 18, call 2 (experiment): the decode tensor-core kernel (matvec_mma1_kernel) four ways -
# B made by each lane (1) or once per block in shared memory (3), weights in their row layout or
# read as if stored tile by tile (5, 7: wrong sums) - on the E4B step (alternating in one
# process) and shape by shape (bench-matvec after a small kernel).
set -u
B=.carry/s18; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
M="GEMMA_CUDA_MV_MMA"
DECODE_PROFILE_CUSTOM="base:;m1:$M=1;m3:$M=3;m5:$M=5;m7:$M=7;base2:;m1b:$M=1;m3b:$M=3;m5b:$M=5;m7b:$M=7" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
BENCH_MATVEC_SMALL=1 timeout 200 $N/cuda_ops bench-matvec > $T/bench_matvec.md 2>&1; el "bench-matvec rc $?"
cut -d'|' -f2-9 $T/bench_matvec.md | head -20
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
