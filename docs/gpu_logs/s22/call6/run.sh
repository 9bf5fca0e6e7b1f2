# session 22, call 6: q + k + v as one wave (GEMMA_CUDA_MV_FIT=1, an experiment: the splits of a
# multi-matrix launch halved until its decode blocks fit one wave; E4B's q + k + v 1536 -> 768
# blocks). E4B decode / verify with it off and on, alternating in one process, two rounds; the
# small model.
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
# the switch is read once a process: one process each, alternating
for r in 1 2; do
  DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="fit0_$r:" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_fit0_$r.txt 2>&1
  GEMMA_CUDA_MV_FIT=1 DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="fit1_$r:" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_fit1_$r.txt 2>&1
done
el "e4b"; ms $T/e4b_fit0_1.txt $T/e4b_fit1_1.txt $T/e4b_fit0_2.txt $T/e4b_fit1_2.txt
GEMMA_CUDA_MV_FIT=1 BENCH_MATVEC_SMALL=1 timeout 100 $N/cuda_ops bench-matvec > $T/bench_matvec_fit1.txt 2>&1; el "bench-matvec rc $?"
grep -E "^\| (q \+ k)" $T/bench_matvec_fit1.txt | cut -c1-120
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
