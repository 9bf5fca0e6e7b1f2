# Session 29 call 1: session 28's prepared bench/mlp_slice.cu rows (the reduction after the MLP
# with fewer kernels: pairs through DSMEM, a reduce-norm cluster, both), twice for the noise.
set -u
T=$OUT/c1; mkdir -p "$T"
B=.carry/s29
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv > "$T/gpu.txt" 2>&1
for i in 1 2; do
    echo "== run $i"; $B/mlp_slice; echo "exit $?"
done > "$T/mlp_slice.log" 2>&1
cd $OUT && tar czf c1.tgz c1
