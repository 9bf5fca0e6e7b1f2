# session 17, call 6: two more instruction-level variants of matvec.cu, timing only (never
# committed; docs/gpu_logs/s17/call6/mv_exp.patch applied to kernels/matvec.cu, then #define MV_EXP_L2_256 or MV_EXP_FMA at its top): l2 - every weight load with the
# L2::256B prefetch-size hint (ld.global.cs.L2::256B); fma - mv_dot4 as one fma chain (4 FMAs
# where the tree form has a multiply, 3 FMAs and an add; changes the rounding). Against the
# final kernels of call 5 (base): E4B and small-model steps alternating by process,
# bench-matvec with a small kernel after each product.
set -u
B=.carry/s17; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
for v in base l2 fma; do BENCH_MATVEC_SMALL=1 timeout 90 $B/$v/cuda_ops bench-matvec > $T/bm_$v.txt 2>&1; el "bm $v rc $?"; done
for v in base l2 fma; do echo "$v"; grep '^|' $T/bm_$v.txt | cut -d'|' -f2,4 | tail -n +3; done
for r in 1 2; do for v in base l2 fma; do
  DECODE_PROFILE_CUSTOM="$v$r:" timeout 60 $B/$v/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_$v$r.txt 2>&1
done; done
el "tiny"; ms $T/tiny_*.txt
wait $MK; el "$(tail -1 $T/make_e4b.log)"
for r in 1 2 3; do for v in base l2 fma; do
  DECODE_PROFILE_CUSTOM="$v$r:;$v${r}b:" timeout 100 $B/$v/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_$v$r.txt 2>&1
done; el "e4b round $r"; ms $T/e4b_*$r.txt; done
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
