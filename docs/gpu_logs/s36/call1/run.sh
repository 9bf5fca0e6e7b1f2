# session 36, call 1: the verify timing as corrected after session 35 (verify_profile waits for
# the warm-up passes). (1) the op test under GEMMA_CUDA_ATTN_VERIFY=1 and =2 (the verify-only
# attention at two blocks a multiprocessor, 2 or 1 positions a batch: session 35's 523c93e);
# (2) verify passes over 2 / 4 / 8 rows, default against =1 and =2, alternating; (3) timelines of
# the 8-row pass, default and the better variant; (4) Nsight Compute on the per-layer gate and
# projection of an 8-row pass (matvec_kernel, NT = 8: 11.5 and 6.0 us a layer against 1.9 and
# 1.3 at one row, session 35 call 2).
B=.carry/s36 CALL=c1; . docs/gpu_logs/common.sh
e4b_model
GEMMA_CUDA_ATTN_VERIFY=1 timeout 250 $N/cuda_ops ops > $T/ops_a1.txt 2>&1 & P1=$!
GEMMA_CUDA_ATTN_VERIFY=2 timeout 250 $N/cuda_ops ops > $T/ops_a2.txt 2>&1 & P2=$!
wait $P1; el "ops a1 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_a1.txt | cut -c1-200 | head -6
wait $P2; el "ops a2 rc $?"; grep -E "FAIL|differ|all agree|expected" $T/ops_a2.txt | cut -c1-200 | head -6
wait $PM; el "e4b model rc $?"
A1=GEMMA_CUDA_ATTN_VERIFY=1 A2=GEMMA_CUDA_ATTN_VERIFY=2
DECODE_PROFILE_VERIFY="2 4 8" DECODE_PROFILE_CUSTOM="d:;a1:$A1;a2:$A2;db:;a1b:$A1;a2b:$A2" \
    timeout 300 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/verify.txt 2>&1
el "verify rc $?"; ms $T/verify.txt
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8d
DECODE_PROFILE_VERIFY=8 DECODE_PROFILE_TRACE_ROWS=8 traced v8a1 $A1
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis --section SourceCounters"
DECODE_PROFILE_VERIFY="8" DECODE_PROFILE_CUSTOM="p:" timeout 200 ncu --kernel-name-base demangled \
    -k "regex:matvec_kernel<__nv_bfloat16, 8" -c 4 $S -o $T/gate8 $N/cuda_ops decode-profile /tmp/e4b/model 32 2 > $T/ncu_gate8.log 2>&1
el "ncu gate8 rc $?"
ncu -i $T/gate8.ncu-rep --print-details all > $T/gate8.txt 2>&1
grep -E "matvec_kernel|Duration|Registers Per|Grid Size|Achieved Occupancy|No Eligible|Warp Cycles Per Issued|DRAM Throughput|L1/TEX Hit|Stall (Long|Short|Wait|Barrier|MIO|LG)" $T/gate8.txt | head -60 | cut -c1-150
rm -f $T/*.ncu-rep
cd $OUT && tar czf c1.tgz c1
