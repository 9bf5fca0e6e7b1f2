# session 21, call 2: two rows a warp (GEMMA_CUDA_MV_TWO=0|1|2) in one build, alternating in one
# process (two processes): E4B decode and verify at a 256-token prompt, the small model;
# bench-matvec per shape; the op test (two-row variants, n-row products against lone ones bit for
# bit); the E4B-sized model GPU against CPU with TWO=2.
set -u
B=.carry/s21; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c2; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-12s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-12s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
C="off_a:GEMMA_CUDA_MV_TWO=0;t1_a:GEMMA_CUDA_MV_TWO=1;t2_a:GEMMA_CUDA_MV_TWO=2;off_b:GEMMA_CUDA_MV_TWO=0;t1_b:GEMMA_CUDA_MV_TWO=1;t2_b:GEMMA_CUDA_MV_TWO=2"
for r in 1 2; do
  DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_$r.txt 2>&1; el "e4b $r rc $?"; ms $T/e4b_$r.txt
done
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="$C" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
grep -h "^cuda:" $T/e4b_1.txt | head -3 | cut -c150-330
BENCH_MATVEC_SMALL=1 timeout 100 $N/cuda_ops bench-matvec > $T/bmv.txt 2>&1; el "bench-matvec rc $?"
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|variant|agree" $T/ops.txt | head -30
GEMMA_CUDA_MV_TWO=2 timeout 150 $N/cuda_ops model /tmp/e4b/model > $T/e4b_model_two2.txt 2>&1; el "e4b model two=2 rc $?"; tail -5 $T/e4b_model_two2.txt
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
