# session 36, call 3: main after call 2 (both verify attention kernels at two blocks a
# multiprocessor, the general kernel's epilogue by lanes). Where a verify pass's time goes now:
# timelines of the passes over 2, 4 and 8 rows; then Nsight Compute, instruction by instruction
# (the source page's SASS with its stall samples), on the whole-MLP kernel over 8 and over 4
# inputs, the biggest part of every verify pass.
B=.carry/s36 CALL=c3; . docs/gpu_logs/common.sh
e4b_model
wait $PM; el "e4b model rc $?"
for r in 2 4 8; do DECODE_PROFILE_VERIFY=$r DECODE_PROFILE_TRACE_ROWS=$r traced v$r; done
for nt in 8 4; do
    DECODE_PROFILE_VERIFY="$nt" DECODE_PROFILE_CUSTOM="p:" timeout 150 ncu --kernel-name-base demangled \
        -k "regex:mlp_kernel<$nt," -c 1 --set full --import-source no -o $T/mlp$nt $N/cuda_ops decode-profile \
        /tmp/e4b/model 32 2 > $T/ncu_mlp$nt.log 2>&1
    el "ncu mlp$nt rc $?"
    ncu -i $T/mlp$nt.ncu-rep --print-details all > $T/mlp$nt.txt 2>&1
    ncu -i $T/mlp$nt.ncu-rep --page source --csv --print-source sass > $T/mlp${nt}_sass.csv 2> $T/mlp${nt}_sass.err
    el "sass $nt rc $? $(wc -l < $T/mlp${nt}_sass.csv) lines"
    grep -E "mlp_kernel|Duration|Registers Per|Achieved Occupancy|No Eligible|Issued Ipc|Warp Cycles Per Issued|Stall (Long|Short|Wait|Barrier|MIO|LG|Math|Not Sel|Branch|Dispatch)" $T/mlp$nt.txt | head -24 | cut -c1-150
    gzip -f $T/mlp${nt}_sass.csv
done
rm -f $T/*.ncu-rep
cd $OUT && tar czf c3.tgz c3
