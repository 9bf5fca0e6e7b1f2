# session 17, call 3: bf16 unpacked by shift and mask instead of cvt (new) against the s16 kernels
# (old), and x read as bf16 (GEMMA_CUDA_MV_XB_FAKE=1, wrong values, the real loads) on top of the
# new unpack; E4B and small-model steps, bench-matvec with a small kernel after each product; SASS
# instruction counts of the lean kernels.
set -u
B=.carry/s17; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; O=$B/old; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
X=GEMMA_CUDA_MV_XB_FAKE
for b in old new; do
  CU=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
  $CU -sass $B/$b/cuda_ops 2>/dev/null | awk '/Function : .*matvec1_kernel.*nv_bfloat16/{f=$3} f && /^ +\/\*[0-9a-f]+\*\//{n[f]++} END{for(k in n) print n[k], k}' | sort -k2 > $T/sass_$b.txt
done
el "sass"; paste $T/sass_old.txt $T/sass_new.txt | awk '{print $1, $3, $2}' | head -40
BENCH_MATVEC_SMALL=1 timeout 90 $O/cuda_ops bench-matvec > $T/bm_old.txt 2>&1; el "bm old rc $?"
BENCH_MATVEC_SMALL=1 timeout 90 $N/cuda_ops bench-matvec > $T/bm_new.txt 2>&1; el "bm new rc $?"
BENCH_MATVEC_SMALL=1 GEMMA_CUDA_MV_XB_FAKE=1 timeout 90 $N/cuda_ops bench-matvec > $T/bm_newxb.txt 2>&1; el "bm new xb rc $?"
for f in old new newxb; do echo "$f"; grep '^|' $T/bm_$f.txt | cut -d'|' -f2,4 | tail -n +3; done
for r in 1 2; do
  DECODE_PROFILE_CUSTOM="old$r:" timeout 60 $O/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_old$r.txt 2>&1
  DECODE_PROFILE_CUSTOM="new$r:;xb$r:$X=1" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_new$r.txt 2>&1
done
el "tiny"; ms $T/tiny_*.txt
wait $MK; el "$(tail -1 $T/make_e4b.log)"
for r in 1 2 3; do
  DECODE_PROFILE_CUSTOM="old$r:;old${r}b:" timeout 100 $O/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_old$r.txt 2>&1
  DECODE_PROFILE_CUSTOM="new$r:;xb$r:$X=1;new${r}b:;xb${r}b:$X=1" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_new$r.txt 2>&1
  el "e4b round $r"; ms $T/e4b_old$r.txt $T/e4b_new$r.txt
done
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
