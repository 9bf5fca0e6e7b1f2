# session 22, call 8: the op test after its fix (call 7 failed on the tensor-core variants'
# non-bf16 products, which the check wrongly compared grouped against lone).
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c8; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|variant|all agree" $T/ops.txt | cut -c1-200 | head -24
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
