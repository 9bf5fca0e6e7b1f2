# lead call 2 (L2 prefetch branch, worktree pf): ask-at-end vs at-start, small lookaheads, the fork alone; then ncu per-kernel times of one E4B graph step
set -u
(cd .carry/pf && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/.carry/pf:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
B=.carry/pf; T=$OUT/pf2; mkdir -p $T
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make_e4b rc $?"
R="off:GEMMA_CUDA_L2_AHEAD=0;end4:GEMMA_CUDA_L2_AHEAD=4;end8:GEMMA_CUDA_L2_AHEAD=8;end16:GEMMA_CUDA_L2_AHEAD=16;end8_none:GEMMA_CUDA_L2_AHEAD=8 GEMMA_CUDA_L2_MODE=none"
R="$R;off2:GEMMA_CUDA_L2_AHEAD=0;end8_bulk:GEMMA_CUDA_L2_AHEAD=8 GEMMA_CUDA_L2_MODE=bulk;start8:GEMMA_CUDA_L2_AHEAD=8 GEMMA_CUDA_L2_AT=start;start8_none:GEMMA_CUDA_L2_AHEAD=8 GEMMA_CUDA_L2_AT=start GEMMA_CUDA_L2_MODE=none;off3:GEMMA_CUDA_L2_AHEAD=0"
DECODE_PROFILE_CUSTOM="$R" timeout 200 $B/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_l2.txt 2>&1; echo "decode-profile rc $?"
grep -o '"run": "[^"]*", "steps": [0-9]*, "ms_per_step": [0-9.]*' $T/e4b_l2.txt
which ncu; date
DECODE_PROFILE_CUSTOM="off:GEMMA_CUDA_L2_AHEAD=0" timeout 240 ncu --graph-profiling node --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread --csv --launch-skip 3000 --launch-count 1300 $B/cuda_ops decode-profile /tmp/e4b/model 8 2 > $T/ncu_step.csv 2> $T/ncu_step.err; echo "ncu rc $?"; date
wc -l $T/ncu_step.csv; tail -3 $T/ncu_step.err
cd $OUT && tar czf pf2.tgz pf2 && rm -rf pf2
