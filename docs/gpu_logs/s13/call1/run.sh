# session 13, call 1: HEAD (L2 prefetch switch, default off) - correctness (test_gpu.sh steps 1-3,
# memcheck + racecheck of the op test, both with the L2 variants), E4B step A/B of the L2 modes and caps
# (two processes, alternating runs inside each), bench-matvec, and an nsys timeline of the step if nsys exists.
set -u
B=.carry/s13c1; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c1; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 3 $N/cuda_ops ops small > $T/racecheck.log 2>&1 & P2=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 170 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:|variant" $T/test123.txt | head -12
wait $P1; r1=$?; wait $P2; r2=$?; el "memcheck rc $r1, racecheck rc $r2"; tail -n 1 $T/memcheck.log $T/racecheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
C="off:;line:GEMMA_CUDA_MV_L2=line;bulk:GEMMA_CUDA_MV_L2=bulk;bulk8:GEMMA_CUDA_MV_L2=bulk GEMMA_CUDA_MV_L2_MB=8;bulkall:GEMMA_CUDA_MV_L2=bulk GEMMA_CUDA_MV_L2_MB=100000;lineall:GEMMA_CUDA_MV_L2=line GEMMA_CUDA_MV_L2_MB=100000;off2:"
for i in 1 2; do
  DECODE_PROFILE_CUSTOM="$C" timeout 60 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab_$i.txt 2>&1
  el "round $i rc $?: $(grep -h '"run"' $T/ab_$i.txt | sed 's/.*"run": "\([a-z_0-9]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
done
timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"; cut -c1-260 $T/bench_matvec.txt | tail -12
NS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1); el "nsys: ${NS:-none}"
if [ -n "$NS" ]; then
  DECODE_PROFILE_CUSTOM="off:;bulk:GEMMA_CUDA_MV_L2=bulk" timeout 120 $NS profile --trace=cuda --cuda-graph-trace=node -f true -o $T/step $N/cuda_ops decode-profile /tmp/e4b/model 256 8 > $T/nsys.log 2>&1; el "nsys rc $?"
  timeout 90 $NS stats -r cuda_gpu_trace -f csv -o $T/step $T/step.nsys-rep >> $T/nsys.log 2>&1; el "stats rc $?"; rm -f $T/step.sqlite; ls -la $T | grep step
fi
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
