# session 21, call 7: the attention's form as an argument (host only; the sm_90 cubin of
# attention.cu is d549f98's): the op test (both forms, the form each case ran in) and
# test_gpu.sh steps 2, 3 and 5 with the defaults.
set -u
B=.carry/s21; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c7; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|clusters|agree" $T/ops.txt | head -20
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3 5" LOG_DIR=$T/tests timeout 120 scripts/test_gpu.sh > $T/test235.txt 2>&1; el "steps 2 3 5 rc $?"
grep -E "FAIL|greedy output|all GPU|^=== |identical;" $T/test235.txt | cut -c1-160 | head -20
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
