# session 21, call 3: two rows a warp at the same split (GEMMA_CUDA_MV_TWO=3: matrices of at least
# 4096 columns, =4: every plain matrix; no sum changes) against off and =2 (twice the split), in
# one build, alternating in one process (two processes); the small model; bench-matvec; the op
# test (=4 must equal the default bit for bit); the E4B-sized model GPU against CPU by default
# (call 2's TWO=2 run missed the fixture tolerance: is it the model's size or the split?).
set -u
B=.carry/s21; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c3; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-12s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-12s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
C="off_a:GEMMA_CUDA_MV_TWO=0;t3_a:GEMMA_CUDA_MV_TWO=3;t4_a:GEMMA_CUDA_MV_TWO=4;t2_a:GEMMA_CUDA_MV_TWO=2;off_b:GEMMA_CUDA_MV_TWO=0;t3_b:GEMMA_CUDA_MV_TWO=3;t4_b:GEMMA_CUDA_MV_TWO=4;t2_b:GEMMA_CUDA_MV_TWO=2"
for r in 1 2; do
  DECODE_PROFILE_VERIFY="2" DECODE_PROFILE_CUSTOM="$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_$r.txt 2>&1; el "e4b $r rc $?"; ms $T/e4b_$r.txt
done
DECODE_PROFILE_CUSTOM="$C" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
BENCH_MATVEC_SMALL=1 timeout 100 $N/cuda_ops bench-matvec > $T/bmv.txt 2>&1; el "bench-matvec rc $?"
timeout 200 $N/cuda_ops model /tmp/e4b/model > $T/e4b_model_default.txt 2>&1; el "e4b model default rc $?"; tail -4 $T/e4b_model_default.txt
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|TWO|agree" $T/ops.txt | head -30
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
