# session 16, call 5: lean6 (the lean kernel at <= 40 registers, 6 blocks a multiprocessor) and
# groups: bench-matvec back to back and with a small kernel after each product (the decode gate + up
# pair now a shape of its own); small model and E4B step A/B.
set -u
B=.carry/s16; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
D=GEMMA_CUDA_MV_DECODE; G=GEMMA_CUDA_MV_GROUP; U=GEMMA_CUDA_MV_UNROLL
BENCH_MATVEC_SMALL=1 timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec_small.txt 2>&1; el "bench-matvec small rc $?"; grep '^|' $T/bench_matvec_small.txt | cut -c1-250
timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"; grep '^|' $T/bench_matvec.txt | cut -c1-250
DECODE_PROFILE_CUSTOM="def:;l6:$D=lean6;def2:;l62:$D=lean6" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/tiny_ab.txt 2>&1
el "tiny rc $?"; ms $T/tiny_ab.txt
wait $MK; el "$(tail -1 $T/make_e4b.log)"
DECODE_PROFILE_CUSTOM="def:;l6:$D=lean6;l6g4:$D=lean6 $G=1 $U=4;def2:;l62:$D=lean6;l6g42:$D=lean6 $G=1 $U=4;def3:;l63:$D=lean6" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_ab.txt 2>&1
el "e4b rc $?"; ms $T/e4b_ab.txt
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
