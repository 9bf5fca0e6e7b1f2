# session 20, call 8: the review fixes (host side only; the sm_90 cubin of attention.cu is byte
# for byte call 5's): the op test (new cases for 128- and 512-wide heads in clusters, and the
# check of which form each case ran in), test_gpu.sh steps 2-3, the small model's step.
set -u
B=.carry/s20; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c8; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|attention \(|all agree|expected" $T/ops.txt | head -8
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="2 3" LOG_DIR=$T/tests23 timeout 100 scripts/test_gpu.sh > $T/test23.txt 2>&1; el "steps 2-3 rc $?"
grep -E "FAIL|greedy output|all GPU" $T/test23.txt | cut -c1-150 | head -6
DECODE_PROFILE_RUNS=graphs timeout 40 $N/cuda_ops decode-profile models/gemma4-tiny 256 256 > $T/tiny.txt 2>&1; el "tiny rc $?"
grep -E '"run"|attention' $T/tiny.txt | cut -c1-120 | tail -2; grep -o "attention [a-z +()]*" $T/tiny.txt | head -1
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
