# session 19, call 6: correctness of the final code (call 3's new build): test_gpu.sh steps 1-5
# with the default switches; then ncu on the gate + up pair's tensor-core kernel with x exact,
# two passes over B (a verify over 5 positions) against three (a prefill's launches of 8), on
# the E4B-sized model: why the third pass costs 1.2 ms a verify (not yet understood).
set -u
B=.carry/s19; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & P0=$!
GPU_BIN_DIR=$N KEEP_GOING=1 LOG_DIR=$T/tests timeout 420 scripts/test_gpu.sh > $T/test_all.txt 2>&1; el "steps 1-5 rc $?"
grep -E "FAIL|greedy output|all GPU|^=== " $T/test_all.txt | cut -c1-160 | head -20
wait $P0; el "model rc $?"
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
for k in ILb1ELi2ELi2ELi3E ILb1ELi2ELi3ELi3E; do
  GEMMA_CUDA_MV_MMA=1 DECODE_PROFILE_VERIFY="5" DECODE_PROFILE_CUSTOM="m:GEMMA_CUDA_MV_MMA=1" timeout 150 \
    ncu -k regex:$k -c 1 $S $N/cuda_ops decode-profile /tmp/e4b/model 256 4 > $T/ncu_$k.txt 2>&1; el "ncu $k rc $?"
  grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Block Limit Reg|Warp Cycles Per Issued|Issued Warp Per|No Eligible|Compute \(SM\) Throughput|Grid Size|Shared Memory Config" $T/ncu_$k.txt | head -20
done
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
