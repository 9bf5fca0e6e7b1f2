# session 19, call 7: the op test with the fused-MLP check widened (every row t of n = 1..6, 9
# against the same ops on x[t] alone: up, the GeLU pair and the GeLU times a vector, bit for
# bit), with every variant incl. the tensor cores; memcheck of the small op test; then call 6's
# ncu of the two- and three-pass tensor-core kernels, with the kernel matched by mangled name.
set -u
B=.carry/s19; (cd $B && tar xf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c7; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1 & P0=$!
timeout 200 $N/cuda_ops ops > $T/ops.txt 2>&1; el "ops rc $?"
grep -E "FAIL|differs|variant|all agree" $T/ops.txt | head -16
wait $P0; el "model rc $?"
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats"
for k in ILb1ELi2ELi2ELi3E ILb1ELi2ELi3ELi3E; do
  DECODE_PROFILE_VERIFY="5" DECODE_PROFILE_CUSTOM="m:GEMMA_CUDA_MV_MMA=1" timeout 100 \
    ncu --kernel-name-base mangled -k regex:$k -c 1 $S $N/cuda_ops decode-profile /tmp/e4b/model 256 4 > $T/ncu_$k.txt 2>&1; el "ncu $k rc $?"
  grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|Block Limit|Warp Cycles Per Issued|Issued Warp Per|No Eligible|Compute \(SM\) Throughput|Grid Size|Waves Per SM" $T/ncu_$k.txt | head -20
done
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
