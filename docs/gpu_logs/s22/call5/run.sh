# session 22, call 5: one-wave decode launches with their chunks in flight through shared memory
# (GEMMA_CUDA_MV_ASYNC=4|6|8, matvec1_async_kernel): the op test (its variants' bits against the
# default's), E4B decode / verify with 0, 4, 6, 8 alternating in one process (two rounds), the
# small model, and bench-matvec after a small kernel.
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1 & P0=$!
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
wait $P0; el "ops rc $?"; grep -E "FAIL|differs|variant|all agree" $T/ops.txt | cut -c1-200 | head -20
A=GEMMA_CUDA_MV_ASYNC
for r in 1 2; do
  DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="a0_$r:$A=0;a4_$r:$A=4;a6_$r:$A=6;a8_$r:$A=8" timeout 100 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_$r.txt 2>&1
done
el "e4b"; ms $T/e4b_1.txt $T/e4b_2.txt
DECODE_PROFILE_CUSTOM="a0:$A=0;a8:$A=8;a4:$A=4;a0b:$A=0;a8b:$A=8" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1
el "tiny"; ms $T/tiny.txt
BENCH_MATVEC_SMALL=1 timeout 150 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"
grep -E "^\| (matrix|q_proj|o_proj|mlp down|per-layer|gate \+ up pair|q \+ k)" $T/bench_matvec.txt | cut -c1-400
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
