# session 21, call 5: the whole share of a row before the wait (GEMMA_CUDA_MV_WHOLE=1: E4B's o
# projection) against 2 chunks (=0, the default) in one build, alternating in one process, and
# session 20's build (base: d549f98): E4B decode (and verify over 2, which it must not change),
# the small model; bench-matvec; the op test (whole must equal the default bit for bit; n-input
# products against lone ones); test_gpu.sh steps 2, 3 and 5 with GEMMA_CUDA_MV_WHOLE=1.
set -u
B=.carry/s21; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c5; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l)
    if "ms_per_step" in d: print("  %-12s %.4f ms" % (d["run"], d["ms_per_step"]))
    else: print("  %-12s verify %d rows %.4f ms = %.2f steps" % (d["run"], d["verify_rows"], d["ms_per_verify"], d["decode_steps"]))'; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
C="w0_a:GEMMA_CUDA_MV_WHOLE=0;w1_a:GEMMA_CUDA_MV_WHOLE=1;w0_b:GEMMA_CUDA_MV_WHOLE=0;w1_b:GEMMA_CUDA_MV_WHOLE=1"
for r in 1 2; do
  DECODE_PROFILE_VERIFY="2" DECODE_PROFILE_CUSTOM="base_$r:" timeout 100 $B/base/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_base_$r.txt 2>&1
  DECODE_PROFILE_VERIFY="2" DECODE_PROFILE_CUSTOM="$C" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 64 > $T/e4b_new_$r.txt 2>&1; el "e4b round $r"; ms $T/e4b_base_$r.txt $T/e4b_new_$r.txt
done
DECODE_PROFILE_CUSTOM="$C" timeout 100 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"; ms $T/tiny.txt
BENCH_MATVEC_SMALL=1 timeout 100 $N/cuda_ops bench-matvec > $T/bmv.txt 2>&1; el "bench-matvec rc $?"; grep -E "o_proj|q_proj|per-layer" $T/bmv.txt | cut -c1-60
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|WHOLE|agree" $T/ops.txt | head -20
GEMMA_CUDA_MV_WHOLE=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 300 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|differs|greedy output|all GPU|^=== |lossless|identical" $T/test235.txt | cut -c1-160 | head -30
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
