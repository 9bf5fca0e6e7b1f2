# session 31, call 5 (diagnostic): ncu's isolated time and DRAM bytes of each kernel of one E4B
# step, call 4's binary (bcbede1: o by heads, tiles + cp.async.bulk) with clusters of 8 against
# off - is the fused kernel slow alone, or only inside the pipelined step?
B=.carry/s31 CALL=c5; . docs/gpu_logs/common.sh
e4b_model; wait $PM; el "e4b model rc $?"
for m in on off; do
  v=8; [[ $m == off ]] && v=0
  DECODE_PROFILE_CUSTOM="ncu_$m:GEMMA_CUDA_ATTN_O=$v" DECODE_PROFILE_NCU=1 timeout 200 ncu --profile-from-start off \
    --graph-profiling node --cache-control none --clock-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size --csv \
    $N/cuda_ops decode-profile /tmp/e4b/model 256 1 > $T/ncu_$m.csv 2> $T/ncu_$m.err; el "ncu $m rc $?"
  python3 bench/ncu_step_split.py $T/ncu_$m.csv > $T/ncu_split_$m.md 2>&1; head -24 $T/ncu_split_$m.md
done
grep -E '"(attn_o_kernel|attn_cluster_kernel|norm_add_norm_parts_kernel)' $T/ncu_on.csv | head -12 | cut -c1-300
cd $OUT && tar czf c5.tgz c5
