# session 18, call 1: the tensor-core products (matvec_mma.cu, GEMMA_CUDA_MV_MMA=1) - the op test
# (every matvec variant against the CPU, mma included), the E4B step A/B against the CUDA-core
# kernels in one process, bench-matvec shape by shape, the small model, then test_gpu.sh steps
# 2-3 and 5 with the switch on (whole-model logits, greedy CPU = GPU, lossless speculation).
set -u
B=.carry/s18; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
ms() { grep -h '"run"' "$@" | python3 -c '
import json,sys
for l in sys.stdin:
    d=json.loads(l); print("  %-8s %.4f ms" % (d["run"], d["ms_per_step"]))'; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
grep -E "FAIL|variant|failures|ok$" $T/ops.txt | cut -c1-200 | tail -16
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "model rc $?"
DECODE_PROFILE_CUSTOM="base:;mma:GEMMA_CUDA_MV_MMA=1;base2:;mma2:GEMMA_CUDA_MV_MMA=1;base3:;mma3:GEMMA_CUDA_MV_MMA=1" timeout 150 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
DECODE_PROFILE_CUSTOM="base:;mma:GEMMA_CUDA_MV_MMA=1;base2:;mma2:GEMMA_CUDA_MV_MMA=1" timeout 60 $N/cuda_ops decode-profile models/gemma4-tiny 256 512 > $T/small.txt 2>&1; el "small rc $?"; ms $T/small.txt
BENCH_MATVEC_SMALL=1 timeout 150 $N/cuda_ops bench-matvec > $T/bench_matvec.md 2>&1; el "bench-matvec rc $?"
cut -d'|' -f2,3,4,13,14 $T/bench_matvec.md | head -20
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 (mma) rc $?"
grep -E "FAIL|greedy|max \||all GPU" $T/test23.txt | cut -c1-180 | head -12
GEMMA_CUDA_MV_MMA=1 GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS=5 SPEC_PROMPTS=2 SPEC_NEW_TOKENS=96 SAN_TIMEOUT=40 LOG_DIR=$T/tests5 timeout 120 scripts/test_gpu.sh > $T/test5.txt 2>&1; el "step 5 (mma) rc $?"
grep -E "FAIL|all GPU" $T/test5.txt | head -4
cuobjdump -sass -fun '_Z17matvec_mma_kernelILb0ELi4ELi1EEv9mv_launchPKfiii' $N/cuda_ops > $T/sass_plain.txt 2>&1; grep -c "HMMA" $T/sass_plain.txt
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
