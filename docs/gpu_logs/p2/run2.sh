#!/usr/bin/env bash
# device call 2 (engineer p): correctness of the new matvec variants + their timing
cd .carry/p && tar xzf bins.tgz && cd ../..
export LD_LIBRARY_PATH=$PWD/.carry/p:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
B=.carry/p
nvidia-smi -L
(python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $OUT/make_e4b.log 2>&1; echo "make rc $?" >> $OUT/make_e4b.log) &
MK=$!
t0=$(date +%s)
timeout 110 $B/cuda_ops ops > $OUT/ops.log 2>&1; echo "ops rc $? after $(( $(date +%s) - t0 )) s" | tee -a $OUT/ops.log
grep "matvec variant\|^ops:\|FAIL\|differs\|accepted\|seed" $OUT/ops.log | head -30
wait $MK
tail -2 $OUT/make_e4b.log; echo "make done after $(( $(date +%s) - t0 )) s"
timeout 45 $B/cuda_ops bench-matvec > $OUT/bench_matvec.log 2>&1; echo "bench-matvec rc $?"
cat $OUT/bench_matvec.log
DECODE_PROFILE_RUNS=graphs,graphs_lean,graphs_staged,graphs_staged_u4,graphs_staged4,graphs_staged4_u4,graphs_again \
  timeout 80 $B/cuda_ops decode-profile /tmp/e4b/model 256 128 > $OUT/decode_profile.log 2>&1; echo "dp rc $?"
grep '"run"' $OUT/decode_profile.log
echo "total $(( $(date +%s) - t0 )) s"
