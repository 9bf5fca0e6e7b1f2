# session 32, call 7: bench/read_rate.cu again, with each block's end stamped for one MLP
# layer's bytes a launch (the spread of a static split: the tail a kernel pays at its end).
set -u
B=.carry/s32b; (cd $B && tar xf bins.tgz)
mkdir -p $OUT/c7
timeout 120 $B/read_rate > $OUT/c7/read_rate.txt 2>&1; echo "read_rate rc $?"; cat $OUT/c7/read_rate.txt
