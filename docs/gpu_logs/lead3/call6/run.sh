# lead call 6: HEAD (new: split warps keep >= 4 passes, so k / v split 2 ways) against 05c7098 (prev), both sm_90-only.
# Correctness of new (test_gpu.sh steps 1-3, memcheck of the op test), E4B step A/B alternating, bench-matvec, engine bench on E4B, copy bandwidth.
set -u
(cd .carry/lead6 && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/.carry/lead6:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
N=.carry/lead6/new; P=.carry/lead6/prev; T=$OUT/lead6; mkdir -p $T
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 2 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make rc $?" >> $T/make_e4b.log) & MK=$!
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 3 --leak-check full $N/cuda_ops ops small > $T/memcheck.log 2>&1 & P1=$!
GPU_BIN_DIR=$N KEEP_GOING=1 GPU_TEST_STEPS="1 2 3" LOG_DIR=$T/tests timeout 150 scripts/test_gpu.sh > $T/test123.txt 2>&1; el "steps 1-3 rc $?"
grep -E "^ops:|FAIL|greedy output|ppl:" $T/test123.txt | head -6
wait $P1; el "memcheck rc $?"; tail -n 1 $T/memcheck.log
wait $MK; el "$(tail -1 $T/make_e4b.log)"
for i in 1 2; do
  for v in prev new; do DECODE_PROFILE_CUSTOM="${v}:" timeout 40 .carry/lead6/$v/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/ab_${v}_$i.txt 2>&1; done
  el "round $i: $(grep -h '"run"' $T/ab_prev_$i.txt $T/ab_new_$i.txt | sed 's/.*"run": "\([a-z_0-9]*\)".*"ms_per_step": \([0-9.]*\).*/\1 \2/' | tr '\n' ' ')"
done
timeout 60 $N/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; el "bench-matvec rc $?"; grep -E "q \+ k|k_proj|per-layer gate" $T/bench_matvec.txt | cut -c1-200
$N/cuda_ops copy-bw > $T/copy_bw.txt 2>&1; tail -1 $T/copy_bw.txt
ENGINE_DEVICE=cuda WARMUP_NUM_PROMPTS=1 MAX_NEW_TOKENS=512 timeout 90 $N/engine bench /tmp/e4b/model --prompts /tmp/e4b/prompts.jsonl > $T/e4b_bench.out 2> $T/e4b_bench.err; el "engine bench rc $?"; tail -1 $T/e4b_bench.out | cut -c1-400
cd $OUT && tar czf lead6.tgz lead6 && rm -rf lead6
