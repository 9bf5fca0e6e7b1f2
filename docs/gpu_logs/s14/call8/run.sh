# session 14, call 8: cuda_ops bench-matvec with the stream kernel and the slices split rule,
# shape by shape (back-to-back launches in a CUDA graph), to see where stream loses.
set -u
B=.carry/s14; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c8; mkdir -p $T
timeout 300 $B/new/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; echo "rc $?"; cat $T/bench_matvec.txt
