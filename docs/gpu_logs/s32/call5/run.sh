# session 32, call 5: bench/read_rate.cu - how fast plain 16-byte loads and mlp.cu's copy-engine
# ring read 6.6 GB, against the copy bandwidth (the floor's measure) - and bench/mlp_slice.cu's
# MLP kernel alone beside it. Built with nvcc -O3 -arch=sm_90 -std=c++17 here.
set -u
B=.carry/s32b; (cd $B && tar xf bins.tgz)
mkdir -p $OUT/c5
timeout 120 $B/read_rate > $OUT/c5/read_rate.txt 2>&1; echo "read_rate rc $?"; cat $OUT/c5/read_rate.txt
timeout 120 $B/mlp_slice > $OUT/c5/mlp_slice.txt 2>&1; echo "mlp_slice rc $?"; head -30 $OUT/c5/mlp_slice.txt
