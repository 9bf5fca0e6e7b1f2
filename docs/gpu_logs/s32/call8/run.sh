# session 32, call 8: bench/mlp_slice.cu with the ring's stages freed a row late (MODE 3: the
# full kernel, same sums; MODE 4: rows only), by a relaxed arrival that depends on the row
# already used - today's release arrival right after the read puts the read's latency on every
# row of every consumer warp.
set -u
B=.carry/s32b; (cd $B && tar xf bins.tgz)
mkdir -p $OUT/c8
timeout 120 $B/mlp_slice > $OUT/c8/mlp_slice.txt 2>&1; echo "mlp_slice rc $?"; grep -v "^B=8\|^B=4" $OUT/c8/mlp_slice.txt | head -30
