# session 32, call 6: where the MLP kernel's 3.4 us a layer over a read-only ring go (call 5:
# the ring alone reads 4650 GB/s, an MLP layer in 33.8 us; mlp_slice's kernel 37.2 us).
# bench/mlp_slice.cu with two diagnostic forms of the same kernel in the same chain of 42
# layers: MODE 1 takes the rows and folds them, no arithmetic; MODE 2 does the products but
# not the block's sums and its two barriers a batch (wrong results, labelled).
set -u
B=.carry/s32b; (cd $B && tar xf bins.tgz)
mkdir -p $OUT/c6
timeout 120 $B/mlp_slice > $OUT/c6/mlp_slice.txt 2>&1; echo "mlp_slice rc $?"; head -30 $OUT/c6/mlp_slice.txt
