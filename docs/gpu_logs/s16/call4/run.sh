# session 16, call 4: bench-matvec back to back and with a small kernel after every product
# (BENCH_MATVEC_SMALL=1, as in a decode step); an nsys timeline of E4B decode steps if nsys exists.
set -u
B=.carry/s16; (cd $B && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/$B:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=$B/new; T=$OUT/c4; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
[[ -n "$NSYS" ]] && (python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"; grep '^|' $T/bench_matvec.txt | cut -c1-250
BENCH_MATVEC_SMALL=1 timeout 90 $N/cuda_ops bench-matvec > $T/bench_matvec_small.txt 2>&1; el "bench-matvec small rc $?"; grep '^|' $T/bench_matvec_small.txt | cut -c1-250
if [[ -n "$NSYS" ]]; then
  wait $MK; el "$(tail -1 $T/make_e4b.log)"
  DECODE_PROFILE_CUSTOM="n:" timeout 150 $NSYS profile --cuda-graph-trace=node -t cuda -o $T/step $N/cuda_ops decode-profile /tmp/e4b/model 256 16 > $T/nsys.log 2>&1; el "nsys rc $?"
  timeout 100 $NSYS stats --report cuda_gpu_trace --format csv -o $T/trace $T/step.nsys-rep > $T/stats.log 2>&1; el "stats rc $?"
  ls -la $T; rm -f $T/step.sqlite
  gzip $T/trace*.csv 2>/dev/null
fi
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
