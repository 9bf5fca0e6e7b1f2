# session 32, call 10: bench/read_rate.cu and bench/mlp_slice.cu after their copy-bandwidth
# measurement became one helper (step_common.cuh copy_gbs_measure) and read_rate's timing
# time_reps - the same forms, run once more to check that they still run and agree.
set -u
B=.carry/s32c; (cd $B && tar xf bins.tgz)
mkdir -p $OUT/c10
timeout 120 $B/read_rate > $OUT/c10/read_rate.txt 2>&1; echo "read_rate rc $?"; cat $OUT/c10/read_rate.txt
timeout 120 $B/mlp_slice > $OUT/c10/mlp_slice.txt 2>&1; echo "mlp_slice rc $?"; head -4 $OUT/c10/mlp_slice.txt; grep MODE $OUT/c10/mlp_slice.txt | grep alone
