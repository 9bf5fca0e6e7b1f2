# session 22, call 3: why the fold is slower on E4B (calls 1-2: +0.02-0.03 ms a step) when leaving
# the norm-RoPE-KV kernel out saved 0.07-0.08 ms (s21 call 6). Profiling-only skips (wrong
# results, time only): foldconst leaves out the fold's scales and rotation (loaded before the
# wait), nrk its whole prologue (and, without the fold, the norm-RoPE-KV kernel). One process,
# two rounds.
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-16s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
F=GEMMA_CUDA_ATTN_FOLD; S=DECODE_PROFILE_SKIP
R="fold:$F=1;nofold:$F=0;fold_noconst:$F=1 $S=foldconst;fold_skipnrk:$F=1 $S=nrk;nofold_skipnrk:$F=0 $S=nrk"
for r in 1 2; do
  DECODE_PROFILE_CUSTOM="$R" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_$r.txt 2>&1
done
el "e4b"; ms $T/e4b_1.txt $T/e4b_2.txt
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
