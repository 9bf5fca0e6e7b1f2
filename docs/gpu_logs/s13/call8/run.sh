# session 13, call 8: why a verify pass over 4 rows costs 2.2 decode steps on E4B - ncu on the general (n > 1) matvec
# kernel at n = 4 inside verify passes (SpeedOfLight, Occupancy, WarpStateStats, LaunchStats, MemoryWorkloadAnalysis),
# and, for comparison, the lean decode kernel in the decode steps before them.
set -u
B=.carry/s13c7; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
T=$OUT/c8; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; el "make rc $?"
S="--section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section MemoryWorkloadAnalysis"
DECODE_PROFILE_CUSTOM="new:" DECODE_PROFILE_VERIFY="4" timeout 200 ncu --kernel-name-base demangled --kernel-name regex:"matvec_kernel<__nv_bfloat16, 4," --launch-skip 40 --launch-count 4 --cache-control none --clock-control none $S $B/new/cuda_ops decode-profile /tmp/e4b/model 256 16 > $T/ncu_general_n4.txt 2>&1; el "ncu general rc $?"
DECODE_PROFILE_CUSTOM="new:" timeout 200 ncu --kernel-name-base demangled --kernel-name regex:"matvec1_kernel" --launch-skip 400 --launch-count 4 --cache-control none --clock-control none $S $B/new/cuda_ops decode-profile /tmp/e4b/model 256 16 > $T/ncu_lean_n1.txt 2>&1; el "ncu lean rc $?"
for f in general_n4 lean_n1; do echo "== $f"; grep -E "matvec|Duration|Memory Throughput|DRAM Throughput|L1/TEX Hit|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit Reg|Grid Size|Warp Cycles Per Issued|Stall|One or More Eligible|Issued Warp" $T/ncu_$f.txt | cut -c1-150 | head -60; done
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
