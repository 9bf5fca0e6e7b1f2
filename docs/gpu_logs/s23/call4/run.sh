# session 23, call 4: decode launches whose matrices all take one warp a row (E4B's gate + up
# pair, per-layer projection, head, per-layer input projection) in blocks of 2 or 4 warps
# instead of 8 (GEMMA_CUDA_MV_BW, an experiment; the same sums). The op test (its new variants
# check the bits against the default); E4B decode / verify alternating in one process; the small
# model; bench-matvec with 8 and 2 warps a block.
set -u
B=.carry/s23; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-10s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-10s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & PM=$!
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|variant|all agree" $T/ops.txt | cut -c1-200 | head -24
wait $PM; el "model rc $?"
C="w8a:;w4a:GEMMA_CUDA_MV_BW=4;w2a:GEMMA_CUDA_MV_BW=2;w8b:;w4b:GEMMA_CUDA_MV_BW=4;w2b:GEMMA_CUDA_MV_BW=2;w8c:;w2c:GEMMA_CUDA_MV_BW=2"
DECODE_PROFILE_VERIFY="2 8" DECODE_PROFILE_CUSTOM="$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_CUSTOM="$C" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
BENCH_MATVEC_SMALL=1 timeout 100 $N/cuda_ops bench-matvec > $T/bench_matvec_w8.txt 2>&1; el "bench-matvec w8 rc $?"
GEMMA_CUDA_MV_BW=2 BENCH_MATVEC_SMALL=1 timeout 100 $N/cuda_ops bench-matvec > $T/bench_matvec_w2.txt 2>&1; el "bench-matvec w2 rc $?"
grep -E "^\| (gate|per-layer|head)" $T/bench_matvec_w8.txt $T/bench_matvec_w2.txt | cut -c1-160
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
