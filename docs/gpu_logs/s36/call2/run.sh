# session 36, call 2. Binaries: old = main after call 1 (the 256-wide verify attention at two
# blocks a multiprocessor) with the experiment GEMMA_CUDA_ATTN_R512=1|2 (the 512-wide heads' verify
# attention at two blocks a multiprocessor, 2 or 1 positions a batch); new = the same plus the
# general matvec kernel's epilogue by lanes (lane t stores input t; was lane 0 for all).
# (1) op test: new, old under R512=1, old under R512=2; (2) verify passes over 2 / 4 / 8 rows,
# old (default, R512=1, =2) and new, alternating processes; (3) timeline of new's 8-row pass with
# R512=1; (4) Nsight Compute on the per-layer gate and projection of an 8-row pass, old and new.
B=.carry/s36 CALL=c2; . docs/gpu_logs/common.sh
O=$B/old
e4b_model
timeout 250 $N/cuda_ops ops > $T/ops_new.txt 2>&1 & P1=$!
GEMMA_CUDA_ATTN_R512=1 timeout 250 $O/cuda_ops ops > $T/ops_r1.txt 2>&1 & P2=$!
GEMMA_CUDA_ATTN_R512=2 timeout 250 $O/cuda_ops ops > $T/ops_r2.txt 2>&1 & P3=$!
for p in 1 2 3; do eval wait \$P$p; el "ops $p rc $?"; done
for f in new r1 r2; do grep -E "FAIL|differ|all agree|expected" $T/ops_$f.txt | cut -c1-200 | head -6; done
wait $PM; el "e4b model rc $?"
R1=GEMMA_CUDA_ATTN_R512=1 R2=GEMMA_CUDA_ATTN_R512=2
for round in a b; do
    DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="old$round:;r1$round:$R1;r2$round:$R2" \
        timeout 200 $O/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_old_$round.txt 2>&1
    el "verify old $round rc $?"; ms $T/verify_old_$round.txt
    DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="new$round:;nr1$round:$R1" \
        timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify_new_$round.txt 2>&1
    el "verify new $round rc $?"; ms $T/verify_new_$round.txt
done
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8nr1 $R1
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters"
for b in old new; do
    DECODE_PROFILE_VERIFY="8" DECODE_PROFILE_CUSTOM="p:" timeout 150 ncu --kernel-name-base demangled \
        -k "regex:matvec_kernel<__nv_bfloat16, .int.8" -c 2 $S -o $T/gate8_$b $B/$b/cuda_ops decode-profile /tmp/e4b/model 32 2 > $T/ncu_gate8_$b.log 2>&1
    el "ncu gate8 $b rc $?"
    ncu -i $T/gate8_$b.ncu-rep --print-details all > $T/gate8_$b.txt 2>&1
    grep -E "matvec_kernel|Duration|Grid Size|Achieved Occupancy|No Eligible|Warp Cycles Per Issued|Stall (Long|Short|Wait|Barrier|MIO|LG)" $T/gate8_$b.txt | head -30 | cut -c1-150
done
rm -f $T/*.ncu-rep
cd $OUT && tar czf c2.tgz c2
