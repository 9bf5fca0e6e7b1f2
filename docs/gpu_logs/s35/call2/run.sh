# session 35, call 2: the rows kernel's loads (experiment GEMMA_CUDA_MV_ROWS_V=1|2: the first
# chunk's weights before the wait; a chunk's x for all / half of the inputs asked for at once;
# the next chunk's weights before the current one's products). Untimed first: the op test under
# V=1 and V=2 (every row of an n-row launch equal to the row alone, bit for bit). Then verify
# passes over 2 / 4 / 8 rows alternating, also with the per-layer products through the rows
# kernel (ROWS_MIN=1024); timelines of the 8-row pass under the default and V=2; Nsight Compute
# on V=2's first two rows-kernel launches of an 8-row pass.
B=.carry/s35 CALL=c2; . docs/gpu_logs/common.sh
e4b_model
GEMMA_CUDA_MV_ROWS_V=1 timeout 250 $N/cuda_ops ops > $T/ops_v1.txt 2>&1 & P1=$!
GEMMA_CUDA_MV_ROWS_V=2 timeout 250 $N/cuda_ops ops > $T/ops_v2.txt 2>&1 & P2=$!
wait $P1; el "ops v1 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_v1.txt | cut -c1-200 | head -6
wait $P2; el "ops v2 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_v2.txt | cut -c1-200 | head -6
wait $PM; el "e4b model rc $?"
V1=GEMMA_CUDA_MV_ROWS_V=1 V2=GEMMA_CUDA_MV_ROWS_V=2 RM=GEMMA_CUDA_MV_ROWS_MIN=1024
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="tr:;v1:$V1;v2:$V2;v1rm:$V1 $RM;v2rm:$V2 $RM;trb:;v1b:$V1;v2b:$V2;v1rmb:$V1 $RM;v2rmb:$V2 $RM" \
    timeout 300 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8base
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8v2 $V2
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis"
GEMMA_CUDA_MV_ROWS_V=2 DECODE_PROFILE_VERIFY="8" DECODE_PROFILE_CUSTOM="p:" timeout 200 ncu --kernel-name-base demangled \
    -k "regex:matvec_rows_kernel" -c 2 $S -o $T/rows8v2 $N/cuda_ops decode-profile /tmp/e4b/model 32 2 > $T/ncu_rows8v2.log 2>&1
el "ncu rows8v2 rc $?"
ncu -i $T/rows8v2.ncu-rep --print-details all > $T/rows8v2.txt 2>&1
grep -E "matvec_rows|Duration|Registers Per|Achieved Occupancy|No Eligible|Warp Cycles Per Issued|DRAM Throughput|L1/TEX Hit|Stall (Long|Short|Wait|Barrier)" $T/rows8v2.txt | head -30 | cut -c1-150
rm -f $T/*.ncu-rep
cd $OUT && tar czf c2.tgz c2
