# session 27, call 3: why the norm folded into the MLP kernel is slower (call 2: 3.30 against
# 3.09 ms). E4B alternating: the fold, no fold, and the fold with its producer waiting for the
# previous kernel (GEMMA_CUDA_MLP_NORM=2, an experiment: no ring fill under the o product);
# then ncu, one replayed step, each kernel isolated, with and without the fold.
B=.carry/s27 CALL=c3; . docs/gpu_logs/common.sh
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make.log 2>&1; el "e4b model rc $?"
C="fold:GEMMA_CUDA_MLP_NORM=1;nofold:GEMMA_CUDA_MLP_NORM=0;late:GEMMA_CUDA_MLP_NORM=2;fold2:GEMMA_CUDA_MLP_NORM=1;nofold2:GEMMA_CUDA_MLP_NORM=0;late2:GEMMA_CUDA_MLP_NORM=2"
DECODE_PROFILE_CUSTOM="$C" timeout 200 $N/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b.txt 2>&1; el "e4b rc $?"; ms $T/e4b.txt
for v in 1 0; do
  GEMMA_CUDA_MLP_NORM=$v DECODE_PROFILE_CUSTOM="ncu:" DECODE_PROFILE_NCU=1 timeout 150 ncu --profile-from-start off --graph-profiling node --cache-control none --clock-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv $N/cuda_ops decode-profile /tmp/e4b/model 256 1 > $T/ncu_norm$v.csv 2> $T/ncu_norm$v.err; el "ncu norm=$v rc $?"
  python3 $B/ncu_step_split.py $T/ncu_norm$v.csv > $T/ncu_norm$v.md 2>&1; head -14 $T/ncu_norm$v.md
done
cd $OUT && tar czf c3.tgz c3
