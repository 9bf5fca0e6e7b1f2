# session 21, call 1: the weights' cache policy in matvec.cu (mv_ldw, compile-time MV_WLOAD /
# MV_XLOAD, one binary a variant): base = ld.global.cs (today's), w1 = ld.global.nc.L1::no_allocate,
# w2 = w1 with an L2 evict-first cache hint (two more variants, plain L1::no_allocate and x with
# L1::evict_last, were built but left out: the carry's 64 MiB). E4B-sized model, 256-token prompt, 64 graph steps, three rounds in turn;
# bench-matvec per variant; the op test on w1 and w2 (matvec against the CPU).
set -u
B=.carry/s21; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-12s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
V="base w1 w2"
for r in 1 2 3; do
  for v in $V; do
    DECODE_PROFILE_CUSTOM="${v}_$r:" timeout 100 $B/$v/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_${v}_$r.txt 2>&1
  done; el "round $r"; ms $T/e4b_*_$r.txt
done
for v in base w1; do
  DECODE_PROFILE_CUSTOM="${v}:" timeout 60 $B/$v/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny_${v}.txt 2>&1
done; ms $T/tiny_*.txt
for v in base w1; do
  BENCH_MATVEC_SMALL=1 timeout 100 $B/$v/cuda_ops bench-matvec > $T/bmv_${v}.txt 2>&1; el "bench-matvec $v rc $?"
done
for v in w1; do timeout 150 $B/$v/cuda_ops ops > $T/ops_${v}.txt 2>&1; el "ops $v rc $?"; tail -3 $T/ops_${v}.txt; done
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
