# session 17, call 2: what x in bf16 would give the engine's step, before building it. The lean
# decode kernel reads x as bf16 from the fp32 buffer (GEMMA_CUDA_MV_XB_FAKE=1: wrong values, the
# real kernel's loads and arithmetic), E4B and small-model step A/B, bench-matvec with a small
# kernel after each product.
set -u
B=.carry/s17; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
X=GEMMA_CUDA_MV_XB_FAKE
BENCH_MATVEC_SMALL=1 timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec_small.txt 2>&1; el "bench-matvec rc $?"
BENCH_MATVEC_SMALL=1 $X=1 timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec_small_xb.txt 2>&1; el "bench-matvec xb rc $?"
paste -d'\n' <(grep '^|' $T/bench_matvec_small.txt | cut -c1-150) <(grep '^|' $T/bench_matvec_small_xb.txt | cut -c1-150)
DECODE_PROFILE_CUSTOM="f32:;xb:$X=1;f32b:;xbb:$X=1" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_ab.txt 2>&1
el "tiny rc $?"; ms $T/tiny_ab.txt
wait $MK; el "$(tail -1 $T/make_e4b.log)"
DECODE_PROFILE_CUSTOM="f32:;xb:$X=1;f32b:;xbb:$X=1;f32c:;xbc:$X=1;f32d:;xbd:$X=1" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_ab.txt 2>&1
el "e4b rc $?"; ms $T/e4b_ab.txt
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
