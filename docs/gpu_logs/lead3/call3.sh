# lead call 3 (worktree pf): matvec split target (GEMMA_CUDA_MV_SPLIT) per shape and on the E4B step; ncu per-kernel times of one E4B graph step, warm caches, clocks left alone
set -u
(cd .carry/pf && tar xzf bins.tgz)
export LD_LIBRARY_PATH=$PWD/.carry/pf:/usr/local/cuda-13.0/targets/x86_64-linux/lib OMP_NUM_THREADS=16
B=.carry/pf; T=$OUT/pf3; mkdir -p $T
python3 tools/make_e4b_random.py /tmp/e4b --prompts 1 --prompt-len 256 --hf-new-tokens 2 > $T/make_e4b.log 2>&1; echo "make_e4b rc $?"
timeout 120 $B/cuda_ops bench-matvec > $T/bench_matvec.txt 2>&1; echo "bench-matvec rc $?"; cut -c1-300 $T/bench_matvec.txt | tail -13
R="def:GEMMA_CUDA_L2_AHEAD=0;split4:GEMMA_CUDA_MV_SPLIT=4;split2:GEMMA_CUDA_MV_SPLIT=2;split1:GEMMA_CUDA_MV_SPLIT=1;def2:GEMMA_CUDA_L2_AHEAD=0;split2b:GEMMA_CUDA_MV_SPLIT=2;split4b:GEMMA_CUDA_MV_SPLIT=4"
DECODE_PROFILE_CUSTOM="$R" timeout 150 $B/cuda_ops decode-profile /tmp/e4b/model 256 128 > $T/e4b_split.txt 2>&1; echo "decode-profile rc $?"
grep -o '"run": "[^"]*", "steps": [0-9]*, "ms_per_step": [0-9.]*' $T/e4b_split.txt
DECODE_PROFILE_CUSTOM="def:GEMMA_CUDA_L2_AHEAD=0" timeout 200 ncu --graph-profiling node --cache-control none --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread --csv --launch-skip 6600 --launch-count 700 $B/cuda_ops decode-profile /tmp/e4b/model 256 2 > $T/ncu_step_warm.csv 2> $T/ncu_step_warm.err; echo "ncu rc $?"
wc -l $T/ncu_step_warm.csv; tail -2 $T/ncu_step_warm.err
cd $OUT && tar czf pf3.tgz pf3 && rm -rf pf3
