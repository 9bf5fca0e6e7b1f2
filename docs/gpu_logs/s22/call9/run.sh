# session 22, call 9: the op test with the review's new check (mv_group_reproduce: q, k and v
# grouped over n inputs against the same group over each input alone).
set -u
B=.carry/s22; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c9; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
timeout 150 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"; grep -E "FAIL|differs|q / k / v|all agree" $T/ops.txt | cut -c1-200 | head -12
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
