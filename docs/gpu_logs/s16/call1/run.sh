# session 16, call 1: the diagnostics session 15 prepared and did not run, plus profiler sections.
#  - bench/step_mega.cu with its traced step (where a dependency's 3.4 us go);
#  - bench/step_shape.cu, with the one-matrix table's new rows (x once, fold + x loads, x in shared);
#  - ncu sections (speed of light, memory, warp states, scheduler, occupancy) on step_shape's
#    one-matrix 105 MB kernel, math / fold / x once;
#  - the same sections on the engine's first decode products of one E4B step (matvec1_kernel).
set -u
B=.carry/s16; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 120 $N/step_mega > $T/step_mega.txt 2>&1; el "step_mega rc $?"; cat $T/step_mega.txt
timeout 120 $N/step_shape > $T/step_shape.txt 2>&1; el "step_shape rc $?"; tail -9 $T/step_shape.txt
SEC="--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats"
i=0
for k in "rows_kernel<true, false, false, false>" "rows_kernel<false, false, false, false>" "rows_kernel<true, false, true, false>"; do
  i=$((i+1))
  STEP_SHAPE_ONE=1 STEP_SHAPE_MB=105 timeout 90 ncu --kernel-name-base demangled -k "regex:$k" --launch-skip 30 --launch-count 1 $SEC $N/step_shape > $T/ncu_one_$i.txt 2>&1
  el "ncu one $i rc $?"
done
grep -E "Duration|DRAM Throughput|L1/TEX Hit|Issue Slots Busy|Achieved Occupancy|Registers Per|Stall|Warp Cycles Per Issued|No Eligible|Mem Busy|Max Bandwidth|L1/TEX Cache Throughput" $T/ncu_one_*.txt | cut -c1-160
wait $MK; el "$(tail -1 $T/make_e4b.log)"
DECODE_PROFILE_CUSTOM="ncu:" DECODE_PROFILE_NCU=1 timeout 200 ncu --profile-from-start off --graph-profiling node --cache-control none --clock-control none -k regex:matvec1 --launch-count 8 $SEC $N/cuda_ops decode-profile /tmp/e4b/model 256 1 > $T/ncu_engine.txt 2>&1
el "ncu engine rc $?"
grep -E "matvec1_kernel|Grid Size|Duration|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|No Eligible|L1/TEX Cache Throughput" $T/ncu_engine.txt | cut -c1-140 | head -100
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
