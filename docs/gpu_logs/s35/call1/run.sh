# session 35, call 1: the verify pass's products and attention. Experiment binary (see git log):
# matvec_rows_kernel's sums transposed (default; GEMMA_CUDA_MV_ROWS_T=0 the old epilogue) and a
# verify-only attention kernel at two blocks a multiprocessor (GEMMA_CUDA_ATTN_VERIFY=1|2).
# Untimed first: the op test under ATTN_VERIFY=1 and =2 (every row of a chunk equal to the row
# alone, bit for bit; the rows kernel's variants included). Then verify passes over 2 / 4 / 8
# rows alternating (also the per-layer products through the rows kernel: ROWS_MIN=1024, and 4
# rows a warp), decode steps against db9ab48's binary (old), a timeline of the 8-row pass, and
# Nsight Compute on the rows kernel's first two launches of an 8-row pass (q + k + v, o).
B=.carry/s35 CALL=c1; . docs/gpu_logs/common.sh
e4b_model
GEMMA_CUDA_ATTN_VERIFY=1 timeout 250 $N/cuda_ops ops > $T/ops_av1.txt 2>&1 & P1=$!
GEMMA_CUDA_ATTN_VERIFY=2 timeout 250 $N/cuda_ops ops > $T/ops_av2.txt 2>&1 & P2=$!
wait $P1; el "ops av1 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_av1.txt | cut -c1-200 | head -6
wait $P2; el "ops av2 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_av2.txt | cut -c1-200 | head -6
wait $PM; el "e4b model rc $?"
A1=GEMMA_CUDA_ATTN_VERIFY=1 A2=GEMMA_CUDA_ATTN_VERIFY=2 RM=GEMMA_CUDA_MV_ROWS_MIN=1024 R4=GEMMA_CUDA_MV_ROWS=4
O=GEMMA_CUDA_MV_ROWS_T=0
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="base:$O;tr:;av1:$A1;av2:$A2;rm:$A1 $RM;r4:$A1 $R4;baseb:$O;trb:;av1b:$A1;av2b:$A2;rmb:$A1 $RM;r4b:$A1 $R4" \
    timeout 300 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
baseline old
DECODE_PROFILE_CUSTOM="new:;newb:" timeout 120 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/decode.txt 2>&1
el "decode rc $?"; ms $T/decode.txt
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8 $A1 $RM
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis"
DECODE_PROFILE_VERIFY="8" DECODE_PROFILE_CUSTOM="p:" timeout 200 ncu --kernel-name-base demangled \
    -k "regex:matvec_rows_kernel" -c 2 $S -o $T/rows8 $N/cuda_ops decode-profile /tmp/e4b/model 32 2 > $T/ncu_rows8.log 2>&1
el "ncu rows8 rc $?"
ncu -i $T/rows8.ncu-rep --print-details all > $T/rows8.txt 2>&1
grep -E "matvec_rows|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Executed Ipc A|Memory Throughput|DRAM Throughput|L1/TEX Hit|Stall (Long|Short|Wait|Barrier|MIO|LG|Not Sel)" $T/rows8.txt | head -40 | cut -c1-150
cd $OUT && tar czf c1.tgz c1
